"""Transaction: records, context managers, nesting, write-lock rules."""

from __future__ import annotations

import threading
import time

import pytest

import mdb


def test_put_get_delete(env):
    with env.begin(write=True) as t:
        assert t.put(b"k", b"v") is True
        assert t.put(b"k", b"w", overwrite=False) is False
        assert t.get(b"k") == b"v"
        assert t.get(b"missing") is None
        assert t.get(b"missing", default=7) == 7
        assert t.delete(b"k") is True
        assert t.delete(b"k") is False


def test_replace_pop(env):
    with env.begin(write=True) as t:
        assert t.replace(b"k", b"1") is None
        assert t.replace(b"k", b"2") == b"1"
        assert t.pop(b"k") == b"2"
        assert t.pop(b"k") is None


def test_pop_on_dupsort_takes_only_the_first_value(env):
    # py-lmdb's contract; deleting every value of the key would lose data silently.
    db = env.open_db(b"dups", dupsort=True)
    with env.begin(write=True, db=db) as t:
        for v in (b"a", b"b", b"c"):
            t.put(b"k", v)
        t.put(b"z", b"1")
        assert t.pop(b"k") == b"a"
        c = t.cursor()
        assert c.set_key(b"k")
        assert list(c.iternext_dup(keys=False)) == [b"b", b"c"]
        assert c.pop(b"k") == b"b"
        assert c.pop(b"missing") is None
    with env.begin(db=db) as t:
        c = t.cursor()
        assert c.set_key(b"k") and list(c.iternext_dup(keys=False)) == [b"c"]
        assert t.get(b"z") == b"1"


def test_append(env):
    with env.begin(write=True) as t:
        assert t.put(b"b", b"1", append=True)
        assert t.put(b"a", b"1", append=True) is False


def test_ctx_commits_and_aborts(env):
    with env.begin(write=True) as t:
        t.put(b"a", b"1")
    with pytest.raises(RuntimeError):
        with env.begin(write=True) as t:
            t.put(b"b", b"1")
            raise RuntimeError
    r = env.begin()
    assert r.get(b"a") == b"1" and r.get(b"b") is None


def test_explicit_commit_inside_ctx(env):
    with env.begin(write=True) as t:
        t.put(b"a", b"1")
        t.commit()
    assert env.begin().get(b"a") == b"1"


def test_finished_txn_raises(env):
    t = env.begin(write=True)
    t.commit()
    with pytest.raises(mdb.Error, match="closed"):
        t.get(b"a")
    with pytest.raises(mdb.Error):
        t.commit()
    t.abort()


def test_nested(env):
    parent = env.begin(write=True)
    parent.put(b"p", b"1")
    child = env.begin(write=True, parent=parent)
    child.put(b"c", b"1")
    child.abort()
    assert parent.get(b"c") is None
    child = env.begin(write=True, parent=parent)
    child.put(b"c", b"2")
    child.commit()
    assert parent.get(b"c") == b"2"
    parent.commit()
    assert env.begin().get(b"c") == b"2"


def test_parent_end_invalidates_child(env):
    parent = env.begin(write=True)
    child = env.begin(write=True, parent=parent)
    parent.abort()
    with pytest.raises(mdb.Error):
        child.get(b"x")


def test_second_write_txn_same_thread_raises(env):
    t = env.begin(write=True)
    with pytest.raises(mdb.Error, match="deadlock"):
        env.begin(write=True)
    t.abort()


def test_second_write_txn_other_thread_waits(env):
    t = env.begin(write=True)
    got = []

    def worker():
        with env.begin(write=True) as t2:
            got.append(t2.get(b"k"))

    th = threading.Thread(target=worker)
    th.start()
    time.sleep(0.2)
    assert th.is_alive() and got == []  # blocked on the writer lock, GIL released
    t.put(b"k", b"v")
    t.commit()
    th.join(5)
    assert got == [b"v"]


def test_id_and_stat(env):
    with env.begin(write=True) as t:
        t.put(b"a", b"1")
        wid = t.id()
    r = env.begin()
    assert r.id() == wid
    assert r.stat()["entries"] == 1


def test_drop(env):
    db = env.open_db(b"sub")
    with env.begin(write=True, db=db) as t:
        t.put(b"a", b"1")
        cur = t.cursor()
        t.drop(db, delete=False)
        assert t.get(b"a") is None
        assert cur.first() is False  # emptied: cursors survive, unpositioned
    with env.begin(write=True) as t:
        t.drop(db)
    assert b"sub" not in env.dbs()
    with pytest.raises(mdb.InvalidParameterError):
        env.begin().get(b"a", db=db)


def test_db_of_aborted_txn_forgotten(env):
    t = env.begin(write=True)
    env.open_db(b"gone", txn=t)
    t.abort()
    with pytest.raises(mdb.NotFoundError):
        env.open_db(b"gone", create=False)


def test_parent_commit_discards_unfinished_child(env):
    parent = env.begin(write=True)
    child = env.begin(write=True, parent=parent)
    child.put(b"k", b"v")
    parent.commit()
    assert env.begin().get(b"k") is None


def test_putmulti_txn(env):
    with env.begin(write=True) as t:
        assert t.putmulti([(b"a", b"1"), (b"b", b"2")]) == (2, 2)
        assert t.putmulti([(b"a", b"x")], overwrite=False) == (1, 0)


def test_spare_txns_reused(lm, tmp_path):
    env = lm.open(str(tmp_path / "s"), max_spare_txns=1)
    for _ in range(5):
        with env.begin() as r:
            r.get(b"a")
    with env.begin(write=True) as w:
        w.put(b"a", b"2")
    assert env.begin().get(b"a") == b"2"


def test_transaction_constructor(lm, env):
    t = lm.Transaction(env, write=True)
    t.put(b"x", b"y")
    t.commit()
    assert lm.Transaction(env).get(b"x") == b"y"
