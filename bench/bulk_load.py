"""bulk_load.py -- bulk loading (issue 13 part 3) against LMDB's append loops.

Two figures, each from interleaved rounds (the machine is shared: a single absolute time
means little, the per-round ratio does):

* Python: N sorted records (16-byte keys, 100-byte values, default 1,000,000) into an
  empty database in one write txn: py-lmdb's ``put(append=True)`` loop (real LMDB 0.9.36)
  against mdb's ``Transaction.load_sorted``.  mdb's own ``put(append=True)`` loop is
  timed too, for context.
* C: the same records (default 10,000,000) with an ``MDB_APPEND`` put loop on Debian's
  liblmdb (0.9.24) against ``mdbcore_bulk_load`` on our core (bench/bulk_load.c).

Both print the median ratio (LMDB time / ours) with its spread, and the page counts of
the databases, so "at least as full" can be read off.  Environments are MDB_NOSYNC.

    python bench/bulk_load.py [--py-records N] [--c-records N] [--rounds R] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable

from benchlib import BUILD, HERE, ROOT, build, ratio_summary


def py_records(n: int) -> list[tuple[bytes, bytes]]:
    value = b"v" * 100
    return [(i.to_bytes(16, "big"), value) for i in range(n)]


def py_round(
    name: str, fn: Callable[[Any, list[tuple[bytes, bytes]]], None], mod: Any, path: str, recs
) -> tuple[float, dict[str, int]]:
    shutil.rmtree(path, ignore_errors=True)
    env = mod.open(path, map_size=len(recs) * 400 + (64 << 20), sync=False)
    t0 = time.perf_counter()
    with env.begin(write=True) as txn:
        fn(txn, recs)
    secs = time.perf_counter() - t0
    with env.begin() as txn:
        st = txn.stat()
    env.close()
    shutil.rmtree(path, ignore_errors=True)
    if st["entries"] != len(recs):
        sys.exit(f"{name}: {st['entries']} entries, want {len(recs)}")
    return secs, {k: st[k] for k in ("leaf_pages", "branch_pages", "depth")}


def put_append_loop(txn: Any, recs: list[tuple[bytes, bytes]]) -> None:
    put = txn.put
    for k, v in recs:
        put(k, v, append=True)


def load_sorted(txn: Any, recs: list[tuple[bytes, bytes]]) -> None:
    txn.load_sorted(recs)


def report(
    times: dict[str, list[float]],
    n: int,
    base_name: str,
    vs: str,
    width: int,
    extra: dict[str, str],
) -> None:
    """One line per run (in the order of times): median seconds, records per second, the
    speed-up against base_name's round by round, and extra[name]."""
    base = times[base_name]
    for name, secs in times.items():
        med = statistics.median(secs)
        ratios = [b / t for b, t in zip(base, secs)]
        print(
            f"  {name:{width}s} median {med:6.3f} s  {n / med / 1e6:5.2f} M rec/s  "
            f"speed-up vs {vs} {ratio_summary(ratios)}  {extra[name]}"
        )


def python_part(n: int, rounds: int, work: str) -> None:
    import lmdb

    import mdb

    if not hasattr(mdb.Transaction, "load_sorted"):
        sys.exit("this mdb build has no load_sorted (it needs the mdb core)")
    recs = py_records(n)
    path = os.path.join(work, "py")
    runs = [
        ("py-lmdb put(append=True)", put_append_loop, lmdb),
        ("mdb load_sorted", load_sorted, mdb),
        ("mdb put(append=True)", put_append_loop, mdb),
    ]
    times: dict[str, list[float]] = {name: [] for name, _f, _m in runs}
    pages: dict[str, dict[str, int]] = {}
    print(f"Python: {n:,} sorted records (16-byte keys, 100-byte values), {rounds} rounds")
    for r in range(rounds):
        order = runs if r % 2 == 0 else runs[::-1]
        for name, fn, mod in order:
            secs, pages[name] = py_round(name, fn, mod, path, recs)
            times[name].append(secs)
    extra = {name: f"pages {pages[name]}" for name in pages}
    report(times, n, "py-lmdb put(append=True)", "py-lmdb", 26, extra)


def build_ours_bulk() -> str:
    """bench/bulk_load.c with mdbcore_bulk_load, linked statically to build/libmdbcore.a."""
    out = os.path.join(BUILD, "bench")
    os.makedirs(out, exist_ok=True)
    exe = os.path.join(out, "bulk_load-ours-bulk")
    lib = os.path.join(BUILD, "libmdbcore.a")
    if not os.path.exists(lib):
        sys.exit("build/libmdbcore.a missing: run `make lib`")
    cmd = [
        os.environ.get("CC", "cc"),
        "-O2",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-DWITH_BULK",
        "-I" + os.path.join(ROOT, "src", "mdbcore"),
        os.path.join(HERE, "bulk_load.c"),
        lib,
        "-pthread",
        "-o",
        exe,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"bulk_load.c (ours) failed to build:\n{r.stderr}")
    return exe


def c_part(n: int, rounds: int, work: str) -> None:
    lmdb_exe, lmdb_so = build("bulk_load.c", "system")
    ours_exe = build_ours_bulk()
    path = os.path.join(work, "c")
    runs = [
        ("LMDB MDB_APPEND loop", [lmdb_exe, path, str(n), "append"]),
        ("mdb mdbcore_bulk_load", [ours_exe, path, str(n), "bulk"]),
        ("mdb MDB_APPEND loop", [ours_exe, path, str(n), "append"]),
    ]
    times: dict[str, list[float]] = {name: [] for name, _c in runs}
    lines: dict[str, str] = {}
    print(f"C: {n:,} sorted records, {rounds} rounds; LMDB = {lmdb_so}")
    for r in range(rounds):
        order = runs if r % 2 == 0 else runs[::-1]
        for name, cmd in order:
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode:
                sys.exit(f"{name}: {res.stderr.strip()}")
            out = res.stdout.strip()
            secs = float(out.split()[1])
            times[name].append(secs)
            lines[name] = out.split(", ", 1)[1]
            shutil.rmtree(path, ignore_errors=True)
    report(times, n, "LMDB MDB_APPEND loop", "LMDB", 24, lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--py-records", type=int, default=1_000_000)
    ap.add_argument("--c-records", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--only", choices=["py", "c"], default=None)
    a = ap.parse_args()
    work = a.dir or tempfile.mkdtemp(prefix="bulk-load-")
    os.makedirs(work, exist_ok=True)
    try:
        if a.only in (None, "py"):
            python_part(a.py_records, a.rounds, work)
        if a.only in (None, "c"):
            c_part(a.c_records, a.rounds, work)
    finally:
        if a.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
