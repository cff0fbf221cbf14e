#!/usr/bin/env python3
"""Benchmark: `mdb-cli load --format jsonl` against LMDB's `mdb_load` on the same data.

Question: does loading N JSON lines with mdb-cli run at no less than half the speed of
mdb_load loading the same records in mdb_dump format? (The goal set in issue 5.)

Method:
- Generate N records (default 1,000,000), seeded: 16-byte text keys, values of
  8..120 printable bytes. Write them once as JSON lines and once in mdb_dump's
  bytevalue format (same records, same order).
- Load each into a fresh environment with a real process, timing wall clock:
  `mdb_load -f data.dump DIR` and `python -m mdb_cli -q load --format jsonl -f data.jsonl DIR`
  (and, with --tty, mdb-cli again with stderr on a pseudo-terminal so the progress
  bar is drawn, to show what it costs).
- Check that both environments hold the same records (hash of mdb_dump -p output,
  header excluded), then print records/s and the ratio.
- mdb-cli parses JSON with orjson when it is installed, else with the stdlib json
  module; a run with orjson hidden shows the second case.
- mdb_load 0.9.24 commits, with a sync, every 100 records; mdb-cli commits every
  --batch-size records (50,000 by default). A third run with --batch-size 100 shows
  the loaders with the same commit rhythm.
- --order sorted|shuffled: sorted input lets mdb-cli use the append fast path;
  mdb_load 0.9.24 has no append mode. Run both to see both sides.

This is a measurement that prints figures, not a timed test.

Usage:
  PYTHONPATH=cli python bench/cli_load_bench.py [-n 1000000]   (with mdb installed)
      [--order sorted|shuffled|both] [--tty] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.childproc import run_on_tty  # noqa: E402  (the pty reader tests/cli uses)

MAP_SIZE = 4 << 30


def generate(n: int, order: str, workdir: Path, seed: int = 1) -> tuple[Path, Path]:
    rng = random.Random(seed)
    idx = list(range(n))
    if order == "shuffled":
        rng.shuffle(idx)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 -_.:/"
    jpath = workdir / f"data-{order}.jsonl"
    dpath = workdir / f"data-{order}.dump"
    with open(jpath, "w") as jf, open(dpath, "w") as df:
        df.write(
            "VERSION=3\nformat=bytevalue\ntype=btree\n"
            f"mapsize={MAP_SIZE}\nmaxreaders=126\nHEADER=END\n"
        )
        jbuf: list[str] = []
        dbuf: list[str] = []
        for i in idx:
            key = f"key-{i:012d}"
            value = "".join(rng.choices(alphabet, k=rng.randint(8, 120)))
            jbuf.append(json.dumps({"key": key, "value": value}) + "\n")
            dbuf.append(f" {key.encode().hex()}\n {value.encode().hex()}\n")
            if len(jbuf) >= 10000:
                jf.write("".join(jbuf))
                df.write("".join(dbuf))
                jbuf.clear()
                dbuf.clear()
        jf.write("".join(jbuf))
        df.write("".join(dbuf))
        df.write("DATA=END\n")
    return jpath, dpath


#: runs mdb-cli as if orjson were not installed
STDLIB_JSON = "import sys; sys.modules['orjson'] = None; from mdb_cli.main import main; main()"


def env_for_cli() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "cli")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    return env


def timed(cmd: list[str], tty: bool = False) -> tuple[float, bytes]:
    """Run cmd; return (seconds, stderr). With tty, stderr is a pseudo-terminal."""
    start = time.perf_counter()
    if not tty:
        res = subprocess.run(cmd, capture_output=True, env=env_for_cli())
        took = time.perf_counter() - start
        if res.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{res.stderr.decode(errors='replace')}")
        return took, res.stderr
    code, out = run_on_tty(cmd, env=env_for_cli())
    took = time.perf_counter() - start
    if code != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.decode(errors='replace')}")
    return took, out


def content_hash(path: Path) -> str:
    out = subprocess.run(["mdb_dump", "-p", str(path)], capture_output=True, check=True).stdout
    body = out.split(b"HEADER=END\n", 1)[1]
    return hashlib.sha256(body).hexdigest()[:16]


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def conditions() -> None:
    sys.path.insert(0, str(ROOT / "cli"))
    from mdb_cli import engine

    try:
        import orjson  # noqa: F401

        js = "orjson"
    except ImportError:
        js = "json (stdlib)"
    print(
        f"# machine: {platform.machine()} {platform.system()} {platform.release()}, "
        f"{os.cpu_count()} cpus"
    )
    print(f"# python {platform.python_version()}, {engine.version_text()}, JSON via {js}")
    mdbv = subprocess.run(["mdb_load", "-V"], capture_output=True, text=True)
    print(f"# mdb_load: {(mdbv.stdout or mdbv.stderr).strip()}; commit {git_commit()}")


def load_cmd(
    jpath: Path, dest: Path, *extra: str, prog: tuple[str, ...] = ("-m", "mdb_cli")
) -> list[str]:
    """mdb-cli load --format jsonl of jpath into dest (extra options before --map-size)."""
    return [sys.executable, *prog, "load", "--format", "jsonl", *extra] + [
        "--map-size",
        str(MAP_SIZE),
        "-f",
        str(jpath),
        str(dest),
    ]


def run_one(n: int, order: str, workdir: Path, tty: bool) -> dict[str, float]:
    t0 = time.perf_counter()
    jpath, dpath = generate(n, order, workdir)
    print(
        f"\n## {n:,} records, {order} input (generated in {time.perf_counter() - t0:.1f}s; "
        f"jsonl {jpath.stat().st_size / 1e6:.0f} MB, dump {dpath.stat().st_size / 1e6:.0f} MB)"
    )
    a, b = workdir / f"mdb_load-{order}", workdir / f"mdbcli-{order}"
    a.mkdir()
    t_ref, _ = timed(["mdb_load", "-f", str(dpath), str(a)])
    t_cli, err = timed(load_cmd(jpath, b))
    summary = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
    same = content_hash(a) == content_hash(b)
    rows = {"mdb_load (dump)": t_ref, "mdb-cli load (jsonl)": t_cli}
    # Without orjson (an optional speed-up), the stdlib json module parses the lines:
    e = workdir / f"mdbcli-stdjson-{order}"
    t_std, _ = timed(load_cmd(jpath, e, prog=("-c", STDLIB_JSON)))
    rows["mdb-cli load (jsonl, stdlib json, no orjson)"] = t_std
    # mdb_load 0.9.24 commits (and syncs) every 100 records; the same rhythm for us:
    d = workdir / f"mdbcli-b100-{order}"
    t_b100, _ = timed(load_cmd(jpath, d, "--batch-size", "100"))
    rows["mdb-cli load (jsonl, --batch-size 100 like mdb_load)"] = t_b100
    if tty:
        c = workdir / f"mdbcli-tty-{order}"
        t_tty, shown = timed(load_cmd(jpath, c), tty=True)
        rows["mdb-cli load (jsonl, progress bar on a tty)"] = t_tty
        drew = b"items/s" in shown and b"100%" in shown
        print(f"#   progress bar drawn on the tty: {'yes' if drew else 'NO'}")
    print(f"#   mdb-cli: {summary[0]}")
    print(f"#   same records in both environments: {'yes' if same else 'NO'}")
    print(f"{'loader':56} {'seconds':>8} {'records/s':>12} {'vs mdb_load':>12}")
    for name, t in rows.items():
        print(f"{name:56} {t:8.2f} {n / t:12,.0f} {t_ref / t:11.2f}x")
    ratio = t_ref / t_cli
    verdict = "meets" if ratio >= 0.5 else "MISSES"
    print(f"# mdb-cli runs at {ratio:.2f}x mdb_load's speed: {verdict} the >= 0.5x goal")
    return rows


def main(argv: Optional[list[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="records (default 1,000,000)")
    ap.add_argument("--order", choices=["sorted", "shuffled", "both"], default="both")
    ap.add_argument("--tty", action="store_true", help="also time a run with the progress bar")
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep the files")
    args = ap.parse_args(argv)
    if shutil.which("mdb_load") is None or shutil.which("mdb_dump") is None:
        sys.exit("mdb_load and mdb_dump (Debian lmdb-utils) are needed")
    conditions()
    orders = ["sorted", "shuffled"] if args.order == "both" else [args.order]
    if args.keep:
        work = Path(args.keep)
        work.mkdir(parents=True, exist_ok=True)
        for order in orders:
            run_one(args.n, order, work, args.tty)
        return
    with tempfile.TemporaryDirectory(prefix="cli-load-bench-") as tmp:
        for order in orders:
            run_one(args.n, order, Path(tmp), args.tty)


if __name__ == "__main__":
    main()
