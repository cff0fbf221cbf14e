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
