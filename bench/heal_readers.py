"""heal_readers.py -- issue 13 part 2's must-show figure: a reader process that dies
holding a snapshot, then many update txns with no reader_check call.

Scenario (per engine, in a fresh directory): 2,000 keys with 100-byte values; a reader
PROCESS opens the env, takes a snapshot and is SIGKILLed; then N update txns (one put
each, sync off) run in this process.  Prints data.mdb's size after the first 1,000 txns
and after all N, for mdb (ours) and for LMDB (py-lmdb's bundled 0.9.x).

    python bench/heal_readers.py [--txns 20000] [--engines mdb,lmdb]

Exits 1 when ours grows more than 2x between the two points.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

NKEYS = 2000
FIRST = 1000
MIB = 1 << 20

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
)
from support.childproc import killed_at_exit  # noqa: E402  (as tests/python/test_heal_readers.py)


def _reader_proc(module: str, path: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(f"""
        import sys, time, {module} as m
        env = m.open({path!r}, map_size=1 << 30)
        txn = env.begin()
        txn.get(b"k00000")
        print("ready", flush=True)
        time.sleep(120)
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def run(module: str, txns: int, workdir: str) -> dict[str, float]:
    m = importlib.import_module(module)
    path = os.path.join(workdir, module)
    os.makedirs(path)
    data = os.path.join(path, "data.mdb")
    env = m.open(path, map_size=1 << 30, sync=False)
    try:
        with env.begin(write=True) as t:
            for i in range(NKEYS):
                t.put(b"k%05d" % i, b"x" * 100)
        with killed_at_exit(_reader_proc(module, path)) as p:
            if p.stdout is None or p.stdout.readline().strip() != "ready":
                raise SystemExit(f"{module}: the reader process did not start")
        t0 = time.perf_counter()
        first = 0
        for i in range(txns):
            with env.begin(write=True) as t:
                t.put(b"k%05d" % (i % NKEYS), (b"%07d" % i) * 14)
            if i + 1 == FIRST:
                first = os.path.getsize(data)
        secs = time.perf_counter() - t0
        last = os.path.getsize(data)
        pid_left = str(p.pid) in env.readers()
    finally:
        env.close()
    return {"first": first, "last": last, "secs": secs, "slot_left": pid_left}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--txns", type=int, default=20000)
    ap.add_argument("--engines", default="mdb,lmdb")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="heal-readers-")
    rc = 0
    try:
        print(
            f"{NKEYS} keys, reader process SIGKILLed holding a snapshot, "
            f"{args.txns} update txns, no reader_check"
        )
        print(
            f"{'engine':<22} {'after 1,000':>12} {'after ' + format(args.txns, ','):>14}"
            f" {'growth':>8} {'dead slot left':>15} {'secs':>6}"
        )
        for name in args.engines.split(","):
            try:
                r = run(name, args.txns, work)
            except ImportError as exc:
                print(f"{name:<22} (not available: {exc})")
                continue
            version = ".".join(map(str, importlib.import_module(name).version()))
            label = "mdb (ours)" if name == "mdb" else f"LMDB (py-lmdb {version})"
            growth = r["last"] / r["first"]
            print(
                f"{label:<22} {r['first'] / MIB:>9.1f} MiB {r['last'] / MIB:>11.1f} MiB"
                f" {growth:>7.2f}x {str(r['slot_left']):>15} {r['secs']:>6.1f}"
            )
            if name == "mdb" and growth > 2.0:
                rc = 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
