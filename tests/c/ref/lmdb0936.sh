#!/usr/bin/env bash
# tests/c/ref/lmdb0936.sh -- prints the directory holding upstream LMDB 0.9.36's mdb.c,
# midl.c and lmdb.h, fetched from py-lmdb 3.0.0's sdist (its lib/ folder is upstream's
# source, without py-lmdb's patches) into build/pylmdb-3.0.0 (the cache
# tests/python/pylmdb_shim/run_suite.sh shares).  Never committed: fetched with pip from the
# package registry at test time.  Exit status 1, with the reason on stderr, when it cannot.
#
#   ref=$(tests/c/ref/lmdb0936.sh) && cc prog.c -I"$ref" "$ref/mdb.c" "$ref/midl.c" -pthread
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
cache="${PYLMDB_CACHE:-$root/build/pylmdb-3.0.0}"
py="${PYTHON:-python3}"
lib="$cache/lmdb-3.0.0/lib"
if [[ ! -f "$lib/mdb.c" ]]; then
  mkdir -p "$cache"
  if [[ ! -f "$cache/lmdb-3.0.0.tar.gz" ]]; then
    "$py" -m pip download -q --no-deps --no-binary :all: lmdb==3.0.0 -d "$cache" >/dev/null 2>&1 ||
      { echo "lmdb0936.sh: cannot download py-lmdb 3.0.0's sdist" >&2; exit 1; }
  fi
  tar xzf "$cache/lmdb-3.0.0.tar.gz" -C "$cache"
fi
grep -q 'MDB_VERSION_PATCH[[:space:]]*36' "$lib/lmdb.h" ||
  { echo "lmdb0936.sh: $lib/lmdb.h is not LMDB 0.9.36" >&2; exit 1; }
echo "$lib"
