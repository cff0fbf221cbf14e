"""Lookups and puts through a cursor that already stands somewhere (cursor_seek_here).

A put through a positioned cursor first compares its key with the item under the cursor
(a get and then a put of the same key need no second search).  Here the cursor jumps
between keys in its own leaf, next to it and far away, puts at the key it stands on and
elsewhere, while other handles put and delete (splitting and merging its leaf), in write
txns and in read txns, and every answer is compared with a sorted model.
"""

from __future__ import annotations

import bisect

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdb

KEYS = 1500

STEP = st.one_of(
    st.tuples(st.just("set_key"), st.integers(0, KEYS)),
    st.tuples(st.just("set_range"), st.integers(0, KEYS)),
    st.tuples(st.just("near"), st.integers(-40, 40)),
    st.tuples(st.just("cursor_put"), st.integers(0, KEYS)),
    st.tuples(st.just("other_put"), st.integers(0, KEYS)),
    st.tuples(st.just("other_del"), st.integers(0, KEYS)),
    st.tuples(st.just("cursor_del"), st.just(0)),
    st.tuples(st.just("put_here"), st.integers(0, 9)),
)


def _key(i: int) -> bytes:
    return b"%06d" % i


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stride=st.integers(1, 5), steps=st.lists(STEP, min_size=1, max_size=80))
def test_lookups_from_where_the_cursor_stands(lm, tmp_path_factory, stride, steps):
    env = lm.open(str(tmp_path_factory.mktemp("near")), map_size=64 << 20)
    try:
        # 300 to 1,500 keys: 5 to 25 leaves, so most jumps leave the cursor's leaf
        model = [_key(i) for i in range(0, KEYS, stride)]
        with env.begin(write=True) as txn:
            for k in model:
                txn.put(k, k * 8)  # 48-byte values: about 60 to a leaf
        values = {k: k * 8 for k in model}
        at = 0  # the model index the cursor stands on (for "near")
        with env.begin(write=True) as txn:
            cur = txn.cursor()
            other = txn.cursor()
            for op, i in steps:
                if op == "near":
                    i = int(model[min(max(at, 0), len(model) - 1)]) + i if model else i
                    op = "set_range" if i % 2 else "set_key"
                k = _key(max(i, 0))
                if op == "set_key":
                    assert cur.set_key(k) == (k in model)
                    if k in model:
                        assert cur.key() == k and cur.value() == values[k]
                        at = bisect.bisect_left(model, k)
                elif op == "set_range":
                    j = bisect.bisect_left(model, k)
                    assert cur.set_range(k) == (j < len(model))
                    if j < len(model):
                        assert cur.key() == model[j]
                        at = j
                elif op == "cursor_put":
                    assert cur.put(k, k * 8)
                    values[k] = k * 8
                    if k not in model:
                        bisect.insort(model, k)
                    assert cur.key() == k
                    at = bisect.bisect_left(model, k)
                elif op == "other_put":
                    assert other.put(k, k * 8)
                    values[k] = k * 8
                    if k not in model:
                        bisect.insort(model, k)
                elif op == "other_del":
                    assert txn.delete(k) == (k in model)
                    if k in model:
                        model.remove(k)
                elif op == "put_here" and cur.key():
                    # the value changes length: the node is rewritten, maybe moved
                    k, v = cur.key(), cur.key() * (1 + i)
                    assert cur.put(k, v)
                    assert cur.key() == k and cur.value() == v
                    values[k] = v
                elif op == "cursor_del" and model and cur.key():
                    k = cur.key()
                    assert cur.delete()
                    model.remove(k)
            assert list(txn.cursor()) == [(k, values[k]) for k in model]
        # and in a read txn, where the pages never change
        with env.begin() as txn:
            cur = txn.cursor()
            for op, i in steps:
                k = _key(abs(i) % (KEYS + 1))
                j = bisect.bisect_left(model, k)
                if op in ("set_key", "near"):
                    assert cur.set_key(k) == (k in model)
                else:
                    assert cur.set_range(k) == (j < len(model))
                    if j < len(model):
                        assert cur.key() == model[j]
        assert env.check()["ok"]
    finally:
        env.close()


if not mdb.backend_features.get("check"):
    pytestmark = pytest.mark.skip(reason="needs the mdb core's checker")
