"""The shells' side when Typer answers: kaja's bash script, and Click
completion classes for bash, zsh and fish that print what the fast path
prints (`fast.render`).

Typer answers what the fast path leaves to it (printing the scripts, a
request the fast path cannot read), `--install-completion` and
`--show-completion`. Its own classes print values as they are, and its zsh
format escapes a quote but not a backslash: a session title could run a
command on a TAB press. Its bash script leaves `telegram:482913` in the three
pieces bash splits it into (COMP_WORDBREAKS), so that nothing completes
after it. `register()` puts kaja's in their place.
"""

from __future__ import annotations

import os
import sys

from kaja_cli import typer_internals
from kaja_cli.completion import fast

# Typer's script, but: the pieces bash split a word into at ':' or '=' joined
# again for kaja (COMP_WORDBREAKS), what bash keeps of the word taken off each
# candidate (as bash-completion's __ltrim_colon_completions does), and the
# answer read line by line (mapfile), never split or globbed as words.
# A template for Typer: `%%` is one `%`.
BASH_SCRIPT = r"""
%(complete_func)s() {
    local IFS=$'\n' line=$COMP_LINE piece head i k n=-1
    local -a words
    # bash breaks `--owner=telegram:482913` into five words: join the pieces of
    # each word the line shows unbroken, so that kaja reads the words typed.
    for (( i = 0; i <= COMP_CWORD; i++ )); do
        piece=${COMP_WORDS[i]}
        if (( n < 0 )) || [[ $line == [[:space:]]* ]] ||
            [[ $piece != [:=]* && ${COMP_WORDS[i-1]} != *[:=] ]]; then
            words[++n]=
        fi
        line=${line#"${line%%%%[![:space:]]*}"}
        line=${line#"$piece"}
        words[n]+=$piece
    done
    mapfile -t COMPREPLY < <(env COMP_WORDS="${words[*]}" COMP_CWORD=$n \
                             %(autocomplete_var)s=complete_bash "$1")
    [[ ${COMPREPLY[*]} ]] || COMPREPLY=()  # nothing (a line end alone): files
    # bash replaces only the text after the word's last ':' or '=': take what
    # it keeps (the longest end of it a candidate starts with: most often the
    # same for all of them) off the front of each candidate.
    [[ $piece == *[!:=]* ]] || piece=
    head=${words[n]%%"$piece"} k=0
    if [[ $head ]]; then
        for i in "${!COMPREPLY[@]}"; do
            [[ ${COMPREPLY[i]} == "${head:k}"* ]] ||
                for (( k = 0; k < ${#head}; k++ )); do
                    [[ ${COMPREPLY[i]} == "${head:k}"* ]] && break
                done
            COMPREPLY[i]=${COMPREPLY[i]#"${head:k}"}
        done
    fi
    return 0
}

complete -o default -F %(complete_func)s %(prog_name)s
"""

# Typer's script, but: it registers itself however it is loaded, and touches
# nothing else of the shell. Autoloaded from `fpath` by compinit (`#compdef`),
# it completes at once (Typer's completed nothing at the first TAB). Sourced
# after compinit, it calls `compdef`. Sourced before compinit or where nothing
# runs it (the line `kaja --install-completion zsh` appends to ~/.zshrc), it
# waits for the first prompt, when every start-up file has run, and starts
# compinit then only if none of them did: never a second compinit.
ZSH_SCRIPT = r"""
#compdef %(prog_name)s

%(complete_func)s() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" %(autocomplete_var)s=complete_zsh %(prog_name)s)
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  %(complete_func)s "$@"
elif (( $+functions[compdef] )); then
  compdef %(complete_func)s %(prog_name)s
else
  %(complete_func)s_at_prompt() {
    precmd_functions=(${precmd_functions:#%(complete_func)s_at_prompt})
    (( $+functions[compdef] )) || { autoload -Uz compinit && compinit -i }
    compdef %(complete_func)s %(prog_name)s
    unfunction %(complete_func)s_at_prompt
  }
  precmd_functions+=(%(complete_func)s_at_prompt)
fi
"""


def _answer(comp, shell: str) -> str:
    """The candidates Typer found, printed as the fast path prints them."""
    args, incomplete = comp.get_completion_args()
    items = [
        (c.value, typer_internals.sanitize_help_text(c.help) if c.help else None)
        for c in comp.get_completions(args, incomplete)
    ]
    text, code = fast.render(shell, items, os.environ)
    if shell == "fish" and os.environ.get("_TYPER_COMPLETE_FISH_ACTION") == "is-args":
        sys.exit(code)  # fish reads the exit status alone
    return text.removesuffix("\n")  # Typer's shell_complete adds the line end


_BASH, _ZSH, _FISH = typer_internals.completion_classes()


class Bash(_BASH):
    source_template = BASH_SCRIPT

    def complete(self) -> str:
        return _answer(self, "bash")


class Zsh(_ZSH):
    source_template = ZSH_SCRIPT

    def complete(self) -> str:
        return _answer(self, "zsh")


class Fish(_FISH):
    def complete(self) -> str:
        return _answer(self, "fish")


def script(shell: str) -> str:
    """kaja's completion script for bash, zsh or fish: what `--show-completion`
    prints and `--install-completion` writes (Typer's `get_completion_script`)."""
    template = {"bash": Bash, "zsh": Zsh, "fish": Fish}[shell].source_template
    names = {"complete_func": "_kaja_completion", "autocomplete_var": "_KAJA_COMPLETE",
             "prog_name": "kaja"}  # fmt: skip
    return (template % names).strip()


def register() -> None:
    """kaja's classes in place of Typer's (which `typer.main.get_command`
    registers again: call this after it), and kaja's bash and zsh scripts for
    `--install-completion` and `--show-completion`."""
    for cls in (Bash, Zsh, Fish):
        typer_internals.register_completion_class(cls)
    typer_internals.set_completion_script("bash", BASH_SCRIPT)
    typer_internals.set_completion_script("zsh", ZSH_SCRIPT)


def answer(app) -> int:
    """Typer's answer to the completion request in `_KAJA_COMPLETE`, through kaja's classes."""
    import typer.main
    from typer.completion import shell_complete

    command = typer.main.get_command(app)
    register()
    return shell_complete(command, {}, "kaja", "_KAJA_COMPLETE", os.environ["_KAJA_COMPLETE"])
