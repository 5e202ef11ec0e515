"""`python -m qagen` is the `qagen` command."""

from qagen.cli.app import run

run()
