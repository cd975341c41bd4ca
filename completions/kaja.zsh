#compdef kaja

_kaja_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _KAJA_COMPLETE=complete_zsh kaja)
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  _kaja_completion "$@"
elif (( $+functions[compdef] )); then
  compdef _kaja_completion kaja
else
  _kaja_completion_at_prompt() {
    precmd_functions=(${precmd_functions:#_kaja_completion_at_prompt})
    (( $+functions[compdef] )) || { autoload -Uz compinit && compinit -i }
    compdef _kaja_completion kaja
    unfunction _kaja_completion_at_prompt
  }
  precmd_functions+=(_kaja_completion_at_prompt)
fi
