# bash completion for attncap. Commands and each command's options come from the binary itself
# (attncap --help, attncap help CMD), so they never drift from what it accepts.
_attncap() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} bin=${COMP_WORDS[0]}
    local cmd=${COMP_WORDS[1]:-}
    if [ "$COMP_CWORD" -eq 1 ]; then
        local cmds
        cmds=$("$bin" --help 2>/dev/null | awk '/^commands:/ {on = 1; next} on && /^$/ {exit} on && /^  [a-z]/ {print $1}')
        COMPREPLY=($(compgen -W "$cmds help --help --version" -- "$cur"))
        return
    fi
    if [ "$cmd" = help ]; then
        [ "$COMP_CWORD" -eq 2 ] &&
            COMPREPLY=($(compgen -W "data $("$bin" --help 2>/dev/null | awk '/^commands:/ {on = 1; next} on && /^$/ {exit} on && /^  [a-z]/ {print $1}')" -- "$cur"))
        return
    fi
    case $prev in
        --out) # a model or head file for train and presence, a directory for the others
            case $cmd in
                train|presence) COMPREPLY=($(compgen -f -- "$cur")) ;;
                *) COMPREPLY=($(compgen -d -- "$cur")) ;;
            esac
            return ;;
        --overlays|--root|--report|--features|--images) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --tags) [ "$cmd" = calibrate ] || { COMPREPLY=($(compgen -W "auto off" -- "$cur")); return; } ;;
        --precision) # the names the binary accepts, from its message for one it does not
            COMPREPLY=($(compgen -W "$("$bin" caption --precision . 2>&1 |
                sed -n "s/.*unknown precision '.' (\(.*\))\$/\1/p" | sed 's/, / /g; s/ or / /g')" -- "$cur"))
            return ;;
        --split) COMPREPLY=($(compgen -W "train val test all" -- "$cur")); return ;;
        --style) COMPREPLY=($(compgen -W "heat spot" -- "$cur")); return ;;
        --base) COMPREPLY=($(compgen -W "grey colour" -- "$cur")); return ;;
        --scale) COMPREPLY=($(compgen -W "panel absolute" -- "$cur")); return ;;
        --format) [ "$cmd" = caption ] && { COMPREPLY=($(compgen -W "png jpg" -- "$cur")); return; } ;;
        --attention) # train's takes a score (caption's is a flag)
            [ "$cmd" = train ] && { COMPREPLY=($(compgen -W "additive dot scaled-dot general cosine" -- "$cur")); return; } ;;
        --decoder) COMPREPLY=($(compgen -W "lstm transformer" -- "$cur")); return ;;
        --attention-mode) COMPREPLY=($(compgen -W "soft hard" -- "$cur")); return ;;
        --hard-context) COMPREPLY=($(compgen -W "argmax expected" -- "$cur")); return ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        opts=$("$bin" help "$cmd" 2>/dev/null | grep -oE '(^|[ [(])--[a-z0-9][a-z0-9-]*' | sed 's/^[ [(]//' | sort -u)
        COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -o bashdefault -F _attncap attncap
