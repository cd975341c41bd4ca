#compdef kaja

_kaja_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _KAJA_COMPLETE=complete_zsh kaja)
}

compdef _kaja_completion kaja
