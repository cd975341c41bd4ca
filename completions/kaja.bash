_kaja_completion() {
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
        line=${line#"${line%%[![:space:]]*}"}
        line=${line#"$piece"}
        words[n]+=$piece
    done
    mapfile -t COMPREPLY < <(env COMP_WORDS="${words[*]}" COMP_CWORD=$n \
                             _KAJA_COMPLETE=complete_bash "$1")
    [[ ${COMPREPLY[*]} ]] || COMPREPLY=()  # nothing (a line end alone): files
    # bash replaces only the text after the word's last ':' or '=': take what
    # it keeps (the longest end of it a candidate starts with: most often the
    # same for all of them) off the front of each candidate.
    [[ $piece == *[!:=]* ]] || piece=
    head=${words[n]%"$piece"} k=0
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

complete -o default -F _kaja_completion kaja
