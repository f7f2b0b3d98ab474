#!/usr/bin/env bash
# The modules of a directory must not reach each other in a circle. A module
# is X.c with X.h; it reaches module Y when any of its two files uses a name
# that Y defines for other files to use: a function, an inline helper, a
# macro, a type (struct, union, enum, typedef), an enum constant or a global
# variable. Names local to a .c (static, or defined there) do not count; a
# member after "." or "->" is not a name. So a module "below" another never
# needs the one above, not even through a struct or a macro in a header.
#
# Prints, for each module, the modules it reaches (and one name of each as
# the witness); then either "no circle" (exit 0) or the circles, each as
# its modules and every edge that closes it with the names it uses (exit 1).
#
#   scripts/layers.sh [DIR...]
#       DIR: default src/ of this repository; several directories are
#       checked one by one (src/tools/, tests/common/)
#
# Needs universal-ctags (the definitions) and gcc (comments stripped).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
(($#)) || set -- "$root/src"
command -v ctags >/dev/null || { echo "layers.sh: ctags (universal-ctags) not found" >&2; exit 2; }
ctags --version 2>/dev/null | grep -q 'Universal Ctags' ||
    { echo "layers.sh: ctags is not universal-ctags" >&2; exit 2; }

check_dir() {
    local dir=$1 files=() f
    [[ -d $dir ]] || { echo "layers.sh: no directory $dir" >&2; return 2; }
    for f in "$dir"/*.c "$dir"/*.h; do
        [[ -e $f ]] && files+=("$f")
    done
    ((${#files[@]})) || { echo "layers.sh: no C files in $dir" >&2; return 2; }
    printf '== %s\n' "$dir"

    # The names each module offers: file-scoped tags (a .c's statics and
    # its own macros) are left out by --extras=-F; members and parameters
    # are not asked for.
    {
        ctags -f - --language-force=C --extras=-F --fields=+K \
            --kinds-C=dfgpstuvxe "${files[@]}" |
            awk -F '\t' '$1 !~ /^__anon/ { print "\001DEF", $1, $2, $4 }'
        # Each file's text, without comments, and strings emptied.
        for f in "${files[@]}"; do
            printf '\001FILE %s\n' "$f"
            gcc -fpreprocessed -dD -E -P -x c "$f" 2>/dev/null |
                sed -E 's/"([^"\\]|\\.)*"/""/g; s/'\''([^'\''\\]|\\.)+'\''/0/g' |
                grep -v '^#include '
        done
    } | awk '
        function module(path,   m) {
            m = path
            sub(".*/", "", m)
            sub(/\.[ch]$/, "", m)
            return m
        }
        # Where a name lives: a body beats a declaration (a function over
        # its prototype, a struct over its typedef, extern over nothing).
        function rank(kind) {
            if (kind == "function" || kind == "struct" || kind == "union" || kind == "enum")
                return 3
            if (kind == "variable" || kind == "macro" || kind == "enumerator")
                return 2
            return 1
        }
        $1 == "\001DEF" {
            name = $2; m = module($3); r = rank($4)
            if (!(name in home) || r > best[name]) {
                home[name] = m; best[name] = r
            }
            mods[m] = 1
            next
        }
        $1 == "\001FILE" { self = module($2); mods[self] = 1; next }
        {
            line = $0
            # Members: after "." or "->" (and designated initializers).
            gsub(/(\.|->)[ \t]*[A-Za-z_][A-Za-z0-9_]*/, " ", line)
            while (match(line, /[A-Za-z_][A-Za-z0-9_]*/)) {
                name = substr(line, RSTART, RLENGTH)
                line = substr(line, RSTART + RLENGTH)
                if (!(name in home) || home[name] == self)
                    continue
                to = home[name]
                edge[self, to] = 1
                if (index(" " via[self, to] " ", " " name " ") == 0)
                    via[self, to] = via[self, to] " " name
            }
        }
        END {
            n = 0
            for (m in mods)
                list[++n] = m
            for (i = 2; i <= n; i++)
                for (j = i; j > 1 && list[j - 1] > list[j]; j--) {
                    t = list[j]; list[j] = list[j - 1]; list[j - 1] = t
                }
            for (i = 1; i <= n; i++) {
                out = ""
                for (j = 1; j <= n; j++)
                    if ((list[i], list[j]) in edge) {
                        w = via[list[i], list[j]]
                        sub(/^ /, "", w); sub(/ .*/, "", w)
                        out = out " " list[j] "(" w ")"
                    }
                printf "%-16s ->%s\n", list[i], out == "" ? " (nothing)" : out
                for (j = 1; j <= n; j++)
                    reach[list[i], list[j]] = ((list[i], list[j]) in edge)
            }
            # Which module reaches which (Warshall); a circle is a set of
            # modules that reach each other.
            for (k = 1; k <= n; k++)
                for (i = 1; i <= n; i++)
                    if (reach[list[i], list[k]])
                        for (j = 1; j <= n; j++)
                            if (reach[list[k], list[j]])
                                reach[list[i], list[j]] = 1
            bad = 0
            for (i = 1; i <= n; i++) {
                if (done[list[i]] || !reach[list[i], list[i]])
                    continue
                members = ""; size = 0
                for (j = 1; j <= n; j++)
                    if (reach[list[i], list[j]] && reach[list[j], list[i]]) {
                        done[list[j]] = 1
                        members = members " " list[j]
                        size++
                    }
                printf "circle of %d modules:%s\n", size, members
                for (a = 1; a <= n; a++)
                    for (b = 1; b <= n; b++)
                        if ((list[a], list[b]) in edge && reach[list[i], list[a]] &&
                            reach[list[a], list[i]] && reach[list[i], list[b]] &&
                            reach[list[b], list[i]])
                            printf "  %s -> %s:%s\n", list[a], list[b], via[list[a], list[b]]
                bad = 1
            }
            if (!bad)
                print "no circle"
            exit bad
        }
    '
}

status=0
for dir in "$@"; do
    check_dir "$dir" || status=1
done
exit "$status"
