"""A write txn's commit leaves its named databases' records in the env, keyed on the
snapshot it made, so the next txn of that snapshot does not search MAIN for them
(dbi_remember_committed in the core).  These tests change a database in every way a
record can change -- through another process, an abort, a child txn, a drop, an empty
commit -- and check that each txn sees exactly the records of its own snapshot: a
record taken from the wrong snapshot shows as missing or extra keys, a wrong count or
a page the checker finds leaked or shared.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import mdb

pytestmark = pytest.mark.skipif(
    not mdb.backend_features.get("check"), reason="the structural check needs the mdb core"
)


@pytest.fixture
def path(tmp_path) -> str:
    return str(tmp_path / "db")


@pytest.fixture
def env(lm, path):
    e = lm.open(path, max_dbs=4, map_size=64 << 20, sync=False)
    yield e
    e.close()


def _keys(env, db) -> list[bytes]:
    with env.begin(db=db) as t:
        return [k for k, _ in t.cursor()]


def _assert_sound(env) -> None:
    rep = env.check()
    assert rep["ok"], rep
    assert rep["leaked_pages"] == 0, rep


def _other_process_puts(lm, path: str, keys: list[bytes]) -> None:
    code = textwrap.dedent(f"""
        import mdb
        lm = mdb.get_backend({lm.backend!r})
        env = lm.open({path!r}, max_dbs=4, map_size=64 << 20, sync=False)
        db = env.open_db(b"d")
        with env.begin(write=True, db=db) as t:
            for k in {keys!r}:
                t.put(k, b"other" * 30)
        env.close()
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_commit_by_another_process_is_seen(lm, env, path):
    db = env.open_db(b"d")
    with env.begin(write=True, db=db) as t:  # our commit: its record is remembered
        for i in range(300):
            t.put(b"a%04d" % i, b"x" * 100)
    _other_process_puts(lm, path, [b"b%04d" % i for i in range(300)])
    # our next write txn starts on the other process's snapshot, not on ours
    with env.begin(write=True, db=db) as t:
        assert t.get(b"b0299") == b"other" * 30
        assert t.stat(db)["entries"] == 600
        t.put(b"c0000", b"ours")
    want = sorted([b"a%04d" % i for i in range(300)] + [b"b%04d" % i for i in range(300)])
    assert _keys(env, db) == want + [b"c0000"]
    _assert_sound(env)


def test_abort_and_empty_commit_leave_the_last_record(env):
    db = env.open_db(b"d")
    other = env.open_db(b"e")
    with env.begin(write=True, db=db) as t:
        t.put(b"k1", b"v1")
    t = env.begin(write=True, db=db)
    for i in range(200):
        t.put(b"z%04d" % i, b"y" * 100)
    t.abort()
    with env.begin(write=True, db=db) as t:  # reads only: nothing is written
        assert t.get(b"z0000") is None
    # the aborted txn's id is now committed, by a txn that leaves d alone
    with env.begin(write=True, db=other) as t:
        t.put(b"e", b"1")
    with env.begin(write=True, db=db) as t:
        assert t.stat(db)["entries"] == 1
        t.put(b"k2", b"v2")
    assert _keys(env, db) == [b"k1", b"k2"]
    _assert_sound(env)


def test_child_txn_and_drop(env):
    d = env.open_db(b"d")
    e = env.open_db(b"e")
    with env.begin(write=True) as t:
        for i in range(100):
            t.put(b"d%03d" % i, b"1" * 50, db=d)
            t.put(b"e%03d" % i, b"2" * 50, db=e)
    # a child changes d and commits into a parent that aborts: nothing stays
    parent = env.begin(write=True)
    with env.begin(write=True, parent=parent) as child:
        child.put(b"d999", b"child", db=d)
        child.delete(b"d000", db=d)
    parent.abort()
    assert _keys(env, d) == [b"d%03d" % i for i in range(100)]
    # a child of a txn that has not touched e reads e's committed record
    with env.begin(write=True) as parent:
        with env.begin(write=True, parent=parent) as child:
            assert child.stat(e)["entries"] == 100
            child.put(b"e100", b"3", db=e)
    assert len(_keys(env, e)) == 101
    # emptied, committed, then filled again
    with env.begin(write=True) as t:
        t.drop(d, delete=False)
    with env.begin(write=True) as t:
        assert t.stat(d)["entries"] == 0
        t.put(b"again", b"1", db=d)
    assert _keys(env, d) == [b"again"]
    _assert_sound(env)


def test_reader_of_an_older_snapshot(env):
    db = env.open_db(b"d")
    with env.begin(write=True, db=db) as t:
        t.put(b"old", b"1")
    old = env.begin(db=db)
    with env.begin(write=True, db=db) as t:
        t.put(b"new", b"2")
    # the old reader first uses the handle only now, after the newer commit
    assert [k for k, _ in old.cursor()] == [b"old"]
    old.abort()
    assert _keys(env, db) == [b"new", b"old"]
