#!/usr/bin/env python3
"""Throughput of mdb (both backends) against py-lmdb, in one run.

Not a timed test: run it by hand.  Workload: N keys (default 1,000,000) of 16
bytes (big-endian counters) with 100-byte values, map_size 1 GiB, default
durability, one write transaction per put phase (commit included).

    python bench/py_bench.py [-n N] [--repeat R] [--impl mdb-cext,mdb-cffi,py-lmdb]

After one unrecorded warm-up run of each implementation, rounds are
interleaved: each round runs every implementation once, the order
rotating from round to round, so a noisy neighbour slows all of them alike.
Prints ops/s (median of R rounds) per operation and implementation, and for each
mdb backend the median of its per-round ratios to py-lmdb with their spread
(min..max).  The conditions (machine, Python, engines) are printed first.
py-lmdb is skipped if it is not installed.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import shutil
import statistics
import struct
import sys
import tempfile
import time
from typing import Any, Callable

from benchlib import (
    print_round,
    ratio_summary,
)  # bench/ is the script's directory, first on sys.path


def impls(names: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        try:
            if name == "py-lmdb":
                import lmdb

                if hasattr(lmdb, "backend_features"):
                    raise ImportError("lmdb resolves to the mdb shim")
                out[name] = lmdb
            else:
                import mdb

                out[name] = mdb.get_backend(name.split("-", 1)[1])
        except ImportError as exc:
            print(f"# skipping {name}: {exc}", file=sys.stderr)
    return out


def timed(fn: Callable[[], int]) -> float:
    gc.disable()
    try:
        t0 = time.perf_counter()
        n = fn()
        return n / (time.perf_counter() - t0)
    finally:
        gc.enable()


def run_once(
    mod: Any, n: int, keys: list[bytes], order: list[bytes], val: bytes
) -> dict[str, float]:
    res: dict[str, float] = {}
    d = tempfile.mkdtemp(prefix="py_bench")
    try:
        env = mod.open(os.path.join(d, "seq"), map_size=1 << 30)

        def put_all(env: Any, ks: list[bytes]) -> int:
            with env.begin(write=True) as t:
                put = t.put
                for k in ks:
                    put(k, val)
            return n

        res["put sequential"] = timed(lambda: put_all(env, keys))

        def get_rand() -> int:
            with env.begin() as t:
                get = t.get
                for k in order:
                    get(k)
            return n

        res["get random"] = timed(get_rand)

        def iterate() -> int:
            c = 0
            with env.begin() as t:
                for _k, _v in t.cursor():
                    c += 1
            return c

        res["cursor iterate"] = timed(iterate)
        env.close()

        env = mod.open(os.path.join(d, "rand"), map_size=1 << 30)
        res["put random"] = timed(lambda: put_all(env, order))
        env.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--impl", default="mdb-cext,mdb-cffi,py-lmdb")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    mods = impls(args.impl.split(","))
    keys = [struct.pack(">QQ", 0, i) for i in range(args.n)]
    order = keys[:]
    random.Random(args.seed).shuffle(order)
    val = b"v" * 100
    import mdb

    print(
        f"# {platform.node()} {platform.machine()} cpus={os.cpu_count()} "
        f"python={platform.python_version()} n={args.n} repeat={args.repeat}"
    )
    print(f"# mdb engine={mdb.backend_features['engine']} version={mdb.version()}")
    if "py-lmdb" in mods:
        print(f"# py-lmdb {mods['py-lmdb'].__version__} engine={mods['py-lmdb'].version()}")
    names = list(mods)
    # One unrecorded full-size run each first: the first run in a process grows the heap
    # (dirty pages of an N-key txn) and warms the page cache for whoever comes next.
    for name in names:
        run_once(mods[name], args.n, keys, order, val)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for rnd in range(args.repeat):
        shift = rnd % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(run_once(mods[name], args.n, keys, order, val))
        print_round(rnd, {name: runs[name][-1] for name in names})
    ops = list(runs[names[0]][0])
    base = "py-lmdb" if "py-lmdb" in runs else None
    others = [n for n in names if n != base]
    print(
        f"{'operation (ops/s)':<20}"
        + "".join(f"{n:>14}" for n in names)
        + ("".join(f"{n + '/py-lmdb median (min..max)':>38}" for n in others) if base else "")
    )
    for op in ops:
        line = f"{op:<20}" + "".join(
            f"{statistics.median(r[op] for r in runs[n]) / 1e6:>13.2f}M" for n in names
        )
        if base:
            for n in others:
                ratios = [a[op] / b[op] for a, b in zip(runs[n], runs[base])]
                line += f"{ratio_summary(ratios):>38}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
