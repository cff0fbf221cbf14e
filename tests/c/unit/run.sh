#!/bin/sh
# run.sh -- build and run the platform-layer and checker unit tests (tests/c/unit).
#
#   tests/c/unit/run.sh [--asan] [--only NAME] [--fuzz N]
#
# Every test_*.c here is a test program (found by name, not listed), compiled and linked
# with the core the Makefile's one way: MDBTEST_CC, MDBTEST_CFLAGS, MDBTEST_LIBS (the core's
# archive); started by hand, this script asks `make ctest-env` for them (--asan: build-asan/'s).
# Two extra programs: lmdb_helper.c is linked with Debian's liblmdb (-llmdb) to play the real
# LMDB side of the lock-file tests, and tools/mdbcheck.c is the standalone checker that
# test_mdbcheck.py fuzzes (tools/ is one level down so that the top Makefile's
# tests/c/*/*.c rules do not take it for a test).  test_fault also links
# src/mdbcore/testlib/fault_env.c, the MDBCORE_FAULT constructor of test builds.
# Each test runs with the path of lmdb_helper as its argument, under a time limit.
# test_mdbcheck.py needs python3 with the `lmdb` module and the mdb_dump/mdb_load/mdb_copy/
# mdb_stat tools.  --only NAME builds and runs NAME alone (make ctest-one T=NAME); --fuzz N
# sets test_mdbcheck.py's rounds.
# Run from the repository root.  Exit status: non-zero if any test failed.
set -u
cd "$(dirname "$0")/../../.." || exit 2

ASAN=""
ONLY=""
FUZZ=300
while [ $# -gt 0 ]; do
    case "$1" in
    --asan) ASAN=1 ;;
    --only) ONLY="$2"; shift ;;
    --fuzz) FUZZ="$2"; shift ;;
    *) echo "usage: $0 [--asan] [--only NAME] [--fuzz N]" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "${MDBTEST_CFLAGS:-}" ]; then
    settings=$(make -s --no-print-directory ctest-env ${ASAN:+ASAN=1}) || exit 2
    eval "$settings"
fi
if [ -n "$ONLY" ] && [ ! -f "tests/c/unit/$ONLY.c" ]; then
    echo "run.sh --only $ONLY: there is no tests/c/unit/$ONLY.c" >&2
    exit 2
fi
OUT=$MDBTEST_OUT/unit
mkdir -p "$OUT"

fail=0
build() { # name sources...
    name=$1; shift
    echo "cc $name"
    # shellcheck disable=SC2086
    $MDBTEST_CC $MDBTEST_CFLAGS -o "$OUT/$name" "$@" $MDBTEST_LIBS || { echo "BUILD FAILED: $name"; fail=1; return 1; }
}
run() {
    echo "== $*"
    "$@" || { echo "FAILED: $*"; fail=1; }
}

cc -O1 -g -Wall -Wextra -Werror -Itests/c/include -o "$OUT/lmdb_helper" tests/c/unit/lmdb_helper.c -llmdb \
    || { echo "BUILD FAILED: lmdb_helper (needs liblmdb-dev)"; fail=1; }
for src in tests/c/unit/test_*.c; do
    name=$(basename "$src" .c)
    [ -z "$ONLY" ] || [ "$ONLY" = "$name" ] || continue
    case $name in
    test_fault) extra=src/mdbcore/testlib/fault_env.c ;; # arms the seam from MDBCORE_FAULT
    *) extra="" ;;
    esac
    # shellcheck disable=SC2086
    build "$name" "$src" $extra || continue
    case $name in
    test_check_engine) limit=300 ;;
    *) limit=120 ;;
    esac
    run timeout "$limit" "$OUT/$name" "$OUT/lmdb_helper"
done
if [ -z "$ONLY" ]; then
    build mdbcheck tests/c/unit/tools/mdbcheck.c &&
        run timeout 600 python3 tests/c/unit/test_mdbcheck.py -n "$FUZZ" "$OUT/mdbcheck"
fi
[ $fail -eq 0 ] && echo "unit tests${ONLY:+ (--only $ONLY)}: all passed" || echo "unit tests: FAILURES"
exit $fail
