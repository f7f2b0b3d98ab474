#!/usr/bin/env bash
# The files of src/ must not call each other in a circle: every rl__
# function a file calls from another file points one way, down the layers
# (lock.c -> outcome.c -> router.c -> server.c -> conn.c -> ...). The same
# for the rlock command's files: scripts/layers.sh src/tools rt_
#
# Prints, for each file, the files it calls into; then either "no circle"
# (exit 0) or every circle found, with the calls that close it (exit 1).
#
#   scripts/layers.sh [SRC_DIR [PREFIX]]
#       SRC_DIR: default src/ of this repository; PREFIX: of the functions
#       that cross files, default rl__
set -euo pipefail

src=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/src}
prefix=${2:-rl__}
[[ -d $src ]] || { echo "layers.sh: no directory $src" >&2; exit 2; }
[[ $prefix =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "layers.sh: bad prefix $prefix" >&2; exit 2; }

# A definition: a line that starts with a type, names a PREFIX function and
# does not end with ";". Calls: every "PREFIXname(" in the file.
awk -v prefix="$prefix" '
    BEGIN {
        def = "^[A-Za-z][A-Za-z0-9_ *]*[ *]" prefix "[A-Za-z0-9_]+\\("
        use = prefix "[A-Za-z0-9_]+[ \t]*\\("
    }
    FNR == 1 { file = FILENAME; sub(".*/", "", file); files[file] = 1 }
    $0 ~ def && !/;[ \t]*$/ {
        name = $0
        sub(/\(.*/, "", name)
        sub(/.*[ *]/, "", name)
        home[name] = file
    }
    {
        line = $0
        while (match(line, use)) {
            name = substr(line, RSTART, RLENGTH)
            sub(/[ \t]*\($/, "", name)
            calls[file SUBSEP name] = 1
            line = substr(line, RSTART + RLENGTH)
        }
    }
    END {
        for (k in calls) {
            split(k, p, SUBSEP)
            to = home[p[2]]
            if (to == "" || to == p[1])
                continue
            edge[p[1], to] = 1
            via[p[1], to] = via[p[1], to] " " p[2]
        }
        n = 0
        for (f in files)
            list[++n] = f
        # Sort the file names, for a stable report.
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && list[j - 1] > list[j]; j--) {
                t = list[j]; list[j] = list[j - 1]; list[j - 1] = t
            }
        for (i = 1; i <= n; i++) {
            out = ""
            for (j = 1; j <= n; j++)
                if ((list[i], list[j]) in edge)
                    out = out " " list[j]
            printf "%-14s ->%s\n", list[i], out == "" ? " (nothing)" : out
            for (j = 1; j <= n; j++)
                reach[list[i], list[j]] = ((list[i], list[j]) in edge)
        }
        # Which file reaches which (Warshall); a circle is a file that
        # reaches itself.
        for (k = 1; k <= n; k++)
            for (i = 1; i <= n; i++)
                if (reach[list[i], list[k]])
                    for (j = 1; j <= n; j++)
                        if (reach[list[k], list[j]])
                            reach[list[i], list[j]] = 1
        bad = 0
        for (i = 1; i <= n; i++)
            for (j = 1; j <= n; j++)
                if ((list[i], list[j]) in edge && reach[list[j], list[i]]) {
                    printf "circle: %s calls %s (%s ) and %s leads back to it\n",
                           list[i], list[j], via[list[i], list[j]], list[j]
                    bad = 1
                }
        if (!bad)
            print "no circle"
        exit bad
    }
' "$src"/*.c
