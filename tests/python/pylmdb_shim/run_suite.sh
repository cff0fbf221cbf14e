#!/usr/bin/env bash
# Run py-lmdb 3.0.0's own test files against mdb, once per backend, through the
# lmdb -> mdb shim in this folder.  The sdist is downloaded with pip (cached in
# $PYLMDB_CACHE, default build/pylmdb-3.0.0); it is never committed.
#
#   tests/python/pylmdb_shim/run_suite.sh [cext|cffi ...] [-- extra pytest args]
#
# Excluded files and tests are listed in EXCLUDES.md beside this script, each
# with its reason; this script reads the "deselect" lines from there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cache="${PYLMDB_CACHE:-$root/build/pylmdb-3.0.0}"
py="${PYTHON:-python3}"
backends=()
while [[ $# -gt 0 && "$1" != "--" ]]; do backends+=("$1"); shift; done
[[ "${1:-}" == "--" ]] && shift
[[ ${#backends[@]} -eq 0 ]] && backends=(cext cffi)

if [[ ! -d "$cache/tests" ]]; then
  mkdir -p "$cache"
  "$py" -m pip download --no-deps --no-binary :all: lmdb==3.0.0 -d "$cache" >/dev/null
  tar xzf "$cache"/lmdb-3.0.0.tar.gz -C "$cache"
  cp -r "$cache/lmdb-3.0.0/tests" "$cache/tests"
fi

# excludes PREFIX: the pytest arguments of EXCLUDES.md's lines "- PREFIX`ignore` `FILE`" and
# "- PREFIX`deselect` `TEST`" (PREFIX "" for every backend, "cext: " for one)
excludes() {
  local kind what _
  while read -r kind what _; do
    case "$kind" in
      ignore) printf '%s\0%s\0' --ignore "$cache/tests/$what" ;;
      deselect) printf '%s\0%s\0' --deselect "tests/$what" ;;
    esac
  done < <(sed -n "s/^- $1\`\(ignore\|deselect\)\` \`\([^\`]*\)\`.*/\1 \2/p" "$here/EXCLUDES.md")
}

args=()
while IFS= read -r -d '' a; do args+=("$a"); done < <(excludes "")

status=0
for b in "${backends[@]}"; do
  echo "=== py-lmdb 3.0.0 suite against mdb (MDB_BACKEND=$b) ==="
  bargs=()
  while IFS= read -r -d '' a; do bargs+=("$a"); done < <(excludes "$b: ")
  (cd "$cache" && MDB_BACKEND=$b LMDB_FORCE_SYSTEM=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" \
     "$py" -m pytest -q -rfE -p no:cacheprovider -m "" -c /dev/null --rootdir "$cache" \
     "${args[@]}" ${bargs[@]+"${bargs[@]}"} "$@" tests) || status=1
done
exit $status
