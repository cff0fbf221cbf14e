#!/usr/bin/env bash
# run_ctests.sh -- run C test programs (and check scripts) one by one and summarise.
#
#   run_ctests.sh LABEL RESULTS_FILE 'COMMAND' ['COMMAND' ...]
#
# Each COMMAND is a shell command line, optionally prefixed "NAME::" to name it (usually a test binary, maybe with arguments).  It
# runs from the directory run_ctests.sh was started in (the repository root: some tests
# find helper programs by relative path), with TMPDIR set to a fresh temporary directory
# of its own, under a time limit of CTEST_TIMEOUT seconds (default 600).  Pass = exit status 0.  A failing command's output
# is shown in full (last 200 lines); a passing one's last line only, or all of it when
# CTEST_VERBOSE is set (make ctest-one).
# The summary line "C tests (LABEL): N passed, M failed" is printed and appended to
# RESULTS_FILE; the exit status is 1 if anything failed, or if there was nothing to run.
set -u
label=$1
results=$2
shift 2
timeout_s=${CTEST_TIMEOUT:-600}
pass=0
fail=0
failed_names=()
if [ $# -eq 0 ]; then
    echo "C tests ($label): nothing to run" | tee -a "$results"
    exit 1
fi
for cmd in "$@"; do
    if [[ $cmd == *::* ]]; then   # "NAME::COMMAND" names a command explicitly
        name=${cmd%%::*}
        cmd=${cmd#*::}
    else
        name=$(basename "${cmd%% *}")
    fi
    exe=${cmd%% *}
    if [[ $exe == /* ]] && [ ! -x "$exe" ]; then
        fail=$((fail + 1))
        failed_names+=("$name")
        printf 'FAIL  %-28s %6s   (not built: see the compiler errors above)\n' "$name" "-"
        continue
    fi
    work=$(mktemp -d "${TMPDIR:-/tmp}/ctest-${name//\//_}-XXXXXX")
    log="$work.log"
    start=$EPOCHREALTIME
    TMPDIR="$work" timeout -k 10 "$timeout_s" bash -c "$cmd" >"$log" 2>&1
    rc=$?
    secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    if [ $rc -eq 0 ]; then
        pass=$((pass + 1))
        [ -n "${CTEST_VERBOSE:-}" ] && cat "$log"
        printf 'PASS  %-28s %6ss  %s\n' "$name" "$secs" "$(tail -n 1 "$log")"
        rm -rf "$work" "$log"
    else
        fail=$((fail + 1))
        failed_names+=("$name")
        why="exit status $rc"
        [ $rc -eq 124 ] && why="TIMEOUT after ${timeout_s}s"
        [ $rc -gt 128 ] && [ $rc -ne 124 ] && why="killed by signal $((rc - 128))"
        printf 'FAIL  %-28s %6ss  (%s)\n' "$name" "$secs" "$why"
        echo "----- output of: $cmd"
        tail -n 200 "$log"
        echo "----- (work dir kept: $work)"
    fi
done
line="C tests ($label): $pass passed, $fail failed${failed_names:+ (${failed_names[*]})}"
echo "$line"
echo "$line" >>"$results"
[ $fail -eq 0 ]
