"""`python -m kaja_cli` runs the same program as the `kaja` command."""

from kaja_cli.app import main

main()
