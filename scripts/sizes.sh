#!/usr/bin/env bash
# The size limits of src/ (STYLE.md, issue 22): no .c file over 800 lines, no
# header over 300 but the public one, no function over 100 lines. A function
# is what lies between a '{' and a '}' alone at the start of a line (the
# project's style puts a function's braces there and nothing else's).
# Prints what is over; exits 1 if anything is.
#
#   scripts/sizes.sh [DIR...]     (default: src src/tools)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ $# -gt 0 ]] || set -- src src/tools
over=0
for dir in "$@"; do
    for f in "$dir"/*.c "$dir"/*.h; do
        [[ -e $f ]] || continue
        n=$(wc -l <"$f")
        case $f in
            *.c) max=800 ;;
            *) max=300 ;;
        esac
        if ((n > max)); then
            printf 'sizes.sh: %s has %d lines (limit %d)\n' "$f" "$n" "$max"
            over=1
        fi
    done
    for f in "$dir"/*.c; do
        [[ -e $f ]] || continue
        if ! awk -v file="$f" '
            /^\{/ { start = FNR; name = prev; next }
            /^\}/ && start {
                if (FNR - start - 1 > 100) {
                    printf "sizes.sh: %s:%d: %s has %d lines (limit 100)\n",
                        file, start, name, FNR - start - 1
                    bad = 1
                }
                start = 0
            }
            { prev = $0 }
            END { exit bad }' "$f"; then
            over=1
        fi
    done
done
((over == 0)) && printf 'sizes.sh: within the limits (.c 800, header 300, function 100 lines)\n'
exit "$over"
