# Shared by the file systems' scripts (cephfs/, gluster/): messages and options. Sourced.
# shellcheck shell=bash

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

# parse_opts SPEC ARGS...: sets the variables SPEC names from the options in ARGS.
# SPEC is words `--name=VAR` (an option with a value, also written --name=value) and
# `--name:VAR` (a flag: VAR=1); -h and --help call `usage` and exit 0; anything else
# calls `usage` and dies.
parse_opts() {
    local spec=$1 word opt found
    shift
    while [ $# -gt 0 ]; do
        opt=$1
        case "$opt" in
            -h|--help) usage; exit 0 ;;
            --*=*) set -- "${opt%%=*}" "${opt#*=}" "${@:2}"; opt=${opt%%=*} ;;
        esac
        found=
        for word in $spec; do
            case "$word" in
                "$opt="*)
                    [ $# -ge 2 ] || die "$opt needs a value"
                    printf -v "${word#*=}" '%s' "$2"
                    found=2 ;;
                "$opt:"*)
                    printf -v "${word#*:}" '%s' 1
                    found=1 ;;
            esac
        done
        [ -n "$found" ] || { usage; die "unknown argument '$opt'"; }
        shift "$found"
    done
}
