#!/usr/bin/env bash
# fuzz/run.sh -- runs the libFuzzer harnesses built by `make fuzz-build` (issue 12;
# docs/fuzzing.md).  Called by the Makefile:
#
#   fuzz/run.sh smoke SECS          each fuzzer SECS seconds from the committed corpus
#                                   (fuzz/corpus/<name>/), then every input kept in
#                                   fuzz/regressions/<name>/ replayed once; fails on any
#                                   finding
#   fuzz/run.sh campaign SECONDS    the time split over the fuzzers, run one after the other
#                                   (one core), corpus kept in build-fuzz/corpus/<name>/
#
# Per fuzzer it prints executions, final coverage (libFuzzer's cov = edges, ft = features),
# corpus size and findings (crash-/timeout-/leak-/oom- files in build-fuzz/findings/<name>/).
# FUZZERS="datafile lockfile" selects; FUZZ_ARGS adds libFuzzer options.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: fuzz/run.sh smoke SECS | campaign SECONDS}
secs=${2:?seconds}
B=build-fuzz
FUZZERS=${FUZZERS:-"apidiff datafile lockfile"}
nf=$(wc -w <<<"$FUZZERS")
[ "$mode" = campaign ] && per=$((secs / nf)) || per=$secs
[ "$per" -lt 1 ] && per=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
for f in $FUZZERS; do
    bin=$B/fuzz_$f
    [ -x "$bin" ] || { echo "fuzz: $bin not built (make fuzz-build)"; exit 2; }
    find_dir=$B/findings/$f
    mkdir -p "$find_dir"
    if [ "$mode" = smoke ]; then
        work=$B/smoke-corpus/$f
        rm -rf "$work"
    else
        work=$B/corpus/$f
    fi
    mkdir -p "$work"
    log=$B/$mode-$f.log
    # findings: crash-, timeout-, leak-, oom- files (slow-unit- files are reported apart)
    count_findings() { find "$find_dir" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'leak-*' -o -name 'oom-*' \) | wc -l; }
    before=$(count_findings)
    echo "== fuzz_$f: ${per}s from fuzz/corpus/$f (log $log)"
    # apidiff leaves an environment open on purpose when a workload stops inside a txn
    # (fuzz/fuzz_apidiff.c): no leak check there; its inputs also run two libraries.
    own=()
    [ "$f" = apidiff ] && own=(-detect_leaks=0 -timeout=30)
    # Output corpus first (new inputs go there), the committed corpus read-only after it.
    "$bin" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$find_dir/" "${own[@]}" ${FUZZ_ARGS:-} "$work" "fuzz/corpus/$f" >"$log" 2>&1
    rc=$?
    after=$(count_findings)
    slow=$(find "$find_dir" -type f -name 'slow-unit-*' | wc -l)
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
    ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
    corp=$(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' <<<"$last" | cut -d' ' -f2)
    line="fuzz_$f: ${per}s, executions ${execs:-?}, cov ${cov:-?} ft ${ft:-?}, corpus ${corp:-?}, findings $((after - before)), slow inputs kept ${slow} (exit $rc)"
    if [ $rc -ne 0 ] || [ "$after" -gt "$before" ]; then
        status=1
        line="$line FINDING"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$log" | head -n 20
    fi
    # Every input that once crashed stays fixed.
    if [ -d "fuzz/regressions/$f" ] && [ -n "$(ls -A "fuzz/regressions/$f")" ]; then
        n=$(ls "fuzz/regressions/$f" | wc -l)
        if "$bin" -timeout=10 -rss_limit_mb=2048 "${own[@]}" fuzz/regressions/"$f"/* >"$B/regress-$f.log" 2>&1; then
            line="$line; $n regression inputs ok"
        else
            status=1
            line="$line; regression inputs FAILED (log $B/regress-$f.log)"
            grep -E 'ERROR|SUMMARY|runtime error|Running:' "$B/regress-$f.log" | tail -n 20
        fi
    fi
    # fuzz_apidiff's value-lifetime oracle: values checked and changed (its last count)
    lt=$(grep -oE 'known differences; lifetime: checked=[0-9]+ changed=[0-9]+' "$log" | tail -n 1)
    [ -n "$lt" ] && line="$line; ${lt#known differences; }"
    known=$(grep -oE '[0-9]+ known differences' "$log" | tail -n 1)
    [ -n "$known" ] && line="$line ($known)"
    echo "$line"
    summary+=("$line")
done
echo "==================== fuzz $mode summary ===================="
printf '%s\n' "${summary[@]}"
exit $status
