"""A damaged newer meta page, opened by real LMDB and by us: what each does.

The files are those of tests/c/core/test_meta_torn.c, made here in Python: commits over a
main DB with overflow values, a DUPSORT and a plain named DB, then one more commit T; the
meta page T wrote (page T & 1) is torn against what it held before (T-2's meta) at every
byte boundary where the result is neither page whole, both ways, and damaged at random.
Each file is opened read-only and read through by

- ``ours``: the library under test (the ``mdb`` package on the mdb core),
- ``0.9.36``: real LMDB, the ``lmdb`` wheel,
- ``0.9.24``: real LMDB, Debian's ``mdb_dump -a`` (lmdb-utils),

each in a child process, so that a crash is an outcome. The outcomes: the records of txn
T-1 exactly, of txn T exactly, other records without an error ("wrong data"), an error at
open, an error while reading, or a crash; and for ours, how many of the files it opened
the structural checker (``Environment.check()``) finds damaged.
``python tests/interop/test_torn_meta_lmdb.py`` prints the table (docs/durability.md has
it). The test asserts what we promise: we never crash, never refuse a file whose older
meta is sound, read a torn meta page as T-1 or T exactly and never anything else, and
every file we open from the older meta reads exactly T-1.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pytest

HEAD = 152  # page header + meta record
OUTCOMES = (
    "T-1",
    "T-1, fallback reported",
    "T",
    "wrong data",
    "error at open",
    "error reading",
    "crash",
    "checker flags it",
)

# The child: reads image directories from stdin, one a line, prints one JSON line each.
WORKER = r"""
import hashlib, json, sys
engine = sys.argv[1]
if engine == "ours":
    import mdb as lib
else:
    import lmdb as lib

def digest(env):
    h = hashlib.sha256()
    with env.begin() as txn:
        for name in (None, b"dups", b"plain"):
            try:
                db = env.open_db(name, txn=txn, create=False,
                                 **({"dupsort": True} if name == b"dups" else {}))
            except lib.Error:
                h.update(b"<no db>")
                continue
            for k, v in txn.cursor(db=db):
                h.update(len(k).to_bytes(4, "little") + k + len(v).to_bytes(4, "little") + v)
    return h.hexdigest()

for line in sys.stdin:
    path = line.strip()
    out = {"path": path}
    try:
        env = lib.open(path, readonly=True, lock=False, max_dbs=4, map_size=0)
    except lib.Error as exc:
        out["open_error"] = type(exc).__name__ + ": " + str(exc)[:80]
    else:
        try:
            out["digest"] = digest(env)
            if engine == "ours":
                out["meta"] = env.info()["meta"]
                out["check_ok"] = env.check()["ok"]
        except lib.Error as exc:
            out["read_error"] = type(exc).__name__ + ": " + str(exc)[:80]
        env.close()
    print(json.dumps(out), flush=True)
"""


def build(work: Path) -> tuple[bytes, bytes, bytes, int, int]:
    """The file after T, the page T & 1 before and after T, T's slot and the page size."""
    import mdb

    base = work / "base"
    env = mdb.open(str(base), map_size=64 << 20, max_dbs=4)
    big = b""
    for r in range(13):
        if r == 12:
            before = (base / "data.mdb").read_bytes()
        with env.begin(write=True) as txn:
            m = env.open_db(None, txn=txn)
            d = env.open_db(b"dups", txn=txn, dupsort=True)
            p = env.open_db(b"plain", txn=txn)
            big = bytes([97 + r % 26]) * 9000
            for i in range(60):
                k = b"key%05d" % ((r * 37 + i * 11) % 400)
                v = b"v%d.%d" % (r, i)
                if (i + r) % 7 == 0:
                    txn.delete(k, db=p)
                else:
                    txn.put(k, v, db=p)
                if i % 3 == 0:
                    txn.put(k, v, db=d)
                if i % 20 == 0:
                    txn.put(k, big[: 3000 + (r * 997 + i) % 6000], db=m)
    last = env.info()["last_txnid"]
    psize = env.stat()["psize"]
    env.close()
    after = (base / "data.mdb").read_bytes()
    slot = last & 1
    return (
        after,
        before[slot * psize : (slot + 1) * psize],
        after[slot * psize : (slot + 1) * psize],
        slot,
        psize,
    )


def images(
    after: bytes, old: bytes, new: bytes, slot: int, psize: int
) -> Iterator[tuple[str, bytes]]:
    """(kind, data.mdb) of every torn and randomly damaged file, and the two sound ones."""
    at = slot * psize

    def with_page(page: bytes) -> bytes:
        return after[:at] + page + after[at + psize :]

    yield "sound T-1", with_page(old)
    yield "sound T", after
    for kind, head, tail in (
        ("torn: T's bytes, then T-2's", new, old),
        ("torn: T-2's bytes, then T's", old, new),
    ):
        for b in range(psize + 1):
            page = head[:b] + tail[b:]
            if page[:HEAD] != old[:HEAD] and page[:HEAD] != new[:HEAD]:
                yield kind, with_page(page)
    rng = random.Random(20261127)
    for _ in range(300):
        page = bytearray(new)
        how = rng.randrange(3)
        if how == 0:
            i = rng.randrange(HEAD)
            for j in range(i, min(i + rng.randint(1, 32), psize)):
                page[j] = rng.randrange(256)
        elif how == 1:
            for _ in range(rng.randint(1, 4)):
                bit = rng.randrange(HEAD * 8)
                page[bit // 8] ^= 1 << (bit % 8)
        else:
            i, n = rng.randrange(HEAD), rng.randint(1, 64)
            page[i : i + n] = bytes([rng.choice((0, 255))]) * len(page[i : i + n])
        if bytes(page[:HEAD]) != new[:HEAD]:
            yield "random damage", with_page(bytes(page))


def run_worker(engine: str, paths: list[str]) -> dict[str, dict[str, Any]]:
    """Results by path; a path whose child died gets {"crash": signal}."""
    results: dict[str, dict[str, Any]] = {}
    todo = list(paths)
    while todo:
        proc = subprocess.run(
            [sys.executable, "-c", WORKER, engine],
            input="\n".join(todo) + "\n",
            capture_output=True,
            text=True,
            timeout=600,
        )
        for line in proc.stdout.splitlines():
            r = json.loads(line)
            results[r["path"]] = r
        todo = [p for p in todo if p not in results]
        if todo and proc.returncode != 0:
            results[todo[0]] = {"crash": proc.returncode}
            todo = todo[1:]
        elif todo:
            raise RuntimeError(f"{engine} worker stopped early: {proc.stderr[-500:]}")
    return results


def run_mdb_dump(paths: list[str]) -> dict[str, dict[str, Any]]:
    results = {}
    for p in paths:
        proc = subprocess.run(["mdb_dump", "-a", p], capture_output=True, timeout=60)
        if proc.returncode < 0:
            results[p] = {"crash": proc.returncode}
        elif proc.returncode != 0:
            err = proc.stderr.decode(errors="replace")
            key = "open_error" if "mdb_env_open" in err else "read_error"
            results[p] = {key: err.strip()[:80]}
        else:
            results[p] = {"digest": hashlib.sha256(proc.stdout).hexdigest()}
    return results


def outcome(r: dict[str, Any], t1: str, t: str) -> str:
    if "crash" in r:
        return "crash"
    if "open_error" in r:
        return "error at open"
    if "read_error" in r:
        return "error reading"
    if r["digest"] == t1:
        return "T-1, fallback reported" if r.get("meta", {}).get("fallback") else "T-1"
    if r["digest"] == t:
        return "T"
    return "wrong data"


def survey(work: Path) -> tuple[dict[tuple[str, str], Counter], dict[str, int]]:
    after, old, new, slot, psize = build(work)
    kinds: dict[str, str] = {}
    for n, (kind, data) in enumerate(images(after, old, new, slot, psize)):
        d = work / f"img{n:05d}"
        d.mkdir()
        (d / "data.mdb").write_bytes(data)
        kinds[str(d)] = kind
    paths = list(kinds)
    engines = {
        "ours": run_worker("ours", paths),
        "0.9.36 (lmdb wheel)": run_worker("lmdb", paths),
    }
    if shutil.which("mdb_dump"):
        engines["0.9.24 (mdb_dump)"] = run_mdb_dump(paths)
    table: dict[tuple[str, str], Counter] = {}
    for p in paths[2:]:
        r = engines["ours"][p]
        if "digest" in r and not r["check_ok"]:
            table.setdefault((kinds[p], "ours"), Counter())["checker flags it"] += 1
    sizes = Counter(kinds.values())
    for eng, res in engines.items():
        t1, t = (res[paths[0]].get("digest"), res[paths[1]].get("digest"))
        for p in paths[2:]:
            table.setdefault((kinds[p], eng), Counter())[outcome(res[p], t1, t)] += 1
        for p, want in ((paths[0], "T-1"), (paths[1], "T")):
            assert outcome(res[p], t1, t) == want, (eng, p)
    # ours, once more: a detected damage never reads anything but T-1
    for p in paths[2:]:
        r = engines["ours"][p]
        if r.get("meta", {}).get("damaged"):
            assert outcome(r, engines["ours"][paths[0]]["digest"], "") in (
                "T-1",
                "T-1, fallback reported",
            ), p
    return table, {k: v for k, v in sizes.items() if not k.startswith("sound")}


def markdown(table: dict[tuple[str, str], Counter], sizes: dict[str, int]) -> str:
    engines = sorted({e for _, e in table}, key=lambda e: (e != "ours", e))
    lines = [
        "| damage (files) | engine | " + " | ".join(OUTCOMES) + " |",
        "|---|---|" + "---|" * len(OUTCOMES),
    ]
    for kind in sizes:
        for e in engines:
            c = table.get((kind, e), Counter())
            lines.append(
                f"| {kind} ({sizes[kind]}) | {e} | "
                + " | ".join(
                    "-" if o == "checker flags it" and e != "ours" else str(c.get(o, 0))
                    for o in OUTCOMES
                )
                + " |"
            )
    return "\n".join(lines)


@pytest.fixture(scope="module")
def surveyed():
    mdb = pytest.importorskip("mdb")
    pytest.importorskip("lmdb")
    if not mdb.backend_features["check"]:
        pytest.skip("needs the mdb core")
    with tempfile.TemporaryDirectory() as d:
        yield survey(Path(d))


def test_torn_meta_table(surveyed) -> None:
    table, sizes = surveyed
    print("\n" + markdown(table, sizes))
    for kind in sizes:
        ours = table[(kind, "ours")]
        assert ours["crash"] == 0 and ours["error at open"] == 0, (kind, ours)
    # a torn meta page: we read T-1 or T exactly, never anything else
    for kind in ("torn: T's bytes, then T-2's", "torn: T-2's bytes, then T's"):
        ours = table[(kind, "ours")]
        assert ours["wrong data"] == 0 and ours["error reading"] == 0, (kind, ours)
    # the random damages we detect open T-1; all that gets past us reads without a crash
    assert table[("random damage", "ours")]["T-1, fallback reported"] > 0


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        t, s = survey(Path(d))
    print(markdown(t, s))


def test_lmdb_written_files_hold_up(tmp_path: Path) -> None:
    """No false alarm: files real LMDB (the wheel) writes -- many commits, a DUPSORT main DB,
    deletes down to an empty tree, big values, named DBs, a plain and a compacting copy --
    have both meta pages sound here, after every commit."""
    mdb = pytest.importorskip("mdb")
    lmdb = pytest.importorskip("lmdb")
    if not mdb.backend_features["check"]:
        pytest.skip("needs the mdb core")
    rng = random.Random(7)
    checked = 0
    for dupsort in (False, True):
        path = tmp_path / f"w{int(dupsort)}"
        env = lmdb.open(str(path), map_size=64 << 20, max_dbs=4)
        main = env.open_db(None) if not dupsort else env.open_db(b"d", dupsort=True)
        named = env.open_db(b"n")
        for r in range(40):
            with env.begin(write=True) as txn:
                for _ in range(rng.randrange(1, 200)):
                    k = b"%06d" % rng.randrange(3000)
                    v = bytes(rng.randrange(256) for _ in range(8)) * rng.choice(
                        (1, 4, 40 if dupsort else 600)
                    )
                    if rng.random() < 0.3:
                        txn.delete(k, db=main)
                    else:
                        txn.put(k, v, db=main)
                    txn.put(k[:3], v[:10], db=named)
                if r == 30:  # empty both trees once
                    txn.drop(main, delete=False)
                    txn.drop(named, delete=False)
            if r % 5 == 4:
                ours = mdb.open(str(path), readonly=True, lock=False, max_dbs=4)
                assert ours.info()["meta"]["flags"] == 0, (dupsort, r, ours.info()["meta"])
                assert ours.check()["ok"]
                ours.close()
                checked += 1
        for compact in (False, True):
            dest = tmp_path / f"c{int(dupsort)}{int(compact)}"
            dest.mkdir()
            env.copy(str(dest), compact=compact)
            ours = mdb.open(str(dest), readonly=True, lock=False, max_dbs=4)
            assert ours.info()["meta"]["flags"] == 0, (dupsort, compact, ours.info()["meta"])
            ours.close()
            checked += 1
        env.close()
    assert checked == 20
