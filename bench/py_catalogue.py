#!/usr/bin/env python3
"""py_catalogue.py -- the catalogue's workloads through Python: mdb (both backends) against
py-lmdb and the stores that install from PyPI here (sqlite3, LevelDB through plyvel,
RocksDB through rocksdict).  A benchmark, not a test: it prints figures and writes JSON lines.

    py_catalogue.py [-n 1000000] [--rounds 3] [--batches 1000,0] [--engines LIST]
                    [--out FILE] [--markdown]

Each (engine, batch) run is a fresh Python process with a fresh store on tmpfs
(/dev/shm): it fills N records of 16-byte keys (big-endian counters) and 100-byte values
in key order (fillseq), reads them all in a fixed random order (readrandom), again one
read txn per get as a server answering requests would (readtxn; a plain get for the
stores without read txns), and in key order (readseq), then fills a second store in
random order (fillrandom).  Writes go BATCH
to a transaction (0: all in one): a write txn for LMDB, BEGIN/COMMIT for sqlite3, a write
batch for LevelDB and RocksDB.  Durability is relaxed the same way everywhere: nothing is
synced to disk, a crash of the process loses nothing committed (LMDB sync=False, sqlite3
synchronous=OFF with WAL, LevelDB and RocksDB without sync).  Rounds are interleaved, the
order of engines rotating from round to round, and every figure is a median; each engine's
ratio to py-lmdb is the median of the per-round ratios with their spread (min..max).

py-lmdb-cffi is py-lmdb's own cffi backend (LMDB_FORCE_CFFI) on Debian's liblmdb, the
C catalogue's reference: what a binding whose transactions and cursors are Python objects
costs, beside our cffi backend.  It is set up under build/bench/ from py-lmdb's sdist (for
its preload.h; `pip download`, PyPI only) and the installed wheel's Python files.

Engines missing here are skipped with a note (`pip install plyvel rocksdict`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any, Iterator, Protocol

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from provenance import BUILD_DIR, base, median_spread, write_jsonl  # noqa: E402

ENGINES = ["mdb-cext", "mdb-cffi", "py-lmdb", "py-lmdb-cffi", "sqlite3", "leveldb", "rocksdb"]
PHASES = ["fillseq", "readrandom", "readtxn", "readseq", "fillrandom"]
VALUE = bytes(range(100))


def batches(items: list[bytes], batch: int) -> Iterable[list[bytes]]:
    step = batch or len(items)
    for i in range(0, len(items), step):
        yield items[i : i + step]


class Store(Protocol):
    """One engine's way of doing each phase; every method returns the operations done."""

    def fill(self, keys: list[bytes], batch: int) -> int: ...

    def read_random(self, keys: list[bytes]) -> int: ...

    def read_txns(self, keys: list[bytes]) -> int: ...

    def read_seq(self) -> int: ...

    def close(self) -> None: ...


class KVStore(Store):
    """A store with db.get(key) (None when absent), an iterator of its records and close()."""

    db: Any

    def _records(self) -> Iterator[Any]:
        raise NotImplementedError

    def read_random(self, keys: list[bytes]) -> int:
        get = self.db.get
        for k in keys:
            if get(k) is None:
                raise RuntimeError("missing key")
        return len(keys)

    def read_txns(self, keys: list[bytes]) -> int:
        # a lone get is its own read here (no snapshot is held between gets)
        return self.read_random(keys)

    def read_seq(self) -> int:
        n = 0
        for _k, _v in self._records():
            n += 1
        return n

    def close(self) -> None:
        self.db.close()


class LmdbStore(KVStore):
    def __init__(self, mod: Any, path: str):
        self.env = self.db = mod.open(path, map_size=4 << 30, sync=False, metasync=False)

    def fill(self, keys: list[bytes], batch: int) -> int:
        for chunk in batches(keys, batch):
            with self.env.begin(write=True) as txn:
                put = txn.put
                for k in chunk:
                    put(k, VALUE)
        return len(keys)

    def read_random(self, keys: list[bytes]) -> int:
        with self.env.begin() as txn:
            get = txn.get
            for k in keys:
                if get(k) is None:
                    raise RuntimeError("missing key")
        return len(keys)

    def read_txns(self, keys: list[bytes]) -> int:
        begin = self.env.begin
        for k in keys:
            with begin() as txn:
                if txn.get(k) is None:
                    raise RuntimeError("missing key")
        return len(keys)

    def _records(self) -> Iterator[Any]:
        with self.env.begin() as txn:
            yield from txn.cursor()


class SqliteStore(Store):
    def __init__(self, path: str):
        import sqlite3

        self.db = sqlite3.connect(path + ".sqlite", isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.execute("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID")

    def fill(self, keys: list[bytes], batch: int) -> int:
        ex = self.db.execute
        for chunk in batches(keys, batch):
            ex("BEGIN")
            for k in chunk:
                ex("INSERT OR REPLACE INTO kv VALUES (?, ?)", (k, VALUE))
            ex("COMMIT")
        return len(keys)

    def read_random(self, keys: list[bytes]) -> int:
        ex = self.db.execute
        q = "SELECT v FROM kv WHERE k = ?"
        for k in keys:
            if ex(q, (k,)).fetchone() is None:
                raise RuntimeError("missing key")
        return len(keys)

    def read_txns(self, keys: list[bytes]) -> int:
        return self.read_random(keys)  # autocommit: each SELECT is its own read txn

    def read_seq(self) -> int:
        n = 0
        for _k, _v in self.db.execute("SELECT k, v FROM kv ORDER BY k"):
            n += 1
        return n

    def close(self) -> None:
        self.db.close()


class LevelStore(KVStore):
    def __init__(self, path: str):
        import plyvel

        self.db = plyvel.DB(path, create_if_missing=True)

    def fill(self, keys: list[bytes], batch: int) -> int:
        for chunk in batches(keys, batch):
            with self.db.write_batch() as wb:
                put = wb.put
                for k in chunk:
                    put(k, VALUE)
        return len(keys)

    def _records(self) -> Iterator[Any]:
        return self.db.iterator()


class RocksStore(KVStore):
    def __init__(self, path: str):
        from rocksdict import Options, Rdict

        self.db = Rdict(path, Options(raw_mode=True))

    def fill(self, keys: list[bytes], batch: int) -> int:
        from rocksdict import WriteBatch

        for chunk in batches(keys, batch):
            wb = WriteBatch(raw_mode=True)
            put = wb.put
            for k in chunk:
                put(k, VALUE)
            self.db.write(wb)
        return len(keys)

    def _records(self) -> Iterator[Any]:
        return self.db.items()


def open_store(engine: str, path: str) -> Store:
    if engine == "py-lmdb":
        import lmdb

        if hasattr(lmdb, "backend_features"):
            raise ImportError("lmdb resolves to the mdb shim, not py-lmdb")
        return LmdbStore(lmdb, path)
    if engine == "py-lmdb-cffi":
        import lmdb

        if getattr(lmdb.Environment, "__module__", "") != "lmdb.cffi":
            raise ImportError("lmdb did not load its cffi backend")
        return LmdbStore(lmdb, path)
    if engine.startswith("mdb-"):
        import mdb

        return LmdbStore(mdb.get_backend(engine.split("-", 1)[1]), path)
    if engine == "sqlite3":
        return SqliteStore(path)
    if engine == "leveldb":
        return LevelStore(path)
    if engine == "rocksdb":
        return RocksStore(path)
    raise ValueError(engine)


def engine_version(engine: str) -> str:
    if engine in ("py-lmdb", "py-lmdb-cffi"):
        import lmdb

        return f"py-lmdb {lmdb.__version__} (LMDB {'.'.join(map(str, lmdb.version()))})"
    if engine.startswith("mdb-"):
        import mdb

        return f"mdb {mdb.__version__} ({engine.split('-', 1)[1]})"
    if engine == "sqlite3":
        import sqlite3

        return f"sqlite {sqlite3.sqlite_version}"
    if engine == "leveldb":
        import plyvel

        return f"plyvel {plyvel.__version__}"
    if engine == "rocksdb":
        from importlib.metadata import version

        return f"rocksdict {version('rocksdict')}"
    return "?"


def timed(fn: Callable[[], int]) -> tuple[float, int]:
    gc.disable()
    try:
        t0 = time.perf_counter()
        n = fn()
        return time.perf_counter() - t0, n
    finally:
        gc.enable()


def worker(engine: str, n: int, batch: int, seed: int) -> dict[str, Any]:
    keys = [struct.pack(">QQ", 0, i) for i in range(n)]
    order = keys[:]
    random.Random(seed).shuffle(order)
    d = tempfile.mkdtemp(prefix="py-catalogue-", dir="/dev/shm")
    out: dict[str, Any] = {"engine": engine, "version": engine_version(engine)}
    try:
        s = open_store(engine, os.path.join(d, "a"))
        for phase, fn in (
            ("fillseq", lambda: s.fill(keys, batch)),
            ("readrandom", lambda: s.read_random(order)),
            ("readtxn", lambda: s.read_txns(order)),
            ("readseq", s.read_seq),
        ):
            secs, ops = timed(fn)
            if ops != n:
                raise RuntimeError(f"{engine} {phase}: {ops} operations, want {n}")
            out[phase] = ops / secs
        s.close()
        s = open_store(engine, os.path.join(d, "b"))
        secs, ops = timed(lambda: s.fill(order, batch))
        out["fillrandom"] = ops / secs
        s.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    out["maxrss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


def pylmdb_cffi_env() -> dict[str, str]:
    """The environment that makes `import lmdb` load py-lmdb's cffi backend on Debian's
    liblmdb: a copy of the installed package's Python files (its C extension left out)
    whose build configuration names the system library, and py-lmdb's preload.h from the
    sdist of the same version.  cffi compiles the binding at its first import."""
    from importlib.metadata import version
    from importlib.util import find_spec

    spec = find_spec("lmdb")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("py-lmdb is not installed")
    ver = version("lmdb")
    root = os.path.join(BUILD_DIR, "bench", f"py-lmdb-cffi-{ver}")
    pkg, headers = os.path.join(root, "lmdb"), os.path.join(root, f"lmdb-{ver}", "lib", "py-lmdb")
    if not os.path.exists(os.path.join(headers, "preload.h")):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                f"lmdb=={ver}",
                "--no-binary",
                ":all:",
                "--no-deps",
                "-d",
                root,
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
        subprocess.run(["tar", "xzf", f"lmdb-{ver}.tar.gz"], cwd=root, check=True)
    if not os.path.exists(os.path.join(pkg, "_config.py")):
        shutil.copytree(
            spec.submodule_search_locations[0],
            pkg,
            ignore=shutil.ignore_patterns("*.so", "__pycache__"),
            dirs_exist_ok=True,  # (a copy cut short before: _config.py is written last)
        )
        with open(os.path.join(pkg, "_config.py"), "w") as f:
            f.write(
                "CONFIG = {'extra_compile_args': ['-w', '-O2'], 'extra_sources': [], "
                f"'extra_library_dirs': [], 'extra_include_dirs': [{headers!r}], "
                "'libraries': ['lmdb']}\n"
            )
    return {"PYTHONPATH": root, "LMDB_FORCE_CFFI": "1"}


def engine_env(engine: str) -> dict[str, str]:
    """The environment an engine's worker runs in."""
    env = dict(os.environ)
    if engine == "py-lmdb-cffi":
        env.update(pylmdb_cffi_env())
    return env


def available(engine: str) -> tuple[dict[str, str] | None, str]:
    """The environment the engine's workers run in, or None and why it cannot run here."""
    try:
        env = engine_env(engine)
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        return None, f"cannot set it up: {e}"
    r = subprocess.run(
        [sys.executable, __file__, "--probe", engine], capture_output=True, text=True, env=env
    )
    if r.returncode:
        return None, (r.stderr.strip().splitlines() or ["?"])[-1]
    return env, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batches", default="1000,0", help="writes per txn, 0 = all in one")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--worker", nargs=3, metavar=("ENGINE", "BATCH", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--probe", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.probe:
        open_store(a.probe, tempfile.mkdtemp(prefix="py-catalogue-probe-") + "/p").close()
        return 0
    if a.worker:
        eng, batch, n = a.worker
        print(json.dumps(worker(eng, int(n), int(batch), a.seed)))
        return 0

    engines = []
    envs: dict[str, dict[str, str]] = {}
    for e in a.engines.split(","):
        env, why = available(e)
        if env is None:
            print(f"# skipping {e}: {why}")
        else:
            engines.append(e)
            envs[e] = env
    if "py-lmdb" not in engines:
        sys.exit("py_catalogue: py-lmdb is needed as the reference (pip install lmdb)")
    bs = [int(b) for b in a.batches.split(",")]
    date = dt.date.today().isoformat()
    out = a.out or os.path.join(BUILD_DIR, "bench", "results", f"py-catalogue-{date}.jsonl")
    res: dict[tuple[str, int], list[dict[str, Any]]] = {(e, b): [] for e in engines for b in bs}
    t_start = time.monotonic()
    for rnd in range(a.rounds):
        for b in bs:
            shift = rnd % len(engines)
            for e in engines[shift:] + engines[:shift]:
                r = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--worker",
                        e,
                        str(b),
                        str(a.n),
                        "--seed",
                        str(a.seed),
                    ],
                    capture_output=True,
                    text=True,
                    timeout=3600,
                    env=envs[e],
                )
                if r.returncode:
                    sys.exit(f"py_catalogue: {e} batch {b}: {r.stderr.strip()[-800:]}")
                row = json.loads(r.stdout)
                res[(e, b)].append(row)
                prov = base(
                    experiment="py-catalogue",
                    engine=e,
                    engine_version=row["version"],
                    round=rnd + 1,
                    size=a.n,
                    batch=b,
                    value_size=len(VALUE),
                )
                rows = [dict(prov, metric=p, value=row[p], unit="ops/s") for p in PHASES]
                rows.append(
                    dict(prov, metric="peak_rss", value=row["maxrss_kib"] * 1024, unit="bytes")
                )
                write_jsonl(out, rows)
        print(f"# round {rnd + 1}/{a.rounds} done ({time.monotonic() - t_start:.0f} s)", flush=True)

    print(f"\n{a.n:,} records, {a.rounds} interleaved rounds, medians; results in {out}")
    for e in engines:
        print(f"# {e}: {res[(e, bs[0])][0]['version']}")
    head = ["phase", "batch"] + [f"{e} ops/s" for e in engines]
    head += [f"{e}/py-lmdb" for e in engines if e != "py-lmdb"]
    lines = []
    for b in bs:
        for p in PHASES:
            cells = [p, str(b) if b else "one txn"]
            cells += [f"{statistics.median(r[p] for r in res[(e, b)]):,.0f}" for e in engines]
            ref = res[("py-lmdb", b)]
            for e in engines:
                if e != "py-lmdb":
                    cells.append(median_spread([x[p] / y[p] for x, y in zip(res[(e, b)], ref)]))
            lines.append(cells)
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for ln in lines:
            print("| " + " | ".join(ln) + " |")
    else:
        widths = [max(len(h), *(len(ln[i]) for ln in lines)) for i, h in enumerate(head)]
        print("  ".join(h.ljust(w) for h, w in zip(head, widths)))
        for ln in lines:
            print("  ".join(c.ljust(w) for c, w in zip(ln, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
