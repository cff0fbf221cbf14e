"""Fixtures for the mdb-cli tests.

- ``run``: runs the CLI in-process with click's CliRunner (stdout and stderr kept
  apart) and returns the Result.
- ``cli_proc``: runs ``python -m mdb_cli`` as a real process (round trips, ttys).
- ``envs``: builds environments with binary keys and values through the engine the
  CLI uses (mdb): plain, dupsort, integer-key and dupfixed/integerdup databases,
  seeded so every run builds the same bytes.
- ``tool``: the path of a real LMDB tool (mdb_dump, ...), or the test is skipped.

Run (with the mdb package installed): python -m pytest tests/cli -q
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import pytest
from click.testing import CliRunner, Result

ROOT = Path(__file__).resolve().parents[2]
CLI_DIR = ROOT / "cli"
if str(CLI_DIR) not in sys.path:
    sys.path.insert(0, str(CLI_DIR))

from mdb_cli import engine  # noqa: E402
from mdb_cli.main import cli  # noqa: E402

SEED = int(os.environ.get("MDB_CLI_TEST_SEED", "20240601"))


def pytest_report_header(config: Any) -> str:
    return f"mdb-cli {engine.version_text()}; seed {SEED} (MDB_CLI_TEST_SEED)"


@pytest.fixture
def run() -> Callable[..., Result]:
    runner = CliRunner()

    def _run(*args: str, input: Optional[bytes] = None) -> Result:
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return _run


def proc_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(CLI_DIR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    return env


@pytest.fixture
def cli_proc() -> Callable[..., subprocess.CompletedProcess[bytes]]:
    def _run(*args: str, input: Optional[bytes] = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "mdb_cli", *args],
            input=input,
            capture_output=True,
            env=proc_env(),
            timeout=300,
        )

    return _run


@pytest.fixture
def tool() -> Callable[[str], str]:
    def _tool(name: str) -> str:
        path = shutil.which(name)
        if path is None:
            pytest.skip(f"{name} (LMDB's tools, Debian lmdb-utils) is not installed")
        return path

    return _tool


def real(*args: str, input: Optional[bytes] = None, check: bool = True) -> bytes:
    """Run a real LMDB tool; return its stdout."""
    if shutil.which(args[0]) is None:
        pytest.skip(f"{args[0]} (Debian lmdb-utils) is not installed")
    res = subprocess.run(list(args), input=input, capture_output=True, timeout=300)
    if check and res.returncode != 0:
        raise AssertionError(f"{args} failed: {res.stderr.decode(errors='replace')}")
    return res.stdout


# --- building environments -----------------------------------------------------------


def rand_bytes(rng: random.Random, lo: int, hi: int, alphabet: Optional[bytes] = None) -> bytes:
    n = rng.randint(lo, hi)
    if alphabet is None:
        return bytes(rng.getrandbits(8) for _ in range(n))
    return bytes(rng.choice(alphabet) for _ in range(n))


#: bytes that stress the text formats: NUL, newline, backslash, space, high bytes
NASTY = b"\x00\n\\ \x7f\xff=-"


@dataclass
class Data:
    plain: dict[bytes, bytes]
    dups: dict[bytes, list[bytes]]
    ints: dict[bytes, bytes]
    fixed: dict[bytes, list[bytes]]


def make_data(seed: int = SEED, n: int = 300, printable: bool = False) -> Data:
    rng = random.Random(seed)
    alphabet = bytes(range(0x20, 0x7F)).replace(b"\\", b"") if printable else None
    plain: dict[bytes, bytes] = {}
    while len(plain) < n:
        k = rand_bytes(rng, 1, 40, alphabet)
        if not printable and rng.random() < 0.3:
            i = rng.randrange(len(NASTY))
            k += NASTY[i : i + 1]
        big = rng.random() < 0.05
        plain[k] = (
            rand_bytes(rng, 3000, 9000, alphabet) if big else rand_bytes(rng, 0, 120, alphabet)
        )
    dups: dict[bytes, list[bytes]] = {}
    for _ in range(n // 5):
        k = rand_bytes(rng, 1, 20, alphabet)
        dups[k] = sorted({rand_bytes(rng, 1, 60, alphabet) for _ in range(rng.randint(1, 12))})
    ints: dict[bytes, bytes] = {}
    while len(ints) < n:
        ik = rng.getrandbits(64).to_bytes(8, sys.byteorder)
        if printable and b"\\" in ik:
            continue  # print-format data without backslashes (see test_cli_dump)
        ints[ik] = rand_bytes(rng, 0, 50, alphabet)
    fixed: dict[bytes, list[bytes]] = {}
    for _ in range(n // 20):
        k = rand_bytes(rng, 1, 8, alphabet)
        vals = [rng.getrandbits(32).to_bytes(4, sys.byteorder) for _ in range(rng.randint(1, 40))]
        fixed[k] = [v for v in vals if not (printable and b"\\" in v)] or [b"\x01\x02\x03\x04"]
    return Data(plain, dups, ints, fixed)


def fill(path: Path, data: Data, map_size: int = 64 << 20, subdir: bool = True) -> Path:
    """Write ``data`` into an environment at ``path``: main DB plus four named DBs."""
    eng = engine.get()
    if subdir:
        path.mkdir(parents=True, exist_ok=True)
    env = eng.open(str(path), map_size=map_size, max_dbs=8, subdir=subdir)
    try:
        plain = env.open_db(b"plain")
        dups = env.open_db(b"dups", dupsort=True)
        ints = env.open_db(b"ints", integerkey=True)
        fixed = env.open_db(b"fixed", dupsort=True, dupfixed=True, integerdup=True)
        with env.begin(write=True) as txn:
            for k, v in data.plain.items():
                txn.put(k, v, db=plain)
            for k, vs in data.dups.items():
                for v in vs:
                    txn.put(k, v, db=dups)
            for k, v in data.ints.items():
                txn.put(k, v, db=ints)
            for k, vs in data.fixed.items():
                for v in vs:
                    txn.put(k, v, db=fixed)
            txn.put(b"~main-record", b"main value")
    finally:
        env.close()
    return path


def put_main(path: Path, items: Iterable[tuple[bytes, bytes]], map_size: int = 64 << 20) -> Path:
    """An environment whose main database holds ``items`` (no named databases)."""
    eng = engine.get()
    path.mkdir(parents=True, exist_ok=True)
    env = eng.open(str(path), map_size=map_size)
    try:
        with env.begin(write=True) as txn:
            for k, v in items:
                txn.put(k, v)
    finally:
        env.close()
    return path


def read_db(
    path: Path, name: Optional[bytes] = None, subdir: bool = True
) -> list[tuple[bytes, bytes]]:
    eng = engine.get()
    env = eng.open(str(path), readonly=True, max_dbs=8, subdir=subdir, map_size=0)
    try:
        with env.begin() as txn:
            db = env.open_db(name, txn=txn, create=False)
            return [(bytes(k), bytes(v)) for k, v in txn.cursor(db=db).iternext()]
    finally:
        env.close()


@pytest.fixture(scope="session")
def data() -> Data:
    return make_data()


@pytest.fixture
def full_env(tmp_path: Path, data: Data) -> Path:
    return fill(tmp_path / "src", data)


@pytest.fixture
def printable_env(tmp_path: Path) -> Path:
    return fill(tmp_path / "printable", make_data(SEED + 1, printable=True))
