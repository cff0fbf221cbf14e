"""mdb-cli drop (cli/mdb_cli/commands/drop.py)."""

from __future__ import annotations

from pathlib import Path

from conftest import read_db


def test_empty_then_delete(run, full_env: Path) -> None:
    res = run("drop", "-s", "dups", str(full_env))
    assert res.exit_code == 0, res.stderr
    assert "emptied database 'dups'" in res.stderr
    assert read_db(full_env, b"dups") == []
    assert "dups" in run("dump", "-l", str(full_env)).stdout.split()
    res = run("drop", "-s", "dups", "--delete", str(full_env))
    assert res.exit_code == 0
    assert "dups" not in run("dump", "-l", str(full_env)).stdout.split()
    assert read_db(full_env, b"plain")  # the others are untouched


def test_missing_database_and_usage(run, full_env: Path) -> None:
    res = run("drop", "-s", "nope", str(full_env))
    assert res.exit_code == 1 and "does not exist" in res.stderr
    assert run("drop", str(full_env)).exit_code == 2


def test_waits_for_another_writer_and_says_so(cli_proc, full_env: Path) -> None:
    import subprocess
    import sys
    import textwrap
    import time

    from conftest import proc_env

    hold = textwrap.dedent(
        """
        import sys, time
        from mdb_cli import engine
        env = engine.get().open(sys.argv[1], max_dbs=8)
        txn = env.begin(write=True)
        print("holding", flush=True)
        time.sleep(3.5)
        txn.abort()
        """
    )
    w = subprocess.Popen(
        [sys.executable, "-c", hold, str(full_env)], stdout=subprocess.PIPE, env=proc_env()
    )
    try:
        assert w.stdout is not None and w.stdout.readline() == b"holding\n"
        start = time.monotonic()
        res = cli_proc("drop", "-s", "dups", str(full_env))
        assert res.returncode == 0, res.stderr
        assert time.monotonic() - start > 2
        assert b"waiting for another process's write transaction" in res.stderr
    finally:
        w.wait()
