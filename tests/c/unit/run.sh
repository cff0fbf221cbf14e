#!/bin/sh
# run.sh -- build and run the platform-layer and checker unit tests (tests/c/unit).
#
#   tests/c/unit/run.sh [--asan] [--lib build/libmdbcore.a] [--fuzz N]
#
# tools/ holds mdbcheck.c (the standalone checker) and stub_engine.c; they live one level
# down so the top Makefile's tests/c/*/*.c rules do not treat them as tests or helpers.
# By default the tests are compiled straight from the sources they test (os_posix.c,
# os_fault.c, lockfile.c, readers.c, walk.c, cmp.c, check.c), with stub_engine.c standing in for
# the two engine calls check.c makes, so they run before the engine links.  --lib links
# them against a built archive instead (no stub).  --asan adds ASan+UBSan.  The lock-file
# tests need Debian's liblmdb (-llmdb) for lmdb_helper; test_mdbcheck.py needs python3
# with the `lmdb` module and the mdb_dump/mdb_load/mdb_copy/mdb_stat tools.
# test_check_engine.c needs the engine: built from all of src/mdbcore (skipped if that does
# not compile) or linked with --lib.
# Run from the repository root.  Exit status: non-zero if any test failed.
set -u
cd "$(dirname "$0")/../../.." || exit 2

OUT=build/unit
SAN=""
LIB=""
FUZZ=300
while [ $# -gt 0 ]; do
    case "$1" in
    --asan) SAN="-fsanitize=address,undefined -fno-sanitize-recover=all" ;;
    --lib) LIB="$2"; shift ;;
    --fuzz) FUZZ="$2"; shift ;;
    *) echo "usage: $0 [--asan] [--lib ARCHIVE] [--fuzz N]" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$OUT"
CC=${CC:-cc}
CFLAGS="-std=gnu11 -O1 -g -Wall -Wextra -Werror -pthread -D_GNU_SOURCE -Isrc/mdbcore $SAN"
S=src/mdbcore
if [ -n "$LIB" ]; then
    OSRC=""; LSRC=""; CSRC=""; LINK="$LIB -pthread"
else
    OSRC="$S/os_posix.c $S/os_fault.c"
    LSRC="$S/lockfile.c $S/readers.c $S/os_posix.c $S/os_fault.c"
    CSRC="$S/check.c $S/walk.c $S/cmp.c $S/os_posix.c tests/c/unit/tools/stub_engine.c"
    LINK=""
fi

fail=0
build() { # name sources...
    name=$1; shift
    echo "cc $name"
    # shellcheck disable=SC2086
    $CC $CFLAGS -o "$OUT/$name" "$@" $LINK || { echo "BUILD FAILED: $name"; fail=1; return 1; }
}

$CC -O1 -g -Wall -Wextra -Werror -o "$OUT/lmdb_helper" tests/c/unit/lmdb_helper.c -llmdb \
    || { echo "BUILD FAILED: lmdb_helper (needs liblmdb-dev)"; fail=1; }
# the MDBCORE_FAULT constructor exists only in test builds (src/mdbcore/testlib/)
build test_fault tests/c/unit/test_fault.c $OSRC $S/testlib/fault_env.c
build test_lockfile tests/c/unit/test_lockfile.c $LSRC
build test_check tests/c/unit/test_check.c $CSRC
build mdbcheck tests/c/unit/tools/mdbcheck.c $CSRC

# The checker on our engine's files: needs the whole engine.  From the sources it is
# skipped (not failed) if the engine does not compile yet.
if [ -n "$LIB" ]; then
    build test_check_engine tests/c/unit/test_check_engine.c && ENGINE_OK=1 || ENGINE_OK=0
else
    echo "cc test_check_engine (whole engine)"
    # shellcheck disable=SC2086
    if $CC $CFLAGS -o "$OUT/test_check_engine" tests/c/unit/test_check_engine.c $S/*.c 2>"$OUT/engine-build.log"; then
        ENGINE_OK=1
    else
        ENGINE_OK=0
        echo "SKIPPED test_check_engine: the engine does not compile (see $OUT/engine-build.log)"
    fi
fi

run() {
    echo "== $*"
    "$@" || { echo "FAILED: $*"; fail=1; }
}
run "$OUT/test_fault"
run timeout 120 "$OUT/test_lockfile" "$OUT/lmdb_helper"
run timeout 120 "$OUT/test_check" "$OUT/lmdb_helper"
[ "$ENGINE_OK" = 1 ] && run timeout 300 "$OUT/test_check_engine"
run timeout 600 python3 tests/c/unit/test_mdbcheck.py -n "$FUZZ" "$OUT/mdbcheck"
[ $fail -eq 0 ] && echo "unit tests: all passed" || echo "unit tests: FAILURES"
exit $fail
