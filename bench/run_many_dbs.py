#!/usr/bin/env python3
"""run_many_dbs.py -- the many-named-databases benchmark (bench/many_dbs.c) for our library
and Debian's liblmdb in one run.  A benchmark, not a test: it prints figures; with --check
it also exits 1 when our 10,000-DB/10-DB ratio misses the target.

    run_many_dbs.py [--rounds 3] [--scale 1.0] [--counts 10,100,1000,10000,100000]
                    [--target 1.5] [--check] [--libs ours,system]

For each DB count, each library runs BEGIN_ITERS x (begin, cursor open, cursor close,
abort) and RENEW_ITERS x (renew, cursor open, cursor close, reset) on one of the DBs,
with all of them open.  Rounds are interleaved (round 1: every count, both libraries,
the order of the libraries alternating; then round 2 ...), each run in a fresh process
and environment, and the median of the rounds is reported (100,000 DBs: one round by
default, --rounds-100k to change).

Default iterations: 1,000,000 for up to 1,000 DBs, 100,000 for 10,000 DBs and 2,000 for
100,000 DBs (LMDB 0.9's per-transaction cost grows with the number of open DBs, and
creating 100,000 DBs alone takes ~20 s there), times --scale.  The table gives the time
per iteration in microseconds, which is also the time in seconds of 1,000,000 iterations
(the unit of the original report), so rows with different iteration counts compare.  The
ratio is each library's 10,000-DB time per iteration over its own 10-DB time per iteration.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import build  # noqa: E402

DEFAULT_ITERS = {10: 1_000_000, 100: 1_000_000, 1000: 1_000_000, 10000: 100_000, 100000: 2_000}


def run(exe, ndbs, bi, ri):
    d = tempfile.mkdtemp(prefix="many-dbs-")
    try:
        r = subprocess.run(
            [exe, d, str(ndbs), str(bi), str(ri)], capture_output=True, text=True, timeout=3600
        )
        if r.returncode:
            raise RuntimeError(f"{exe} {ndbs}: exit {r.returncode}: {r.stderr.strip()}")
        return {k: v for k, v in (f.split("=") for f in r.stdout.split())}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--rounds-100k",
        type=int,
        default=1,
        help="rounds for 100,000 DBs (default 1: creating them takes 15-90 s "
        "per library and round, the dbi_open scan being quadratic)",
    )
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every iteration count")
    ap.add_argument("--counts", default="10,100,1000,10000,100000")
    ap.add_argument("--libs", default="ours,system")
    ap.add_argument("--target", type=float, default=1.5)
    ap.add_argument(
        "--check", action="store_true", help="exit 1 if our 10,000/10 ratio exceeds --target"
    )
    a = ap.parse_args()
    counts = [int(c) for c in a.counts.split(",")]
    libs = a.libs.split(",")
    exes = {lib: build("many_dbs.c", lib) for lib in libs}
    for lib, (exe, so) in exes.items():
        print(f"{lib:6s}: {exe} -> {so}")
    iters = {n: max(1, int(DEFAULT_ITERS.get(n, 100_000) * a.scale)) for n in counts}
    res = {(lib, n): [] for lib in libs for n in counts}
    t_start = time.monotonic()
    rounds_for = {n: (min(a.rounds, a.rounds_100k) if n >= 100000 else a.rounds) for n in counts}
    for rnd in range(a.rounds):
        for n in counts:
            if rnd >= rounds_for[n]:
                continue
            order = libs if (rnd + counts.index(n)) % 2 == 0 else libs[::-1]
            for lib in order:
                out = run(exes[lib][0], n, iters[n], iters[n])
                res[(lib, n)].append(out)
                print(
                    f"  round {rnd + 1} {lib:6s} {n:>6} DBs: setup {float(out['setup']):.2f}s"
                    f" begin {float(out['begin']):.3f}s renew {float(out['renew']):.3f}s"
                    f" ({iters[n]} iterations each)",
                    flush=True,
                )

    def per_iter(lib, n, mode):  # median seconds per iteration
        return statistics.median(float(o[mode]) / float(o[mode + "_iters"]) for o in res[(lib, n)])

    print()
    print(
        f"Median of {a.rounds} interleaved rounds ({a.rounds_100k} for 100,000 DBs).  "
        f"Time per iteration in microseconds\n(= seconds per 1,000,000 iterations, the "
        f"unit of the original report)"
    )
    hdr = f"{'DBs':>7} {'iters':>9}"
    for lib in libs:
        hdr += f" | {lib + ' begin/abort':>18} {lib + ' renew/reset':>18}"
    print(hdr)
    for n in counts:
        row = f"{n:>7} {iters[n]:>9}"
        for lib in libs:
            row += f" | {per_iter(lib, n, 'begin') * 1e6:>18.3f}"
            row += f" {per_iter(lib, n, 'renew') * 1e6:>18.3f}"
        print(row)
    rc = 0
    if 10 in counts and 10000 in counts:
        print()
        for lib in libs:
            for mode in ("begin", "renew"):
                ratio = per_iter(lib, 10000, mode) / per_iter(lib, 10, mode)
                verdict = ""
                if lib == "ours":
                    ok = ratio <= a.target
                    verdict = f"  target <= {a.target}x: {'met' if ok else 'MISSED'}"
                    if not ok and a.check:
                        rc = 1
                print(f"{lib:6s} {mode:5s}: 10,000 DBs / 10 DBs = {ratio:8.1f}x{verdict}")
    big = max(counts)
    if big >= 100:
        print(
            f"\nOpening by name, {big:,} DBs (median over rounds, microseconds): creating the"
            f" 10th / the {big:,}th in one txn, and opening the 10th / the {big:,}th again"
        )
        for lib in libs:

            def med(key, lib=lib):
                return statistics.median(float(o[key]) for o in res[(lib, big)]) * 1e6

            cf, cl = med("create_first"), med("create_last")
            rf, rl = med("reopen_first"), med("reopen_last")
            print(
                f"{lib:6s} create {cf:8.3f} / {cl:8.3f} = {cl / cf:7.1f}x   "
                f"reopen {rf:8.3f} / {rl:8.3f} = {rl / rf:7.1f}x"
            )
    print(f"\nrun_many_dbs: {time.monotonic() - t_start:.0f}s in all")
    return rc


if __name__ == "__main__":
    sys.exit(main())
