"""mdb-cli readers (cli/mdb_cli/commands/readers.py): live and dead readers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

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
