# Shared by the file systems' scripts (cephfs/, gluster/): messages and options. Sourced.
# shellcheck shell=bash

say() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PROG" "$*" >&2; exit 1; }

# split_opts ARGS...: ARGS into the array OPTS, each --name=value as --name value, so
# that a parser has one case per option.
split_opts() {
    OPTS=()
    local a
    for a in "$@"; do
        case "$a" in
            --*=*) OPTS+=("${a%%=*}" "${a#*=}") ;;
            *) OPTS+=("$a") ;;
        esac
    done
}

# need_value OPTION [VALUE...]: dies unless the option is followed by a value.
need_value() { [ $# -ge 2 ] || die "$1 needs a value"; }
