"""The answer to a TAB press, without importing Typer or Rich.

`kaja_cli.app` calls `run()` before anything else when `_KAJA_COMPLETE` is
set. For `complete_bash`, `complete_zsh` and `complete_fish` this module
does what Typer's completion would, over the generated `table`:

1. the words typed so far, as each shell's script passes them;
2. which command they reach and what each command's options and arguments
   took, by Click's parsing rules in resilient mode (`_parse`): options
   before a group's subcommand, `--opt=value`, `-n5`, clustered short flags,
   `--`, unknown options, an error that stops the parse;
3. what the word being typed is (Click's `_resolve_incomplete`): an option
   name, the value of the option just before it, the next argument, or a
   subcommand;
4. the candidates, printed in the shell's format (Typer's, minus its
   wrapping of long descriptions at 80 columns, which splits a description
   into a bogus fish candidate).

Anything else (printing the scripts, other shells, a request this cannot
read) returns None and Typer answers as before.
"""

from __future__ import annotations

import os
import re
import sys
from collections import deque
from collections.abc import Mapping

# Not `typing` (~3 ms to import, on every TAB press): annotations stay strings.
SHELLS = ("bash", "zsh", "fish")
Item = tuple[str, "str | None"]
Any = object


def run(environ: Mapping[str, str] | None = None) -> None:
    """Answer and exit, or return (nothing printed) for Typer to answer."""
    env = os.environ if environ is None else environ
    try:
        answer = respond(env)
    except Exception:
        if env.get("KAJA_DEBUG"):
            raise
        return  # Typer answers (or says what is wrong)
    if answer is None:
        return
    text, code = answer
    sys.stdout.write(text)
    sys.stdout.flush()
    sys.exit(code)


def respond(env: Mapping[str, str]) -> tuple[str, int] | None:
    """(what to print, exit status) for a completion request; None if not one of ours."""
    verb, _, shell = env.get("_KAJA_COMPLETE", "").partition("_")
    if verb != "complete" or shell not in SHELLS:
        return None
    args, incomplete = words(shell, env)
    items = complete(args, incomplete, described=shell != "bash")
    return render(shell, items, env)


# --- 1. the words -----------------------------------------------------------------------------
def split(text: str) -> list[str]:
    """Words as a POSIX shell splits them, an unfinished quote kept (Click's split_arg_string)."""
    import shlex

    lex = shlex.shlex(text, posix=True)
    lex.whitespace_split = True
    lex.commenters = ""
    out = []
    try:
        out.extend(lex)
    except ValueError:
        out.append(lex.token)
    return out


def words(shell: str, env: Mapping[str, str]) -> tuple[list[str], str]:
    """(the words before the one being completed, that one) as Typer reads them."""
    if shell == "bash":
        cwords = split(env["COMP_WORDS"])
        cword = int(env["COMP_CWORD"])
        return cwords[1:cword], cwords[cword] if cword < len(cwords) else ""
    line = env.get("_TYPER_COMPLETE_ARGS", "")
    args = split(line)[1:]
    if args and not line.endswith(" "):
        return args[:-1], args[-1]
    return args, ""


# --- 2. parsing ---------------------------------------------------------------------------------
class _Stop(Exception):
    """A usage error: in resilient mode Click stops parsing this command there."""


class Level:
    """One command reached by the words: what its parameters took."""

    def __init__(self, path: str, spec: dict) -> None:
        self.path, self.spec = path, spec
        self.values: dict[str, Any] = {}  # parameter name → value as parsed (strings)
        self.rest: list[str] = []  # what is left for a subcommand

    @property
    def given(self) -> set[str]:
        return {name for name, value in self.values.items() if value is not None}


def resolve(args: list[str]) -> list[Level]:
    """The commands the words reach, root first (Click's `_resolve_context`)."""
    from kaja_cli.completion.table import COMMANDS

    level = _parse("", COMMANDS[""], list(args))
    chain = [level]
    rest = level.rest
    while rest and level.spec["group"]:
        names = {c[0] for c in level.spec["commands"]}
        if rest[0] not in names:
            break
        path = f"{level.path} {rest[0]}".strip()
        level = _parse(path, COMMANDS[path], rest[1:])
        chain.append(level)
        rest = level.rest
    return chain


def _parse(path: str, spec: dict, args: list[str]) -> Level:
    level = Level(path, spec)
    state = _State(spec, args)
    try:
        state.options()
        state.arguments()
    except _Stop:
        pass  # resilient: what was parsed stands, the rest is dropped
    level.values = state.values
    level.rest = state.largs
    return level


class _State:
    """Click's option parser (`_OptionParser`) for one command."""

    def __init__(self, spec: dict, args: list[str]) -> None:
        self.interspersed = spec["interspersed"]
        self.ignore_unknown = spec["ignore_unknown"]
        self.long: dict[str, tuple] = {}
        self.short: dict[str, tuple] = {}
        self.arguments_spec = []
        for p in spec["params"]:
            if p[0] == "option":
                for opt, const in [(o, True) for o in p[2]] + [(o, False) for o in p[3]]:
                    prefix, name = _split_opt(opt)
                    target = self.short if len(prefix) == 1 and len(name) == 1 else self.long
                    target[opt] = (p, const)
            else:
                self.arguments_spec.append(p)
        self.values: dict[str, Any] = {}
        self.largs: list[str] = []
        self.rargs = list(args)

    def options(self) -> None:
        while self.rargs:
            arg = self.rargs.pop(0)
            if arg == "--":
                return
            if arg[:1] == "-" and len(arg) > 1:
                self._opts(arg)
            elif self.interspersed:
                self.largs.append(arg)
            else:
                self.rargs.insert(0, arg)
                return

    def _opts(self, arg: str) -> None:
        explicit = None
        if "=" in arg:
            long_opt, explicit = arg.split("=", 1)
        else:
            long_opt = arg
        if long_opt in self.long:
            self._long(long_opt, explicit)
        elif arg[:2] not in ("-", "--"):
            self._short(arg)
        elif not self.ignore_unknown:
            raise _Stop
        else:
            self.largs.append(arg)

    def _long(self, opt: str, explicit: str | None) -> None:
        param, const = self.long[opt]
        if param[6]:  # takes a value
            if explicit is not None:
                self.rargs.insert(0, explicit)
            self._store(param, self._value(param))
        elif explicit is not None:
            raise _Stop  # a flag given a value
        else:
            self._store(param, const)

    def _short(self, arg: str) -> None:
        prefix, unknown = arg[0], []
        for i, ch in enumerate(arg[1:], start=2):
            found = self.short.get(prefix + ch)
            if found is None:
                if self.ignore_unknown:
                    unknown.append(ch)
                    continue
                raise _Stop
            param, const = found
            if param[6]:
                if i < len(arg):
                    self.rargs.insert(0, arg[i:])
                self._store(param, self._value(param))
                if i < len(arg):
                    break
            else:
                self._store(param, const)
        if self.ignore_unknown and unknown:
            self.largs.append(prefix + "".join(unknown))

    def _value(self, param: tuple) -> Any:
        nargs = param[8]
        if len(self.rargs) < nargs:
            raise _Stop  # "requires an argument"
        if nargs == 1:
            return self.rargs.pop(0)
        value = tuple(self.rargs[:nargs])
        del self.rargs[:nargs]
        return value

    def _store(self, param: tuple, value: Any) -> None:
        if param[7]:  # multiple
            self.values.setdefault(param[1], []).append(value)
        else:
            self.values[param[1]] = value

    def arguments(self) -> None:
        taken, self.largs = _unpack(self.largs + self.rargs, [p[2] for p in self.arguments_spec])
        self.rargs = []
        for p, value in zip(self.arguments_spec, taken, strict=True):
            if p[2] == -1 and value == ():
                value = None
            self.values[p[1]] = value


def _split_opt(opt: str) -> tuple[str, str]:
    first = opt[:1]
    if first.isalnum():
        return "", opt
    if opt[1:2] == first:
        return opt[:2], opt[2:]
    return first, opt[1:]


def _unpack(args: list[str], nargs_spec: list[int]) -> tuple[list[Any], list[str]]:
    """Click's `_unpack_args`: positional words to arguments, -1 taking the rest."""
    rest, specs = deque(args), deque(nargs_spec)
    out: list[Any] = []
    spos: int | None = None

    def fetch(c: deque) -> Any:
        try:
            return c.popleft() if spos is None else c.pop()
        except IndexError:
            return None

    while specs:
        nargs = fetch(specs)
        if nargs == 1:
            out.append(fetch(rest))
        elif nargs > 1:
            x = [fetch(rest) for _ in range(nargs)]
            if spos is not None:
                x.reverse()
            out.append(tuple(x))
        elif nargs < 0:
            spos = len(out)
            out.append(None)
    if spos is not None:
        out[spos] = tuple(rest)
        rest = deque()
        out[spos + 1 :] = reversed(out[spos + 1 :])
    return out, list(rest)


# --- 3. what is being completed, and the candidates ----------------------------------------------
def complete(args: list[str], incomplete: str, *, described: bool = True) -> list[Item]:
    """The candidates for `incomplete` after `args`, in Typer's order."""
    chain = resolve(args)
    level = chain[-1]
    args = list(args)
    if incomplete == "=":
        incomplete = ""
    elif "=" in incomplete and incomplete[:1] == "-":
        name, _, incomplete = incomplete.partition("=")
        args.append(name)
    params = level.spec["params"]
    if "--" not in args and incomplete[:1] == "-":
        return _command_items(level, incomplete)
    for p in params:
        if p[0] == "option" and p[6] and _takes_this(args, p):
            return _values(p[9], chain, incomplete, described)
    for p in params:
        if p[0] == "argument" and (p[2] == -1 or p[1] not in level.given):
            return _values(p[3], chain, incomplete, described)
    return _command_items(level, incomplete)


def _takes_this(args: list[str], param: tuple) -> bool:
    """Click's `_is_incomplete_option`: the option is among the last words, wanting a value."""
    last = None
    for index, arg in enumerate(reversed(args)):
        if index + 1 > param[8]:
            break
        if arg[:1] == "-":
            last = arg
            break
    return last is not None and last in param[2]


def _command_items(level: Level, incomplete: str) -> list[Item]:
    out: list[Item] = [(name, help) for name, help, hidden in level.spec["commands"]
                       if name.startswith(incomplete) and not hidden]  # fmt: skip
    if incomplete and not incomplete[0].isalnum():
        given = level.given
        for p in level.spec["params"]:
            if p[0] != "option" or p[5] or (not p[7] and p[1] in given):
                continue
            out += [(name, p[4]) for name in (*p[2], *p[3]) if name.startswith(incomplete)]
    return out


def _values(spec: tuple | None, chain: list[Level], incomplete: str, described: bool) -> list[Item]:
    if spec is None:
        return []
    if spec[0] == "choice":
        _, choices, case_sensitive = spec
        if case_sensitive:
            return [(c, None) for c in choices if c.startswith(incomplete)]
        low = incomplete.lower()
        return [(c, None) for c in choices if c.lower().startswith(low)]
    from kaja_cli.completion import values

    params = {**chain[0].values, **chain[-1].values}
    return values.complete(spec[1], params, incomplete, described=described)


# --- 4. the shells' formats --------------------------------------------------------------------
def render(shell: str, items: list[Item], env: Mapping[str, str]) -> tuple[str, int]:
    """What each shell's script reads, and the exit status: Typer's formats, but
    every value and description quoted so that no shell evaluates any of it."""
    if shell == "bash":
        return "".join(_bash(v) + "\n" for v, _ in items) or "\n", 0
    if shell == "zsh":
        if not items:
            return "_files\n", 0
        return f"_arguments {_zsh(f'*: :(({_zsh_items(items)}))')}\n", 0
    action = env.get("_TYPER_COMPLETE_FISH_ACTION", "")
    if action == "is-args":
        return "", 0 if items else 1
    if action == "get-args" and items:
        return "\n".join(f"{v}\t{_fish(h)}" if h else v for v, h in items) + "\n", 0
    return "\n", 0


# zsh evaluates what kaja prints (`eval $(kaja)`), then `_arguments` evaluates
# the list inside `((…))` (`eval ws=( … )`), then `_describe` splits each item
# at its first colon not after a backslash and drops a backslash before any
# character. So each item is quoted three times: its colons and backslashes
# escaped with a backslash, the item one $'…' word, the whole spec one $'…'
# word. In a $'…' word every quote, backslash and control character is a \xHH
# escape, and so is a space beside another (`$(kaja)` is split at spaces and
# joined again with one): whatever a value holds, the shell reads it as text.
def _zsh(s: str) -> str:
    s = s.replace("\\", "\\x5c").replace("'", "\\x27").replace("  ", "\\x20\\x20")
    if not s.isprintable():  # control characters; beyond ASCII, line separators and the like
        s = "".join(c if c.isprintable() else _escape(c) for c in s)
    return f"$'{s}'"


def _zsh_items(items: list[Item]) -> str:
    def item(s: str) -> str:
        return s.replace("\\", "\\\\").replace(":", "\\:")

    return " ".join(_zsh(f"{item(v)}:{item(h)}" if h else item(v)) for v, h in items)


def _escape(c: str) -> str:
    """A character as $'…' writes it in zsh and bash (`\\xHH` is a byte: beyond ASCII, `\\u`)."""
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


# bash inserts a candidate on the line as it is: each is written the way it
# would be typed, a character the shell would act on after a backslash, a
# control character as $'\xHH'.
_BASH_PLAIN = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
_BASH = {
    c: "\\" + chr(c) if 0x20 <= c < 0x7F else f"$'\\x{c:02x}'"
    for c in range(0x80)
    if not _BASH_PLAIN.fullmatch(chr(c))
}


def _bash(s: str) -> str:
    if _BASH_PLAIN.fullmatch(s):
        return s
    s = s.translate(_BASH)
    if not s.isprintable():  # beyond ASCII
        s = "".join(c if c.isprintable() else f"$'{_escape(c)}'" for c in s)
    return s or "''"


def _fish(s: str) -> str:
    return "".join(" " if ch.isspace() else ch for ch in s)
