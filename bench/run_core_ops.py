#!/usr/bin/env python3
"""run_core_ops.py -- the C core against Debian's liblmdb on bench/core_ops.c, one run.
A benchmark, not a test: it prints figures.

    run_core_ops.py [-n 1000000] [--rounds 5] [--libs ours,system]

The same program is built twice (benchlib.build) and run in fresh processes and fresh
environments, rounds interleaved with the order of the libraries alternating.  For each
operation it prints each library's median ops/s and the median of the per-round ratios
ours/system with their spread (min..max): on a shared machine one absolute time means
little, the ratio of neighbouring runs means more.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import build, ratio_summary  # noqa: E402


def run(exe, n, seed):
    d = tempfile.mkdtemp(prefix="core-ops-")
    try:
        r = subprocess.run(
            [exe, d, str(n), str(seed)], capture_output=True, text=True, timeout=3600
        )
        if r.returncode:
            raise RuntimeError(f"{exe}: exit {r.returncode}: {r.stderr.strip()}")
        return {name: float(v) for name, v in (ln.split() for ln in r.stdout.splitlines())}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--libs", default="ours,system")
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    libs = a.libs.split(",")
    exes = {lib: build("core_ops.c", lib) for lib in libs}
    for lib, (exe, so) in exes.items():
        print(f"# {lib:6s}: {exe} -> {so}")
    res = {lib: [] for lib in libs}
    for rnd in range(a.rounds):
        for lib in libs if rnd % 2 == 0 else libs[::-1]:
            res[lib].append(run(exes[lib][0], a.n, a.seed))
        print(
            f"# round {rnd + 1}: "
            + "  ".join(
                f"{lib} " + " ".join(f"{v / 1e6:.2f}M" for v in res[lib][-1].values())
                for lib in libs
            ),
            flush=True,
        )
    ops = list(res[libs[0]][0])
    print(f"\n{a.n} keys of 16 B, values of 100 B; median ops/s of {a.rounds} rounds")
    hdr = f"{'operation':<16}" + "".join(f"{lib:>12}" for lib in libs)
    if len(libs) == 2:
        hdr += f"   {libs[0]}/{libs[1]} median (min..max)"
    print(hdr)
    for op in ops:
        row = f"{op:<16}" + "".join(
            f"{statistics.median(r[op] for r in res[lib]) / 1e6:>11.2f}M" for lib in libs
        )
        if len(libs) == 2:
            ratios = [x[op] / y[op] for x, y in zip(res[libs[0]], res[libs[1]])]
            row += "   " + ratio_summary(ratios)
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
