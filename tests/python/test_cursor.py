"""Cursor: positioning, iteration, dupsort, getmulti, writes."""

from __future__ import annotations

import gc
import weakref

import pytest

import mdb

KEYS = [b"a", b"b", b"baa", b"d"]


@pytest.fixture
def filled(env):
    with env.begin(write=True) as t:
        for k in KEYS:
            t.put(k, k.upper())
    return env


@pytest.fixture
def dup(env):
    db = env.open_db(b"dup", dupsort=True)
    with env.begin(write=True, db=db) as t:
        for k in (b"a", b"b", b"c"):
            for v in (b"1", b"2", b"3"):
                t.put(k, v)
    return env, db


def test_positioning(filled):
    c = filled.begin().cursor()
    assert c.key() == b"" and c.item() == (b"", b"")
    assert c.first() and c.key() == b"a"
    assert c.next() and c.key() == b"b"
    assert c.last() and c.item() == (b"d", b"D")
    assert c.prev() and c.key() == b"baa"
    assert c.set_key(b"b") and c.value() == b"B"
    assert not c.set_key(b"zz") and c.key() == b""
    assert c.set_range(b"bb") and c.key() == b"d"
    assert not c.set_range(b"e")
    assert c.set_range(b"") and c.key() == b"a"
    assert c.get(b"baa") == b"BAA" and c.get(b"x", 5) == 5
    c.last()
    assert not c.next() and c.key() == b""


def test_iteration(filled):
    t = filled.begin()
    c = t.cursor()
    assert list(c) == [(k, k.upper()) for k in KEYS]
    c = t.cursor()
    assert list(c.iternext(values=False)) == KEYS
    c = t.cursor()
    assert list(c.iterprev(keys=False)) == [k.upper() for k in reversed(KEYS)]
    c = t.cursor()
    c.set_key(b"b")
    assert list(c.iternext(values=False)) == KEYS[1:]
    c.set_key(b"b")
    assert list(c.iterprev(values=False)) == [b"b", b"a"]
    assert list(t.cursor()._iter_from(b"ba", False)) == [(b"baa", b"BAA"), (b"d", b"D")]


@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_iterator_after_its_end_follows_the_cursor(env, write):
    """As py-lmdb's: an iterator steps its cursor on each __next__ and keeps no end state.
    It raises StopIteration while the cursor is unpositioned and, once the cursor is
    positioned again, goes on from there (a finished generator would stay finished)."""
    keys = [b"%04d" % i for i in range(600)]  # enough for the cffi read-ahead batches
    with env.begin(write=True) as t:
        for k in keys:
            t.put(k, b"v" + k)
    t = env.begin(write=write)
    c = t.cursor()
    it = c.iternext(values=False)
    assert list(it) == keys
    assert next(it, None) is None and c.key() == b""  # unpositioned: stays ended
    assert c.set_key(b"0597")
    assert list(it) == [b"0598", b"0599"]  # steps on from the new position
    assert c.first()
    assert [next(it), next(it)] == [b"0001", b"0002"]
    assert not c.set_key(b"nope")  # unpositioned mid-way: ends
    assert next(it, None) is None and next(it, None) is None
    assert c.set_range(b"0300")
    assert next(it) == b"0301" and c.key() == b"0301"

    back = c.iterprev(keys=False)
    assert next(back) == b"v0301"  # the first step yields the current record
    assert len(list(back)) == 301 and c.key() == b""
    assert c.last() and list(back) == [b"v" + k for k in reversed(keys[:-1])]

    c2 = t.cursor()
    empty = c2.iternext()
    assert c2.set_key(b"0010") and next(empty) == (b"0010", b"v0010")  # positioned: no first()
    fresh = t.cursor()
    it2 = iter(fresh)
    assert next(it2) == (b"0000", b"v0000")  # unpositioned: first()
    assert fresh.last() and next(it2, None) is None
    assert fresh.last() and next(it2, None) is None  # still past the end: last() then next()


@pytest.mark.parametrize("kind", ["iternext_dup", "iterprev_dup", "iternext_nodup"])
def test_dup_iterators_after_their_end(dup, kind):
    env, db = dup
    c = env.begin(db=db).cursor()
    it = getattr(c, kind)()
    if kind.endswith("_dup"):
        assert next(it, None) is None  # unpositioned: the _dup iterators do not position
        assert c.set_key(b"b")
        if kind == "iternext_dup":
            assert list(it) == [b"1", b"2", b"3"]  # nothing yielded yet: the current first
            assert c.set_key(b"a") and list(it) == [b"2", b"3"]
        else:
            assert c.last_dup() and list(it) == [b"3", b"2", b"1"]
            assert c.set_key(b"c") and c.last_dup() and list(it) == [b"2", b"1"]
    else:
        assert list(it) == [b"a", b"b", b"c"]
        assert c.first() and list(it) == [b"b", b"c"]


def test_iterator_dies_with_txn(filled):
    t = filled.begin()
    it = t.cursor().iternext()
    next(it)
    t.abort()
    with pytest.raises(mdb.Error):
        next(it)


@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_unreferenced_cursors_go_at_once(lm, filled, write):
    """A transaction tracks its cursors without keeping them alive: cursors nobody refers
    to are freed (engine handle closed) at once, not when the transaction ends, while
    ending it still ends those alive (also one only an iterator refers to)."""
    t = filled.begin(write=write)
    gc.disable()  # freed by reference counting, not by a collection
    try:
        refs = []
        for _ in range(20000):
            c = t.cursor()
            c.first()
            refs.append(weakref.ref(c))
        del c
        assert sum(r() is not None for r in refs) == 0
        alive = [t.cursor() for _ in range(3)]
        assert all(c.first() for c in alive)
        it = iter(t.cursor())
        assert next(it) == (b"a", b"A")
        closed = t.cursor()
        closed.close()
        del closed
        t.abort()
        for c in alive:
            with pytest.raises(mdb.Error):
                c.first()
            with pytest.raises(mdb.Error):
                c.key()
        with pytest.raises(mdb.Error):
            next(it)
        held = weakref.ref(alive[0])
        del alive, it
        assert held() is None
    finally:
        gc.enable()
    with filled.begin(write=True) as t:  # the writer lock and the env are fine
        assert t.put(b"z", b"Z")


@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_dropped_iterator_lets_its_cursor_go(env, write):
    """An iterator dropped mid-way (the cffi one in the middle of a read-ahead batch)
    frees its cursor at once: nothing in it refers back to itself."""
    with env.begin(write=True) as t:
        for i in range(1000):
            t.put(b"%04d" % i, b"v")
    t = env.begin(write=write)
    gc.disable()
    try:
        c = t.cursor()
        ref = weakref.ref(c)
        it = c.iternext(values=False)
        del c
        assert [next(it) for _ in range(300)][-1] == b"0299"
        del it
        assert ref() is None
    finally:
        gc.enable()
    t.abort()


def test_dupsort(dup):
    env, db = dup
    c = env.begin(db=db).cursor()
    assert c.set_key(b"b") and c.count() == 3
    assert list(c.iternext_dup()) == [b"1", b"2", b"3"]
    c.set_key(b"b")
    assert c.last_dup() and c.value() == b"3"
    assert c.prev_dup() and c.value() == b"2"
    assert c.first_dup() and c.value() == b"1"
    assert c.next_nodup() and c.item() == (b"c", b"1")
    assert c.prev_nodup() and c.item() == (b"b", b"3")
    c = env.begin(db=db).cursor()
    assert list(c.iternext_nodup()) == [b"a", b"b", b"c"]
    c = env.begin(db=db).cursor()
    assert list(c.iterprev_nodup()) == [b"c", b"b", b"a"]
    assert c.set_key_dup(b"a", b"2") and c.item() == (b"a", b"2")
    assert not c.set_key_dup(b"a", b"9")
    assert c.set_range_dup(b"a", b"15") and c.value() == b"2"


def test_count_incompatible(filled):
    c = filled.begin().cursor()
    c.first()
    with pytest.raises(mdb.Error):
        c.count()


def test_getmulti(dup):
    env, db = dup
    c = env.begin(db=db).cursor()
    assert c.getmulti([b"a", b"x", b"c"]) == [(b"a", b"1"), (b"c", b"1")]
    assert c.getmulti([b"b"], dupdata=True) == [(b"b", b"1"), (b"b", b"2"), (b"b", b"3")]
    assert c.getmulti([b"a", b"zz"], values=False) == [b"a"]


def test_getmulti_keyfixed(env):
    db = env.open_db(b"f", dupsort=True, dupfixed=True)
    with env.begin(write=True, db=db) as t:
        for k in (b"k1", b"k2"):
            for v in (b"aa", b"bb"):
                t.put(k, v)
    c = env.begin(db=db).cursor()
    mv = c.getmulti([b"k1", b"k2"], dupdata=True, dupfixed_bytes=2, keyfixed=True)
    assert bytes(mv) == b"k1aak1bbk2aak2bb"


def test_cursor_writes(env):
    with env.begin(write=True) as t:
        c = t.cursor()
        assert c.put(b"b", b"2") and c.key() == b"b"
        assert c.put(b"a", b"1")
        assert c.putmulti([(b"c", b"3"), (b"d", b"4")]) == (2, 2)
        with pytest.raises(TypeError):
            c.putmulti([[b"e", b"5"]])
        assert c.replace(b"a", b"9") == b"1"
        assert c.pop(b"c") == b"3" and c.pop(b"c") is None
        c.set_key(b"b")
        assert c.delete() and c.key() == b"d"
        assert list(t.cursor().iternext(values=False)) == [b"a", b"d"]


def test_dupsort_replace_and_delete_all(dup):
    env, db = dup
    with env.begin(write=True, db=db) as t:
        assert t.replace(b"a", b"x") == b"1"
        assert t.get(b"a") == b"x"
        c = t.cursor()
        c.set_key(b"b")
        assert c.delete(dupdata=True)
        assert t.get(b"b") is None
        assert t.delete(b"c", b"2")
        assert [v for v in t.cursor(db).iternext() if v[0] == b"c"] == [(b"c", b"1"), (b"c", b"3")]


def test_cursor_ctx_and_close(filled):
    t = filled.begin()
    with t.cursor() as c:
        c.first()
    with pytest.raises(mdb.Error):
        c.key()
    c.close()


def test_cursor_constructor(lm, filled):
    t = filled.begin()
    c = lm.Cursor(filled.open_db(), t)
    assert c.first()


def test_getmulti_generator_and_buffer_keys(dup):
    env, db = dup
    c = env.begin(db=db).cursor()
    keys = (k for k in (bytearray(b"a"), memoryview(b"c"), b"zz"))
    assert c.getmulti(keys) == [(b"a", b"1"), (b"c", b"1")]
    with pytest.raises(TypeError):
        c.getmulti([b"a", "str"])
    with pytest.raises(TypeError):
        c.getmulti(5)


def test_getmulti_buffers(dup):
    env, db = dup
    with env.begin(db=db, buffers=True) as t:
        out = t.cursor().getmulti([b"b"], dupdata=True)
        assert [(bytes(k), bytes(v)) for k, v in out] == [(b"b", b"1"), (b"b", b"2"), (b"b", b"3")]
