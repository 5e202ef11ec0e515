"""`python -m qagen` is the `qagen` command."""

from qagen.cli import main

main()
