"""mdb-cli readers (cli/mdb_cli/commands/readers.py): live and dead readers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import proc_env

HOLD = textwrap.dedent(
    """
    import sys
    from mdb_cli import engine
    env = engine.get().open(sys.argv[1], readonly=True, max_dbs=8)
    txn = env.begin()
    print(txn.id(), flush=True)
    sys.stdin.read()
    """
)


def _holder(path: Path) -> tuple[subprocess.Popen[str], int]:
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=proc_env(),
    )
    assert p.stdout is not None
    txnid = int(p.stdout.readline())
    return p, txnid


def test_live_reader_listed(run, full_env: Path) -> None:
    p, txnid = _holder(full_env)
    try:
        res = run("readers", str(full_env))
        assert res.exit_code == 0
        assert "    pid     thread     txnid" in res.stdout
        row = [line for line in res.stdout.splitlines() if line.split()[:1] == [str(p.pid)]]
        assert row and row[0].split()[2] == str(txnid)
        rows = json.loads(run("readers", "--json", str(full_env)).stdout)["readers"]
        assert {"pid": p.pid, "txnid": txnid} == {k: rows[0][k] for k in ("pid", "txnid")}
        # A live reader is not stale.
        res = run("readers", "--clear-stale", str(full_env))
        assert res.stdout.startswith("0 stale readers cleared.\n")
    finally:
        p.kill()
        p.wait()


def test_dead_reader_cleared(run, full_env: Path) -> None:
    # A live process keeps the lock file in use; without one, the next opener
    # resets the reader table and there is nothing stale to see.
    keeper, _ = _holder(full_env)
    try:
        p, _txnid = _holder(full_env)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert str(p.pid) in run("readers", str(full_env)).stdout
        res = run("readers", "--clear-stale", str(full_env))
        assert res.exit_code == 0
        assert res.stdout.startswith("1 stale readers cleared.\n")
        assert str(p.pid) not in res.stdout
        assert str(keeper.pid) in res.stdout
    finally:
        keeper.kill()
        keeper.wait()


def test_reader_age_and_pages_held(run, full_env: Path) -> None:
    """With the mdb core, each busy slot shows its snapshot's age and held pages."""
    from mdb_cli import engine

    eng = engine.get()
    if not engine.on_core():
        pytest.skip("reader ages need the mdb core (this mdb runs on the system liblmdb)")
    p, txnid = _holder(full_env)
    try:
        env = eng.open(str(full_env), max_dbs=8)
        try:
            for i in range(5):
                with env.begin(write=True) as t:
                    t.put(b"age-%d" % i, b"v" * 50)
        finally:
            env.close()
        res = run("readers", str(full_env))
        assert res.exit_code == 0
        assert "age(txns)  pages_held" in res.stdout
        row = [line.split() for line in res.stdout.splitlines() if line.split()[:1] == [str(p.pid)]]
        assert row and row[0][2] == str(txnid) and row[0][3] == "5" and int(row[0][4]) > 0
        rows = json.loads(run("readers", "--json", str(full_env)).stdout)["readers"]
        mine = [r for r in rows if r["pid"] == p.pid]
        assert mine and mine[0]["age"] == 5 and mine[0]["pages_held"] == int(row[0][4])
    finally:
        p.kill()
        p.wait()
