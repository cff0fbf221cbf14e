"""Cursor.key()/value()/item(): the current record, whatever changed since the cursor
last read it.

The cffi backend keeps the record it last read (one GET_CURRENT per position) until the
cursor moves or its transaction changes (a write through any cursor or the transaction,
a child transaction's writes and end, the end of the transaction); the cext backend
re-reads it each time.  Both must answer alike: random scripts of moves, repeated reads
and writes (also nested transactions and drop) run on both backends and their answers
are compared.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

import mdb


def test_repeated_reads_answer_from_the_cursor(lm, env, monkeypatch):
    with env.begin(write=True) as t:
        for k in (b"a", b"b", b"c"):
            t.put(k, k.upper())
    calls: list[int] = []
    if lm.backend == "cffi":  # count the engine reads of the record
        import mdb._cffi.cursor as cffi_cursor

        def counting(real: Any) -> Any:
            def call(*args: Any) -> int:
                calls.append(args[1])
                return int(real(*args))

            return call

        # (the slow path's mdbpy_cursor_get and the fast path's mdbpy_cread)
        for name in ("_lib_cursor_get", "_lib_cread"):
            monkeypatch.setattr(cffi_cursor, name, counting(getattr(cffi_cursor, name)))
    for write in (False, True):
        t = env.begin(write=write)
        c = t.cursor()
        assert c.set_key(b"b")
        del calls[:]
        for _ in range(3):
            assert c.key() == b"b" and c.value() == b"B" and c.item() == (b"b", b"B")
        if lm.backend == "cffi":
            assert len(calls) == 1  # one GET_CURRENT after the move, then the cache
        if write:
            t.put(b"b", b"B2")  # a write through the txn: read again
            assert c.value() == b"B2" and c.item() == (b"b", b"B2")
            other = t.cursor()
            assert other.set_key(b"b") and other.put(b"b", b"B3")
            assert c.item() == (b"b", b"B3") and other.item() == (b"b", b"B3")
            assert other.delete() and other.key() == b"c"
            assert c.key() == other.key() == b"c"  # c moved on with the delete (engine)
            child = env.begin(write=True, parent=t)
            child.put(b"c", b"C2")
            child.abort()
            assert c.item() == (b"c", b"C")
            child = env.begin(write=True, parent=t)
            child.put(b"c", b"C3")
            child.commit()
            assert c.item() == (b"c", b"C3")
        assert c.last() and c.key() == b"c"
        assert c.next() is False and c.item() == (b"", b"")
        assert c.last() and c.key() == b"c"
        closed = t.cursor()
        assert closed.first() and closed.key() == b"a"
        closed.close()
        with pytest.raises(mdb.Error):
            closed.key()
        t.abort()
        with pytest.raises(mdb.Error):
            c.key()
        with pytest.raises(mdb.Error):
            c.item()


def test_drop_elsewhere_unpositions_a_read_cursor(env):
    """drop(delete=False) in a write txn leaves the database's cursors unpositioned, also
    those of a read txn whose record was just read (and, in cffi, cached)."""
    db = env.open_db(b"x")
    with env.begin(write=True, db=db) as t:
        for k in (b"a", b"b", b"c"):
            t.put(k, k.upper())
    r = env.begin(db=db)
    c = r.cursor()
    assert c.set_key(b"b") and c.item() == (b"b", b"B") and c.key() == b"b"
    with env.begin(write=True) as w:
        w.drop(db, delete=False)
    assert c.key() == b"" and c.item() == (b"", b"")
    r.abort()


KEYS = [b"k%03d" % i for i in range(300)]


def script(lm: Any, path: str, seed: int) -> list[Any]:
    """Random moves, repeated reads and writes on one backend; every answer."""
    rng = random.Random(seed)
    out: list[Any] = []

    def rec(fn: Any, *args: Any) -> None:
        try:
            out.append(fn(*args))
        except Exception as exc:  # compare errors by class
            out.append(type(exc).__name__)

    env = lm.open(path, max_dbs=4, map_size=16 << 20)
    try:
        for dupsort in (False, True):
            db = env.open_db(b"dup" if dupsort else b"plain", dupsort=dupsort)
            with env.begin(write=True, db=db) as t:
                for k in rng.sample(KEYS, 200):
                    for j in range(rng.choice([1, 3]) if dupsort else 1):
                        t.put(k, b"v%d" % j)
            for _round in range(6):
                write = rng.random() < 0.7
                t = env.begin(write=write, db=db)
                cs = [t.cursor(), t.cursor()]
                its: list[Any] = []
                for _step in range(120):
                    c = rng.choice(cs)
                    k = rng.choice(KEYS)
                    if rng.random() < 0.5:  # often a key a cursor is on
                        k = rng.choice(cs).key() or k
                    v = b"v%d" % rng.randrange(4)
                    r = rng.random()
                    if rng.random() < 0.15:  # iterators (read-ahead in read-only txns)
                        if not its or rng.random() < 0.1:
                            kind = rng.choice(["iternext", "iterprev", "iternext_nodup"])
                            its.append((c, getattr(c, kind)()))
                        ic, it = rng.choice(its)
                        for _ in range(rng.choice([1, 1, 10, 100])):
                            rec(next, it, None)
                            if rng.random() < 0.2:
                                rec(ic.item)
                        continue
                    if r < 0.35:
                        for _ in range(rng.choice([1, 2, 3])):
                            rec(getattr(c, rng.choice(["key", "value", "item"])))
                    elif r < 0.6:
                        name = rng.choice(["first", "last", "next", "prev", "next_nodup"])
                        if dupsort:
                            name = rng.choice([name, "next_dup", "prev_dup", "last_dup"])
                        if name.endswith("_dup") and c.key() == b"":
                            continue  # unpositioned: engine-defined, not ours
                        rec(getattr(c, name))
                    elif r < 0.7:
                        rec(rng.choice([c.set_key, c.set_range]), k)
                    elif r < 0.72:
                        rec(c.count if dupsort and c.key() else c.key)
                    elif not write:
                        rec(c.get, k)
                    elif r < 0.78:
                        rec(t.put, k, v)
                    elif r < 0.82:
                        rec(t.delete, k)
                    elif r < 0.85:
                        rec(rng.choice([t.replace, c.replace]), k, v)
                    elif r < 0.88:
                        rec(rng.choice([t.pop, c.pop]), k)
                    elif r < 0.91:
                        rec(c.put, k, v)
                    elif r < 0.93:
                        if c.key():
                            rec(c.delete)
                    elif r < 0.94:
                        rec(t.putmulti, [(k, v), (rng.choice(KEYS), v)])
                    elif r < 0.98:  # a child txn writes, then commits or aborts
                        child = env.begin(write=True, parent=t, db=db)
                        rec(c.item)  # (the parent is unusable while it has a child)
                        cc = child.cursor()
                        rec(cc.set_range, k)
                        rec(child.put, k, v)
                        rec(child.delete, rng.choice(KEYS))
                        rec(cc.item)
                        rec(child.commit if rng.random() < 0.5 else child.abort)
                    elif r < 0.985:
                        rec(t.drop, db, False)
                    else:
                        rec(cs[1].close)
                        rec(cs[1].key)
                        cs[1] = t.cursor()
                for c in cs:
                    rec(c.item)
                if write and rng.random() < 0.5:
                    t.commit()
                else:
                    t.abort()
                rec(cs[0].key)
            with env.begin(write=True) as t:
                t.drop(db)
    finally:
        env.close()
    return out


@pytest.mark.parametrize("seed", range(6))
def test_backends_read_the_same_records(tmp_path, seed):
    try:
        cext, cffi = mdb.get_backend("cext"), mdb.get_backend("cffi")
    except ImportError as exc:
        if os.environ.get("MDB_REQUIRE_BACKENDS") == "1":
            raise
        pytest.skip(f"needs both backends: {exc}")
    base = int(os.environ.get("MDB_TEST_SEED", "1"))
    want = script(cext, str(tmp_path / "cext"), base + seed)
    got = script(cffi, str(tmp_path / "cffi"), base + seed)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"answer {i}: cffi {g!r}, cext {w!r}"
