"""mdb-cli stat (cli/mdb_cli/commands/stat.py): mdb_stat's layout, and --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import real
from mdb_cli import engine


@pytest.mark.parametrize(
    "opts", [[], ["-a"], ["-s", "dups"], ["-s", "ints"]], ids=["main", "all", "dupsort", "intkey"]
)
def test_matches_mdb_stat(run, full_env: Path, opts: list[str]) -> None:
    res = run("stat", *opts, str(full_env))
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes == real("mdb_stat", *opts, str(full_env))


def _without_readers_used(text: bytes) -> list[bytes]:
    # "Number of readers used" is the reader table's high-water mark: it depends on
    # how many transactions the opening library itself ran, not on the file.
    return [line for line in text.splitlines() if b"Number of readers used" not in line]


def test_env_info_matches_mdb_stat(run, full_env: Path) -> None:
    res = run("stat", "-e", "-a", str(full_env))
    assert _without_readers_used(res.stdout_bytes) == _without_readers_used(
        real("mdb_stat", "-e", "-a", str(full_env))
    )


def test_readers_section_matches_mdb_stat(run, full_env: Path) -> None:
    # mdb_stat 0.9.24 exits 1 after -r even when all went well; we exit 0.
    res = run("stat", "-r", str(full_env))
    assert res.exit_code == 0
    assert res.stdout_bytes == real("mdb_stat", "-r", str(full_env), check=False)
    res = run("stat", "-rr", str(full_env))
    assert res.stdout_bytes == real("mdb_stat", "-rr", str(full_env), check=False)


def test_json(run, full_env: Path) -> None:
    res = run("stat", "-e", "-r", "-a", "--json", str(full_env))
    assert res.exit_code == 0
    report = json.loads(res.stdout)
    names = [d["name"] for d in report["databases"]]
    assert names == [None, "dups", "fixed", "ints", "plain"]
    dups = report["databases"][1]
    assert dups["entries"] == sum(len(v) for v in __import__("conftest").make_data().dups.values())
    env = report["environment"]
    assert env["page_size"] * env["max_pages"] == env["map_size"]
    assert env["pages_used"] > 2
    assert report["readers"]["readers"] == []


def test_freelist(run, full_env: Path) -> None:
    res = run("stat", "-ff", str(full_env))
    if engine.has_freelist(_open(full_env)):
        assert res.stdout_bytes == real("mdb_stat", "-ff", str(full_env))
    else:
        assert res.exit_code == 0
        assert "Freelist Status\n  (not available with this engine)" in res.stdout
        assert "needs the mdb engine" in res.stderr


def _open(path: Path):
    return engine.get().open(str(path), readonly=True, max_dbs=8)


def test_usage_and_missing(run, full_env: Path, tmp_path: Path) -> None:
    assert run("stat", "-a", "-s", "x", str(full_env)).exit_code == 2
    res = run("stat", "-s", "nope", str(full_env))
    assert res.exit_code == 1 and "does not exist" in res.stderr
    res = run("stat", str(tmp_path / "none"))
    assert res.exit_code == 1 and "no such environment" in res.stderr
