"""salvage_badfiles.py -- how much ``mdb-cli dump --salvage`` recovers from the damaged files
of the bad-file suite (issue 13 part 4), beside Debian's real ``mdb_dump``.

The bad-file harness (tests/c/badfile/test_badfiles.c) writes one valid environment (a main
database, a DUPSORT database with sub-pages and a sub-database, an INTEGERKEY database, a
database of overflow values) and 342 damaged copies of its data.mdb: truncations, zeroed or
altered meta pages, foreign files, random byte flips in pages, headers and metas.  With
``--keep`` it leaves them on disk.  For each copy this script runs

* ``mdb-cli dump --salvage -a`` and counts the records of its output that are exactly
  records of the valid file (a damaged page that still passes the checks could give wrong
  bytes: those are counted apart, as "not in the original");
* Debian's ``mdb_dump -a`` (LMDB 0.9.24), noting whether it crashed (killed by a signal),
  failed, or printed records, and how many of them are records of the valid file.

It prints the totals and the share of the valid file's records recovered over all copies.

    python bench/salvage_badfiles.py [--seed N] [--mdb-cli PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HARNESS = os.path.join(ROOT, "build", "harness-mdb", "badfile", "test_badfiles")

Record = tuple[str, str, str]


def parse_dump(text: str) -> list[Record]:
    """(database, key hex, value hex) of every record in mdb_dump -a output."""
    out: list[Record] = []
    db = ""
    in_data = False
    pending: str | None = None
    for line in text.splitlines():
        if not in_data:
            if line.startswith("database="):
                db = line[len("database=") :]
            elif line == "HEADER=END":
                in_data, pending = True, None
                db = db if db else ""
            continue
        if line == "DATA=END":
            in_data, db = False, ""
            continue
        if not line.startswith(" "):
            continue
        if pending is None:
            pending = line[1:]
        else:
            out.append((db, pending, line[1:]))
            pending = None
    return out


def run(cmd: list[str]) -> tuple[int, str]:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return -999, ""
    return r.returncode, r.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mdb-cli", default=shutil.which("mdb-cli") or "mdb-cli")
    a = ap.parse_args()
    if not os.path.exists(HARNESS):
        sys.exit(f"{HARNESS} missing: run `make ctest-badfile` first")
    mdb_dump = shutil.which("mdb_dump")
    work = tempfile.mkdtemp(prefix="salvage-")
    try:
        env = dict(os.environ, TMPDIR=work, MDB_BADFILE_SEED=str(a.seed))
        r = subprocess.run([HARNESS, "--keep"], capture_output=True, text=True, env=env)
        if r.returncode:
            sys.exit(f"bad-file harness failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        (top,) = [os.path.join(work, d) for d in os.listdir(work) if d.startswith("badfiles-")]
        code, text = run([a.mdb_cli, "dump", "-a", os.path.join(top, "valid")])
        if code:
            sys.exit("mdb-cli dump of the valid file failed")
        original = set(parse_dump(text))
        cases = sorted(d for d in os.listdir(top) if d.startswith("case-"))
        total = len(original) * len(cases)
        got = wrong = 0
        exits: Counter[str] = Counter()
        full = nothing = 0
        real_outcome: Counter[str] = Counter()
        real_got = 0
        for c in cases:
            path = os.path.join(top, c)
            code, text = run([a.mdb_cli, "dump", "--salvage", "-a", path])
            recs = parse_dump(text)
            hit = sum(1 for rec in set(recs) if rec in original)
            got += hit
            wrong += len(set(recs)) - hit
            exits["exit 0 (nothing lost)" if code == 0 else f"exit {code}"] += 1
            full += hit == len(original)
            nothing += hit == 0
            if mdb_dump:
                code, text = run([mdb_dump, "-a", path])
                if code < 0:
                    real_outcome["crashed (signal)" if code != -999 else "hung"] += 1
                elif code:
                    real_outcome["error"] += 1
                else:
                    real_outcome["read through"] += 1
                real_got += sum(1 for rec in set(parse_dump(text)) if rec in original)
        n = len(cases)
        print(
            f"bad-file suite, seed {a.seed}: {n} damaged copies of a file of "
            f"{len(original):,} records (4 databases)"
        )
        print(
            f"mdb-cli dump --salvage: {got:,} of {total:,} records recovered "
            f"({100 * got / total:.1f}%); every record in {full} copies, none in {nothing}; "
            f"{wrong} records not in the original"
        )
        print("  exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(exits.items())))
        if mdb_dump:
            print(
                f"real mdb_dump -a (LMDB 0.9.24): {real_got:,} of {total:,} records "
                f"({100 * real_got / total:.1f}%); "
                + ", ".join(f"{k}: {v}" for k, v in sorted(real_outcome.items()))
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
