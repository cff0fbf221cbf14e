"""mdb-cli check (cli/mdb_cli/commands/check.py).

The checker itself is the mdb core's, through env.check(); the real one runs on real
files here. The rendering and exit codes are also tested with a stand-in environment
that returns a report of env.check()'s shape (the core's mdbcore_check_report as a dict,
docs/python.md), so every line of the summary can be pinned down.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mdb_cli import engine
from mdb_cli.context import App


@pytest.fixture(autouse=True)
def _needs_core() -> None:
    if not engine.on_core():
        pytest.skip("env.check() needs the mdb core (this mdb runs on the system liblmdb)")


def test_real_checker_finds_a_damaged_page(run, tmp_path: Path) -> None:
    from conftest import put_main

    env = put_main(tmp_path / "e", [(b"k%05d" % i, b"v" * (i % 40 * 100)) for i in range(800)])
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
    assert res.exit_code == 0, res.stdout + res.stderr
    assert "ok: no problems found" in res.stdout
    for name in ("dups", "fixed", "ints", "plain"):
        assert f"  {name}: depth" in res.stdout
    report = json.loads(run("check", "--json", str(full_env)).stdout)
    assert report["ok"] is True and report["problems"] == []
    assert [d["name"] for d in report["databases"]] == [None, "dups", "fixed", "ints", "plain"]
    pages = report["pages"]
    # every page is reached (the free DB's own pages count as branch/leaf) or free
    kinds = ("meta", "branch", "leaf", "overflow", "free")
    assert pages["leaked"] == 0 and pages["total"] == sum(pages[k] for k in kinds)


def _db(name: str, depth: int, entries: int, branch: int, leaf: int, overflow: int) -> dict:
    return {
        "name": name,
        "depth": depth,
        "entries": entries,
        "branch_pages": branch,
        "leaf_pages": leaf,
        "overflow_pages": overflow,
    }


#: a report of env.check()'s shape (python/mdb/_cext/check.c, mdb/_cffi/environment.py)
GOOD: dict[str, Any] = {
    "ok": True,
    "problems_total": 0,
    "psize": 4096,
    "next_pgno": 20,
    "txnid": 7,
    "meta_pages": 2,
    "branch_pages": 1,
    "leaf_pages": 10,
    "leaf2_pages": 0,
    "overflow_pages": 3,
    "overflow_runs": 1,
    "reachable_pages": 16,
    "free_pages": 3,
    "free_records": 1,
    "leaked_pages": 0,
    "twice_pages": 0,
    "free_and_used": 0,
    "problems": [],
    "dbs": [
        _db("@free", 1, 1, 0, 1, 0),
        _db("@main", 1, 2, 0, 1, 0),
        _db("users", 2, 400, 1, 9, 3),
    ],
    "text": "(the core's own text)",
}


class FakeEnv:
    def __init__(self, report: Any):
        self.report = report

    def check(self) -> Any:
        return self.report

    def info(self) -> Any:
        return {}

    def close(self) -> None:
        pass


@pytest.fixture
def fake(monkeypatch):
    def install(report: Any) -> None:
        monkeypatch.setattr(App, "open_env", lambda self, path, **kw: FakeEnv(report))

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
        ok=False,
        leaked_pages=2,
        twice_pages=1,
        problems=[
            {"pgno": 2**64 - 1, "code": 9, "db": "", "msg": "2 pages leaked"},
            {"pgno": 17, "code": 4, "db": "users", "msg": "keys out of order"},
        ],
        problems_total=5,
    )
    fake(bad)
    res = run("check", "ENV")
    assert res.exit_code == 1
    assert res.stdout.splitlines() == [
        "checked ENV (txn 7, page size 4096, 20 pages)",
        "  pages: 2 meta, 1 branch, 10 leaf, 3 overflow, 1 freelist, 3 free, 2 leaked, 1 twice",
        "  Main DB: depth 1, 2 entries, 1 pages (0 branch, 1 leaf, 0 overflow)",
        "  users: depth 2, 400 entries, 13 pages (1 branch, 9 leaf, 3 overflow)",
        "  problem: environment: 2 pages leaked",
        "  problem: page 17, database 'users': keys out of order",
        "  ... and 3 more problem(s) not listed",
        "5 problem(s)",
    ]
    assert "ENV is damaged: 5 problem(s) found" in res.stderr
    assert res.stderr.count("\n") == 1


def test_json(run, fake) -> None:
    fake(GOOD)
    res = run("check", "--json", "ENV")
    report = json.loads(res.stdout)
    assert report == {
        "ok": True,
        "txnid": 7,
        "page_size": 4096,
        "pages": {
            "meta": 2,
            "branch": 1,
            "leaf": 10,
            "overflow": 3,
            "freelist": 1,
            "free": 3,
            "leaked": 0,
            "total": 20,
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
                "name": "users",
                "depth": 2,
                "entries": 400,
                "branch_pages": 1,
                "leaf_pages": 9,
                "overflow_pages": 3,
            },
        ],
        "problems": [],
        "problems_total": 0,
    }


def test_check_reports_a_fallback_to_the_older_meta(run, tmp_path: Path) -> None:
    """The newer meta page damaged: check opens the older snapshot, passes, and says so
    in its report and in one line on stderr; after a commit both pages are sound again."""
    import mdb
    from conftest import put_main

    env = put_main(tmp_path / "e", [(b"k%05d" % i, b"v" * 50) for i in range(300)])
    e = mdb.open(str(env))
    with e.begin(write=True) as txn:
        txn.put(b"later", b"x")
    last, psize = e.info()["last_txnid"], e.stat()["psize"]
    e.close()
    data = env / "data.mdb"
    raw = bytearray(data.read_bytes())
    raw[(last & 1) * psize] ^= 0x01  # the page number in the newer meta's header
    data.write_bytes(bytes(raw))
    (env / "lock.mdb").unlink()

    res = run("check", str(env))
    assert res.exit_code == 0, res.output
    assert "ok: no problems found" in res.stdout
    line = f"meta page {last & 1} is damaged (bad page header); opened the previous snapshot"
    assert f"  meta: {line}, txn {last - 1}, from meta page {1 - (last & 1)}" in res.stdout
    assert res.stderr.count("\n") == 1 and line in res.stderr
    assert data.read_bytes() == bytes(raw)
    rep = json.loads(run("check", "--json", str(env)).stdout)
    assert rep["ok"] and rep["meta"]["fallback"] and rep["txnid"] == last - 1

    e = mdb.open(str(env))
    with e.begin(write=True) as txn:
        txn.put(b"heal", b"y")
    e.close()
    res = run("check", str(env))
    assert res.exit_code == 0 and res.stderr == "" and "meta:" not in res.stdout
