#!/usr/bin/env bash
# scripts/check-layers.sh BUILD_DIR: the rooms' calls flow one way (docs/architecture.md).
# For each room's compiled objects, every stagepart function it calls (an undefined sp_ symbol)
# must be defined in that room or in a room it may use; the include paths (sp_room in
# CMakeLists.txt) already keep its #includes to the same rooms, this checks the calls themselves
# (a public function declared in the umbrella header could otherwise be called from below). And
# cli/, which sees only the public header, names its own helpers cli_*, never sp_*.
set -euo pipefail
build=${1:?usage: scripts/check-layers.sh BUILD_DIR}

# room: the rooms it may use (the same lists as sp_room in each room's CMakeLists.txt)
declare -A uses=(
    [core]=""
    [formats]="core"
    [simulate]="core formats"
    [partitioner]="core formats simulate"
    [export]="core formats simulate"
    [check]="core formats simulate partitioner"
    [models]="core"
    [profiler]="core formats models"
    [runtime]="core formats simulate models"
)

objects_of() { # the object files of a room (its cuda/ subfolder's too)
    find "$build/$1" -path '*/CMakeFiles/*' -name '*.o' 2>/dev/null | grep -v '/tests/' || true
}

declare -A defined_in
for room in "${!uses[@]}"; do
    for sym in $(objects_of "$room" | xargs -r nm --defined-only -g 2>/dev/null |
        awk 'NF == 3 && $3 ~ /^sp_/ {print $3}' | sort -u); do
        defined_in[$sym]=$room
    done
done
[ "${#defined_in[@]}" -gt 0 ] || { echo "check-layers: no objects under $build" >&2; exit 2; }

bad=0
for room in "${!uses[@]}"; do
    allowed=" $room ${uses[$room]} "
    while read -r obj; do
        for sym in $(nm -u "$obj" 2>/dev/null | awk '$2 ~ /^sp_/ {print $2}'); do
            home=${defined_in[$sym]:-}
            [ -z "$home" ] && continue # not stagepart's (or a test's stand-in)
            case "$allowed" in
            *" $home "*) ;;
            *) echo "check-layers: ${obj#"$build"/} ($room) calls $sym, defined in $home/"
               bad=1 ;;
            esac
        done
    done < <(objects_of "$room")
done
# Inside partitioner/ the calls flow the same way: the entry points (partitioner/*.c) call the
# solvers (solvers/) and the shared model (model/); a solver calls the model and other solvers
# (the ilp starts from the DP), never an entry point or a plan's completion; the model calls
# only itself.
part_dir="$build/partitioner/CMakeFiles/sp_partitioner.dir"
part_of() { # entry, model or solvers, from an object's path
    case "${1#"$part_dir"/}" in
    model/*) echo model ;;
    solvers/*) echo solvers ;;
    *) echo entry ;;
    esac
}
declare -A part_defines
while read -r obj; do
    for sym in $(nm --defined-only -g "$obj" | awk 'NF == 3 && $3 ~ /^sp_/ {print $3}'); do
        part_defines[$sym]=$(part_of "$obj")
    done
done < <(find "$part_dir" -name '*.o')
declare -A part_uses=([entry]="entry model solvers" [solvers]="model solvers" [model]="model")
while read -r obj; do
    part=$(part_of "$obj")
    for sym in $(nm -u "$obj" | awk '$2 ~ /^sp_/ {print $2}'); do
        home=${part_defines[$sym]:-}
        case " ${part_uses[$part]} " in
        *" $home "* | "  ") ;;
        *) [ -n "$home" ] && { echo "check-layers: ${obj#"$build"/} ($part) calls $sym, defined in partitioner's $home"; bad=1; } ;;
        esac
    done
done < <(find "$part_dir" -name '*.o')
# the command's own helpers are cli_*: sp_ names belong to the library
for sym in $(find "$build/cli" -path '*/CMakeFiles/*' -name '*.o' | xargs -r nm --defined-only -g |
    awk 'NF == 3 && $3 ~ /^sp_/ {print $3}' | sort -u); do
    echo "check-layers: cli/ defines $sym: the command's own helpers are named cli_*"
    bad=1
done
[ "$bad" = 0 ] && echo "check-layers: every room calls only itself and the rooms below it," \
    "and partitioner's solvers and model never call up"
exit "$bad"
