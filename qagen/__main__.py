"""`python -m qagen` is the `qagen` command."""

from qagen.cli import run

run()
