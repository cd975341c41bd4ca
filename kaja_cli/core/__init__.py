"""The storage core: paths, settings, files, schema, queries and plans.

Everything here returns plain data (dataclasses) and raises `kaja_cli.errors`
errors. It imports neither typer nor rich, so it reads the same whether it is
driven by the command line, the agent or a test.
"""
