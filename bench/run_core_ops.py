#!/usr/bin/env python3
"""run_core_ops.py -- the C core against Debian's liblmdb on bench/core_ops.c, one run.
A benchmark, not a test: it prints figures.

    run_core_ops.py [-n 1000000] [--rounds 5] [--libs ours,system]
    run_core_ops.py --callgrind [-n 20000]


The same program is built twice (benchlib.build) and run in fresh processes and fresh
environments, rounds interleaved with the order of the libraries alternating.  For each
operation it prints each library's median ops/s and the median of the per-round ratios
ours/system with their spread (min..max): on a shared machine one absolute time means
little, the ratio of neighbouring runs means more.

--callgrind runs each library's program once under valgrind's callgrind instead and
prints the instructions executed per operation in each phase (the phases are separate
functions of core_ops.c): a count that does not depend on the machine's load, for
following the CPU cost of a change (cache misses do not show in it).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import build, print_round, ratio_summary  # noqa: E402


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


PHASES = ("put_sequential", "get_random", "cursor_iterate", "put_random")


def callgrind(exe, n, seed):
    """Instructions per operation of each phase, from callgrind's inclusive costs."""
    d = tempfile.mkdtemp(prefix="core-ops-cg-")
    try:
        out = os.path.join(d, "cg.out")
        r = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                exe,
                d,
                str(n),
                str(seed),
            ],
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=d,
        )
        if r.returncode:
            raise RuntimeError(f"callgrind {exe}: exit {r.returncode}: {r.stderr[-500:]}")
        ann = subprocess.run(
            ["callgrind_annotate", "--inclusive=yes", out],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)
    per_op = {}
    for phase in PHASES:
        m = re.search(r"^\s*([\d,]+) \([^)]*\)\s+\S*:phase_" + phase + r"\b", ann, re.M)
        if not m:
            raise RuntimeError(f"callgrind: no cost for phase_{phase} of {exe}")
        per_op[phase] = int(m.group(1).replace(",", "")) / n
    return per_op


def print_table(title, libs, ops, cell, ratio_head, ratio):
    """One row per operation: cell(lib, op) per library, then ratio(op) if two libraries."""
    print(f"\n{title}")
    hdr = f"{'operation':<16}" + "".join(f"{lib:>12}" for lib in libs)
    if len(libs) == 2:
        hdr += f"   {libs[0]}/{libs[1]}" + (f" {ratio_head}" if ratio_head else "")
    print(hdr)
    for op in ops:
        row = f"{op:<16}" + "".join(f"{cell(lib, op):>12}" for lib in libs)
        print(row + (f"   {ratio(op)}" if len(libs) == 2 else ""))


def main_callgrind(a, libs, exes):
    res = {lib: callgrind(exes[lib][0], a.n, a.seed) for lib in libs}
    print_table(
        f"{a.n} keys; instructions per operation (callgrind, one run each)",
        libs,
        PHASES,
        lambda lib, op: f"{res[lib][op]:.0f}",
        "",
        lambda op: f"{res[libs[0]][op] / res[libs[1]][op]:.2f}",
    )
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--libs", default="ours,system")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument(
        "--callgrind",
        action="store_true",
        help="count instructions under callgrind instead of timing (-n 20000)",
    )
    a = ap.parse_args()
    if a.callgrind and a.n == ap.get_default("n"):
        a.n = 20000
    libs = a.libs.split(",")
    exes = {lib: build("core_ops.c", lib) for lib in libs}
    for lib, (exe, so) in exes.items():
        print(f"# {lib:6s}: {exe} -> {so}")
    if a.callgrind:
        return main_callgrind(a, libs, exes)
    res = {lib: [] for lib in libs}
    for rnd in range(a.rounds):
        for lib in libs if rnd % 2 == 0 else libs[::-1]:
            res[lib].append(run(exes[lib][0], a.n, a.seed))
        print_round(rnd, {lib: res[lib][-1] for lib in libs})

    def ratios(op):
        return ratio_summary([x[op] / y[op] for x, y in zip(res[libs[0]], res[libs[1]])])

    print_table(
        f"{a.n} keys of 16 B, values of 100 B; median ops/s of {a.rounds} rounds",
        libs,
        list(res[libs[0]][0]),
        lambda lib, op: f"{statistics.median(r[op] for r in res[lib]) / 1e6:.2f}M",
        "median (min..max)",
        ratios,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
