"""Puts past the last key through the txn (mdb_put), mixed with every other kind of write.

mdb_put remembers the page stack of the right edge of the tree it last put at the end
of, and the next put past the last key starts from there instead of from the root.  That
stack is only right while nothing else has changed a tree or moved a dirty page since,
so between such puts here come: puts anywhere, overflow values, deletes of the last key
and of others, puts and deletes through a cursor, writes to another DB, nested txns that
commit or abort, emptying the DB, and commits.  Every step is checked against a dict
model (the last key, and the whole DB at the end) and the structural checker.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdb

STEP = st.one_of(
    st.tuples(st.just("seq"), st.integers(1, 60), st.booleans()),
    st.tuples(st.just("put"), st.integers(0, 3000), st.booleans()),
    st.tuples(st.just("big"), st.integers(0, 3000), st.booleans()),
    st.tuples(st.just("del_last"), st.just(0), st.just(False)),
    st.tuples(st.just("del"), st.integers(0, 3000), st.just(False)),
    st.tuples(st.just("cursor_put"), st.integers(0, 3000), st.just(False)),
    st.tuples(st.just("cursor_del"), st.integers(0, 3000), st.just(False)),
    st.tuples(st.just("other_db"), st.integers(0, 3000), st.just(False)),
    st.tuples(st.just("nested"), st.integers(1, 60), st.booleans()),
    st.tuples(st.just("empty"), st.just(0), st.just(False)),
    st.tuples(st.just("commit"), st.just(0), st.just(False)),
)


def _key(i: int) -> bytes:
    return b"%08d" % i


def _next_keys(model: dict[bytes, bytes], n: int) -> list[bytes]:
    start = int(max(model)) + 1 if model else 0
    return [_key(start + j) for j in range(n)]


def _seq(txn, db, model, n, append, tag):
    for j, k in enumerate(_next_keys(model, n)):
        v = b"%s-%d" % (tag, j) * (1 + j % 7)
        assert txn.put(k, v, db=db, append=append)
        model[k] = v


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(STEP, min_size=1, max_size=60))
def test_puts_past_the_last_key_between_other_writes(lm, tmp_path_factory, steps):
    path = tmp_path_factory.mktemp("edge")
    env = lm.open(str(path), max_dbs=4, map_size=256 << 20)
    try:
        db = env.open_db(b"t")
        other = env.open_db(b"o")
        model: dict[bytes, bytes] = {}
        txn = env.begin(write=True)
        cur = txn.cursor(db=db)
        for op, i, flag in steps:
            if op == "seq":
                _seq(txn, db, model, i, flag, b"s")
            elif op == "put":
                k, v = _key(i), b"p" * (1 + i % 50)
                assert txn.put(k, v, db=db, append=flag) == (
                    not flag or not model or k > max(model)
                )
                if not flag or not model or k > max(model):
                    model[k] = v
            elif op == "big":
                # an overflow value, at the end or anywhere
                k = _next_keys(model, 1)[0] if flag else _key(i)
                v = bytes([65 + i % 26]) * (3000 + i)
                assert txn.put(k, v, db=db)
                model[k] = v
            elif op == "del_last":
                if model:
                    last = max(model)
                    assert txn.delete(last, db=db)
                    del model[last]
            elif op == "del":
                assert txn.delete(_key(i), db=db) == (_key(i) in model)
                model.pop(_key(i), None)
            elif op == "cursor_put":
                k = _key(i)
                assert cur.put(k, b"c%d" % i)
                model[k] = b"c%d" % i
            elif op == "cursor_del":
                if cur.set_range(_key(i)):
                    k = cur.key()
                    assert cur.delete()
                    del model[k]
            elif op == "other_db":
                assert txn.put(_key(i), b"o", db=other)
            elif op == "nested":
                child = env.begin(write=True, parent=txn)
                trial = dict(model)
                _seq(child, db, trial, i, False, b"n")
                if trial and i % 3 == 0:
                    last = max(trial)
                    assert child.delete(last, db=db)
                    del trial[last]
                if flag:
                    child.commit()
                    model = trial
                else:
                    child.abort()
            elif op == "empty":
                txn.drop(db, delete=False)
                model.clear()
            elif op == "commit":
                txn.commit()
                txn = env.begin(write=True)
                cur = txn.cursor(db=db)
            # the tree's end as the model has it, by a cursor and by a lookup
            last_cur = txn.cursor(db=db)
            if model:
                last = max(model)
                assert last_cur.last() and last_cur.key() == last
                assert txn.get(last, db=db) == model[last]
            else:
                assert not last_cur.last()
        # and the next puts past the end still land in order
        _seq(txn, db, model, 5, False, b"z")
        got = list(txn.cursor(db=db).iternext(keys=True, values=True))
        txn.commit()
        assert got == sorted(model.items())
        rep = env.check()
        assert rep["ok"], rep["problems"]
    finally:
        env.close()


def test_sequential_fill_lays_out_full_pages(lm, tmp_path):
    """Puts in key order without MDB_APPEND fill leaves as MDB_APPEND does: the page a
    put past the last key overflows stays whole and the key starts the next page."""
    sizes = {}
    for append in (False, True):
        env = lm.open(str(tmp_path / f"db{append}"), map_size=64 << 20)
        try:
            with env.begin(write=True) as txn:
                for i in range(20000):
                    assert txn.put(_key(i), b"v" * 100, append=append)
            sizes[append] = env.stat()["leaf_pages"]
            with env.begin() as txn:
                assert [k for k, _ in txn.cursor()] == [_key(i) for i in range(20000)]
            assert env.check()["ok"]
        finally:
            env.close()
    # a record takes an 8-byte node header, its key and value, and a 2-byte slot
    per_page = (4096 - 16) // (8 + 8 + 100 + 2)
    assert sizes[False] == sizes[True] == -(-20000 // per_page)


if not mdb.backend_features.get("check"):
    pytestmark = pytest.mark.skip(reason="needs the mdb core's checker")
