"""Appends through one long-lived cursor, mixed with writes through other handles.

The engine skips the descent of an MDB_APPEND put when the cursor already stands on the
tree's last item, and a DUPSORT put with APPEND/APPENDDUP reuses the last key and value
it found.  Those shortcuts are only right while the cursor's page stack is the tree's
current right edge, so here other writes (deletes of the last key, puts through the txn,
puts that split pages) land between the appends, and every answer and the final
contents are compared with a plain dict model and with the structural checker.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdb

STEP = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 400), st.integers(1, 3)),
    st.tuples(st.just("txn_put"), st.integers(0, 400), st.integers(1, 3)),
    st.tuples(st.just("delete_last"), st.just(0), st.just(0)),
    st.tuples(st.just("big"), st.integers(0, 400), st.just(0)),
)


def _key(i: int) -> bytes:
    return b"k%06d" % i


@pytest.mark.parametrize("dupsort", [False, True])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=st.lists(STEP, min_size=1, max_size=120))
def test_appends_mixed_with_other_writes(lm, tmp_path_factory, dupsort, steps):
    path = tmp_path_factory.mktemp("append")
    env = lm.open(str(path), max_dbs=2, map_size=64 << 20)
    try:
        db = env.open_db(b"t", dupsort=dupsort)
        model: dict[bytes, list[bytes]] = {}
        with env.begin(write=True, db=db) as txn:
            cur = txn.cursor()
            for op, i, n in steps:
                k = _key(i)
                if op == "append":
                    for j in range(n):
                        v = b"v%03d-%d" % (i, j)
                        last = max(model) if model else None
                        if dupsort:
                            # as py-lmdb: append=True on a DUPSORT DB is MDB_APPENDDUP, which
                            # orders a key's values, not the keys
                            ok_expected = k not in model or v > model[k][-1]
                            got = cur.put(k, v, append=True, dupdata=True)
                        else:
                            ok_expected = last is None or k > last
                            got = cur.put(k, v, append=True)
                        if ok_expected:
                            assert got is True
                            model.setdefault(k, [])
                            if dupsort:
                                model[k].append(v)
                            else:
                                model[k] = [v]
                        else:
                            assert got is False  # out of order: refused, nothing written
                        if got:
                            assert cur.key() == k and cur.value() == v
                elif op == "txn_put":
                    v = b"w%03d" % n
                    txn.put(k, v)
                    if dupsort:
                        model[k] = sorted(set(model.get(k, []) + [v]))
                    else:
                        model[k] = [v]
                elif op == "delete_last" and model:
                    last = max(model)
                    assert txn.delete(last)
                    del model[last]
                elif op == "big":
                    # big values: few per page, so the next puts split leaves
                    v = bytes([65 + i % 26]) * (400 if dupsort else 1000)  # a dup is a key: <= 511
                    txn.put(k, v)
                    if dupsort:
                        model[k] = sorted(set(model.get(k, []) + [v]))
                    else:
                        model[k] = [v]
            got_items = list(txn.cursor().iternext(keys=True, values=True))
        want = [(k, v) for k in sorted(model) for v in model[k]]
        assert got_items == want
        rep = env.check()
        assert rep["ok"], rep["problems"]
    finally:
        env.close()


def test_append_after_a_split_by_another_handle(lm, tmp_path):
    """The appending cursor's leaf is split by a put through the txn; the next append
    must land after the new last key, not on the cursor's old page."""
    env = lm.open(str(tmp_path / "db"), map_size=64 << 20)
    try:
        with env.begin(write=True) as txn:
            cur = txn.cursor()
            for i in range(50):
                assert cur.put(_key(i), b"x" * 50, append=True)
            for i in range(50, 60):
                txn.put(_key(i), b"y" * 900)  # splits the last leaf more than once
            assert not cur.put(_key(59), b"z", append=True)
            assert cur.put(_key(60), b"z", append=True)
            assert [k for k, _ in txn.cursor()] == [_key(i) for i in range(61)]
        assert env.check()["ok"]
    finally:
        env.close()


if not mdb.backend_features.get("check"):
    pytestmark = pytest.mark.skip(reason="needs the mdb core's checker")
