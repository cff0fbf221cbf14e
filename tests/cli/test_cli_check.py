"""mdb-cli check (cli/mdb_cli/commands/check.py).

The checker itself is the mdb engine's env.check(). With py-lmdb the command must
refuse clearly; the report rendering and exit codes are tested with a stand-in
environment that returns the report shape docs/cli.md asks the engine for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mdb_cli import engine
from mdb_cli.context import App


def _require_checker(path: Path) -> None:
    env = engine.get().open(str(path), readonly=True, max_dbs=8)
    has = engine.has_check(env)
    env.close()
    if not has:
        pytest.skip(f"this {engine.name()} engine has no env.check()")


def test_real_checker_finds_a_damaged_page(run, tmp_path: Path) -> None:
    from conftest import put_main

    env = put_main(tmp_path / "e", [(b"k%05d" % i, b"v" * (i % 40 * 100)) for i in range(800)])
    _require_checker(env)
    assert run("check", str(env)).exit_code == 0
    data = env / "data.mdb"
    raw = bytearray(data.read_bytes())
    raw[4096 * 40 : 4096 * 41] = b"\xff" * 4096
    data.write_bytes(bytes(raw))
    res = run("check", str(env))
    assert res.exit_code == 1
    assert "  problem: page 40" in res.stdout
    assert "is damaged" in res.stderr and res.stderr.count("\n") == 1


def test_real_engine(run, full_env: Path) -> None:
    res = run("check", str(full_env))
    env = engine.get().open(str(full_env), readonly=True, max_dbs=8)
    has = engine.has_check(env)
    env.close()
    if not has:
        assert res.exit_code == 1
        assert "check was not run" in res.stderr and "env.check()" in res.stderr
        pytest.skip(f"the {engine.name()} engine has no env.check(): structural check not run")
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "ok: no problems found" in res.stdout
    for name in ("dups", "fixed", "ints", "plain"):
        assert f"  {name}: depth" in res.stdout


GOOD = {
    "txnid": 7,
    "page_size": 4096,
    "pages": {
        "total": 20,
        "meta": 2,
        "branch": 1,
        "leaf": 10,
        "overflow": 3,
        "freelist": 1,
        "free": 3,
        "leaked": 0,
    },
    "databases": [
        {
            "name": None,
            "depth": 1,
            "entries": 2,
            "branch_pages": 0,
            "leaf_pages": 1,
            "overflow_pages": 0,
        },
        {
            "name": b"users",
            "depth": 2,
            "entries": 400,
            "branch_pages": 1,
            "leaf_pages": 9,
            "overflow_pages": 3,
        },
    ],
    "problems": [],
}


class FakeEnv:
    def __init__(self, report: Any):
        self.report = report

    def check(self) -> Any:
        return self.report

    def close(self) -> None:
        pass


@pytest.fixture
def fake(monkeypatch):
    def install(report: Any) -> None:
        monkeypatch.setattr(App, "open_env", lambda self, path, **kw: FakeEnv(report))
        monkeypatch.setattr(engine, "has_check", lambda env: isinstance(env, FakeEnv))

    return install


def test_summary(run, fake) -> None:
    fake(GOOD)
    res = run("check", "ENV")
    assert res.exit_code == 0
    assert res.stdout == (
        "checked ENV (txn 7, page size 4096, 20 pages)\n"
        "  pages: 2 meta, 1 branch, 10 leaf, 3 overflow, 1 freelist, 3 free, 0 leaked\n"
        "  Main DB: depth 1, 2 entries, 1 pages (0 branch, 1 leaf, 0 overflow)\n"
        "  users: depth 2, 400 entries, 13 pages (1 branch, 9 leaf, 3 overflow)\n"
        "ok: no problems found\n"
    )


def test_problems_exit_1_with_locations(run, fake) -> None:
    bad = dict(
        GOOD,
        pages=dict(GOOD["pages"], leaked=2),
        problems=[
            {"page": 12, "database": "users", "message": "leaf page out of key order"},
            {"page": None, "database": None, "message": "2 pages leaked: 17, 18"},
            "meta 1: bad magic",
        ],
    )
    fake(bad)
    res = run("check", "ENV")
    assert res.exit_code == 1
    assert "  problem: page 12, database 'users': leaf page out of key order\n" in res.stdout
    assert "  problem: environment: 2 pages leaked: 17, 18\n" in res.stdout
    assert "  problem: environment: meta 1: bad magic\n" in res.stdout
    assert "ENV is damaged: 3 problem(s) found" in res.stderr


def test_json(run, fake) -> None:
    fake(GOOD)
    res = run("check", "--json", "ENV")
    report = json.loads(res.stdout)
    assert report["ok"] is True
    assert report["databases"][1]["name"] == "users"
    assert report["pages"]["overflow"] == 3


def test_report_as_object(run, fake) -> None:
    class Obj:
        def __init__(self, d: dict[str, Any]):
            self.__dict__.update(d)

    fake(Obj(GOOD))
    assert run("check", "ENV").exit_code == 0


def test_flat_core_shaped_report(run, fake) -> None:
    """The shape of the core's mdbcore_check_report, as a binding may pass it on."""
    fake(
        {
            "psize": 4096,
            "next_pgno": 30,
            "txnid": 9,
            "meta_pages": 2,
            "branch_pages": 1,
            "leaf_pages": 12,
            "overflow_pages": 4,
            "free_pages": 6,
            "leaked_pages": 2,
            "dbs": [
                {
                    "name": "@free",
                    "depth": 1,
                    "entries": 2,
                    "branch_pages": 0,
                    "leaf_pages": 1,
                    "overflow_pages": 0,
                },
                {
                    "name": "@main",
                    "depth": 1,
                    "entries": 1,
                    "branch_pages": 0,
                    "leaf_pages": 1,
                    "overflow_pages": 0,
                },
                {
                    "name": b"t",
                    "depth": 2,
                    "entries": 99,
                    "branch_pages": 1,
                    "leaf_pages": 10,
                    "overflow_pages": 4,
                },
            ],
            "problems": [
                {"pgno": 2**64 - 1, "code": "leak", "db": "", "msg": "2 pages leaked"},
                {"pgno": 17, "code": "order", "db": "t", "msg": "keys out of order"},
            ],
            "problems_total": 5,
        }
    )
    res = run("check", "ENV")
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        "checked ENV (txn 9, page size 4096, 30 pages)",
        "  pages: 2 meta, 1 branch, 12 leaf, 4 overflow, 1 freelist, 6 free, 2 leaked",
        "  Main DB: depth 1, 1 entries, 1 pages (0 branch, 1 leaf, 0 overflow)",
        "  t: depth 2, 99 entries, 15 pages (1 branch, 10 leaf, 4 overflow)",
        "  problem: environment: 2 pages leaked",
        "  problem: page 17, database 't': keys out of order",
        "  ... and 3 more problem(s) not listed",
        "5 problem(s)",
    ]
    assert "5 problem(s) found" in res.stderr
