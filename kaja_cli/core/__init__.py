"""The storage core: the databases kaja knows (`registry`), where they are
(`paths`, `settings`), how they open (`db`, `fs`), what kaja may change in
them (`guard`), what they hold (`schema`) and how a stored value is taken
(`values`), the write API (`record`), queries, and the plans of `doctor/`
and `wipe/`.

Everything here returns plain data (dataclasses) and raises `kaja_cli.errors`
errors. It imports neither typer nor rich, nor anything of kaja above it
(commands, render, demo: tests/unit/test_layering.py), so it reads the same whether
it is driven by the command line, the agent or a test.
"""
