#!/usr/bin/env python3
"""catalogue.py -- db_bench's workloads on our engine and on Debian's liblmdb, one run.
A benchmark, not a test: it prints figures and writes them as JSON lines.

    catalogue.py [-n 1000000] [--rounds 5] [--rows PATTERN] [--out FILE] [--markdown]
                 [--baseline CHECKOUT]
    catalogue.py --list

bench/catalogue.c is built twice (benchlib.build): linked to our build/compat/liblmdb.so
("mdb") and to Debian's liblmdb ("lmdb").  Each row of the catalogue is one workload with
its parameters (records, writes per txn, value size, DUPSORT, reader threads); every
round runs every row once on each library in a fresh process and a fresh environment,
the order of the two libraries alternating from round to round.  Data lives on tmpfs
(/dev/shm) with MDB_NOSYNC, except the durable row, which commits with fsync on the disk
under build/.

Per row it prints each library's median ops/s, the median of the per-round ratios
mdb/lmdb with their spread (min..max), and, as medians over the rounds, user and system
CPU microseconds per operation, minor page faults per operation, peak RSS and the data
file's size (and pages in use) after the run.  The ratio of neighbouring runs is the figure
that means something on a shared machine; one absolute time means little.

--baseline CHECKOUT adds a third engine, "base": our library as built in another checkout
(e.g. a git worktree of an older commit, after `make lib` there), run in the same
interleaved rounds, so a change is measured before and after in one run; the table then
also gives mdb/base.

Results go to --out (default build/bench/results/catalogue-<date>.jsonl): one flat row
per (row, engine, round, metric) with provenance (git commit, engine version, date,
cores, kernel, the other processes' CPU share during the run), as the lab writes them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import OtherCpu, base, median_spread, write_jsonl  # noqa: E402

from benchlib import BUILD, build  # noqa: E402

ENGINES = {"mdb": "ours", "lmdb": "system"}


@dataclass(frozen=True)
class Row:
    name: str
    workload: str
    n: int
    batch: int = 1000
    valsize: int = 100
    dupsort: bool = False
    threads: int = 1
    durable: bool = False
    notls: bool = False
    warm: bool = False

    def args(self) -> list[str]:
        a = [self.workload, str(self.n), str(self.batch), str(self.valsize)]
        if self.dupsort:
            a.append("dupsort")
        if self.durable:
            a.append("sync")
        if self.notls:
            a.append("notls")
        if self.warm:
            a.append("warm")
        if self.workload == "readwhilewriting":
            a.append(f"threads={self.threads}")
        return a


def catalogue(n: int) -> list[Row]:
    """The rows; n is the record count of the main rows (1M by default, 10M by flag).
    Rows whose every operation is a commit, and the 4 KiB rows (a file of n x 4 KiB),
    run on a tenth of n; the durable row on 1,000 commits."""
    small = max(n // 10, 1000)
    rows = [
        Row("fillseq/b1000", "fillseq", n),
        Row("fillseq/one-txn", "fillseq", n, batch=0),
        Row("fillseqappend/b1000", "fillseqappend", n),
        Row("fillseqappend/one-txn", "fillseqappend", n, batch=0),
        Row("fillrandom/b1", "fillrandom", small, batch=1),
        Row("fillrandom/b100", "fillrandom", n, batch=100),
        Row("fillrandom/b1000", "fillrandom", n),
        Row("fillrandom/one-txn", "fillrandom", n, batch=0),
        Row("overwrite/b1000", "overwrite", n),
        Row("overwrite/b1", "overwrite", small, batch=1),
        Row("deleterandom/b1000", "deleterandom", n),
        Row("readrandom", "readrandom", n),
        Row("readtxn", "readtxn", n),
        Row("readtxn/notls", "readtxn", n, notls=True),
        Row("readseq", "readseq", n),
        Row("readreverse", "readreverse", n),
        Row("readseq/warm", "readseq", n, warm=True),
        Row("readreverse/warm", "readreverse", n, warm=True),
        Row("seekrandom", "seekrandom", n),
    ]
    rows += [Row(f"readwhilewriting/t{t}", "readwhilewriting", n, threads=t) for t in (1, 2, 4, 8)]
    rows += [
        Row("fillrandom-4k/b1000", "fillrandom", small, valsize=4096),
        Row("fillseqappend-4k/b1000", "fillseqappend", small, valsize=4096),
        Row("readrandom-4k", "readrandom", small, valsize=4096),
        Row("fillrandom-dupsort/b1000", "fillrandom", n, dupsort=True),
        Row("readrandom-dupsort", "readrandom", n, dupsort=True),
        Row("readseq-dupsort", "readseq", n, dupsort=True),
        Row("readreverse-dupsort", "readreverse", n, dupsort=True),
        Row("readseq-dupsort/warm", "readseq", n, dupsort=True, warm=True),
        Row("readreverse-dupsort/warm", "readreverse", n, dupsort=True, warm=True),
        Row("deleterandom-dupsort/b1000", "deleterandom", n, dupsort=True),
        Row("durable-commits", "synccommit", 1000, batch=1, durable=True),
    ]
    return rows


def run_once(exe: str, row: Row, seed: int) -> dict:
    parent = os.path.join(BUILD, "bench", "disk") if row.durable else "/dev/shm"
    if not os.path.isdir(parent):
        os.makedirs(parent, exist_ok=True)
    d = tempfile.mkdtemp(prefix="catalogue-", dir=parent)
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with OtherCpu() as other:
            t0 = time.monotonic()
            r = subprocess.run(
                [exe, d, *row.args(), f"seed={seed}"], capture_output=True, text=True, timeout=3600
            )
            wall = time.monotonic() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            other.finish(own)
        if r.returncode:
            raise RuntimeError(f"{exe} {row.name}: exit {r.returncode}: {r.stderr.strip()}")
        res = json.loads(r.stdout)
        res["other_cpu_share"] = round(other.share, 3)
        res["process_wall_s"] = wall
        return res
    finally:
        shutil.rmtree(d, ignore_errors=True)


METRICS = [
    # (name in the row, how to get it from a run's result, unit)
    ("ops_per_s", lambda r: r["ops_per_s"], "ops/s"),
    ("user_us_per_op", lambda r: r["user_s"] * 1e6 / r["ops"], "us/op"),
    ("sys_us_per_op", lambda r: r["sys_s"] * 1e6 / r["ops"], "us/op"),
    ("minflt_per_op", lambda r: r["minflt"] / r["ops"], "faults/op"),
    ("peak_rss", lambda r: r["maxrss_kib"] * 1024, "bytes"),
    ("file_size", lambda r: r["file_bytes"], "bytes"),
    ("used_size", lambda r: r["used_bytes"], "bytes"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="records of the main rows")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", default="*", help="fnmatch pattern(s), comma-separated")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", help="JSON lines file (appended to)")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--list", action="store_true", help="list the rows and exit")
    ap.add_argument("--baseline", help="another checkout whose build/ has our library")
    a = ap.parse_args()
    pats = a.rows.split(",")
    rows = [r for r in catalogue(a.n) if any(fnmatch.fnmatch(r.name, p) for p in pats)]
    if a.list:
        for r in rows:
            print(f"{r.name:28} {' '.join(r.args())}")
        return 0
    if not rows:
        sys.exit(f"catalogue: no row matches {a.rows!r} (see --list)")
    if not os.path.isdir("/dev/shm"):
        sys.exit("catalogue: /dev/shm (tmpfs) is missing")
    exes = {eng: build("catalogue.c", lib)[0] for eng, lib in ENGINES.items()}
    if a.baseline:
        exes["base"] = build("catalogue.c", "ours", root=os.path.abspath(a.baseline))[0]
    versions = {
        eng: subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
        for eng, exe in exes.items()
    }
    for eng, exe in exes.items():
        print(f"# {eng:5s}: {exe} ({versions[eng]})")
    date = dt.date.today().isoformat()
    out = a.out or os.path.join(BUILD, "bench", "results", f"catalogue-{date}.jsonl")
    engines = list(exes)
    res: dict[str, dict[str, list[dict]]] = {r.name: {e: [] for e in engines} for r in rows}
    t_start = time.monotonic()
    for rnd in range(a.rounds):
        for row in rows:
            shift = (rnd + rows.index(row)) % len(engines)
            order = engines[shift:] + engines[:shift]
            for eng in order:
                r = run_once(exes[eng], row, a.seed)
                res[row.name][eng].append(r)
                prov = base(
                    experiment="catalogue",
                    row=row.name,
                    workload=row.workload,
                    engine=eng,
                    engine_version=versions[eng],
                    round=rnd + 1,
                    size=row.n,
                    batch=row.batch,
                    value_size=row.valsize,
                    dupsort=row.dupsort,
                    threads=row.threads,
                    durable=row.durable,
                    other_cpu_share=r["other_cpu_share"],
                )
                write_jsonl(
                    out,
                    [dict(prov, metric=m, value=get(r), unit=u) for m, get, u in METRICS],
                )
        print(
            f"# round {rnd + 1}/{a.rounds} done ({time.monotonic() - t_start:.0f} s)",
            flush=True,
        )
    print_table(rows, res, a, out)
    return 0


def med(runs: list[dict], get) -> float:
    return statistics.median(get(r) for r in runs)


def cpu(runs: list[dict]) -> float:
    """median user + system CPU microseconds per operation"""
    return med(runs, lambda r: (r["user_s"] + r["sys_s"]) * 1e6 / r["ops"])


def print_table(rows: list[Row], res, a, out: str) -> None:
    mib = 1 << 20
    head = [
        "row",
        "records",
        "mdb ops/s",
        "lmdb ops/s",
        "mdb/lmdb median (min..max)",
        "faults/op mdb / lmdb (/ base)",
        "user+sys us/op mdb / lmdb",
        "peak RSS MiB mdb / lmdb",
        "file MiB mdb / lmdb",
        "other CPU",
    ]
    base_runs = "base" in res[rows[0].name]
    if base_runs:
        head[5:5] = ["base ops/s", "mdb/base median (min..max)"]
    lines = []
    for row in rows:
        m, lm = res[row.name]["mdb"], res[row.name]["lmdb"]
        ratios = [x["ops_per_s"] / y["ops_per_s"] for x, y in zip(m, lm)]

        other = max(r["other_cpu_share"] for r in m + lm)
        cells = [
            row.name,
            f"{row.n:,}",
            f"{med(m, lambda r: r['ops_per_s']):,.0f}",
            f"{med(lm, lambda r: r['ops_per_s']):,.0f}",
            median_spread(ratios),
            f"{med(m, lambda r: r['minflt'] / r['ops']):.3f} / "
            f"{med(lm, lambda r: r['minflt'] / r['ops']):.3f}",
            f"{cpu(m):.2f} / {cpu(lm):.2f}",
            f"{med(m, lambda r: r['maxrss_kib']) / 1024:.0f} / "
            f"{med(lm, lambda r: r['maxrss_kib']) / 1024:.0f}",
            f"{med(m, lambda r: r['file_bytes']) / mib:.1f} / "
            f"{med(lm, lambda r: r['file_bytes']) / mib:.1f}",
            f"{other:.2f}",
        ]
        if base_runs:
            b = res[row.name]["base"]
            cells[5:5] = [
                f"{med(b, lambda r: r['ops_per_s']):,.0f}",
                median_spread([x["ops_per_s"] / y["ops_per_s"] for x, y in zip(m, b)]),
            ]
            cells[7] = cells[7] + f" / {med(b, lambda r: r['minflt'] / r['ops']):.3f}"
        lines.append(cells)
    print(f"\n{a.rounds} interleaved rounds, medians; results in {out}")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for ln in lines:
            print("| " + " | ".join(ln) + " |")
        return
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    for ln in lines:
        print("  ".join(c.ljust(w) for c, w in zip(ln, widths)))


if __name__ == "__main__":
    sys.exit(main())
