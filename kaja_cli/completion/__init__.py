"""Shell completion: what TAB offers after `kaja`, answered fast.

Every TAB press runs kaja. Typer could answer, but importing it costs about
as much as the rest of a command; so the shell's request (`_KAJA_COMPLETE=
complete_bash|zsh|fish`) is intercepted at the top of `kaja_cli.app`, before
Typer is imported, and answered here:

- `table`: the commands, options and arguments of kaja's Typer app, and the
  fixed value lists (check ids, roles, formats), generated from the app by
  `completions/generate.py` (committed; a test fails when it is stale);
- `fast`: Click's completion rules over that table (which command and which
  parameter the word belongs to, options already given, `--opt=value`,
  `--`), and the shells' output formats;
- `values`: the values themselves: session ids (with title and age in zsh
  and fish), owners, settings keys and values, from the core, read-only and
  never waiting on a lock (`core.choices`); the table's fixed lists;
- `hooks`: the same values for Typer (`autocompletion=` on the options), so
  Typer's own completion answers exactly what the fast path does
  (tests/cli/test_completion.py compares the two for every command, option and
  value kind);
- `shells`: when Typer answers, kaja's Click completion classes (printing as
  the fast path does: values and descriptions quoted so that no shell
  evaluates them), kaja's bash script (which joins the words bash breaks
  at `:` and `=`) and its zsh script (which registers itself however it is
  loaded, and never runs compinit a second time);
- `install`: `--install-completion` for bash, zsh and fish: the script, and
  in the start-up file only the lines that load it, once.

Only the answer is fast-pathed: `source_*` (printing the scripts),
`--show-completion` and shells other than bash, zsh and fish go to Typer
(through `shells`).
"""
