"""Open cursors keep their item while other handles put into the same database.

After a put that allocated and freed no page (an insert or overwrite in a leaf that was
already dirty), the core leaves cursors standing on other leaves as they are and seeks
again only those on the changed leaf (cursor_track.c, track_after_put).  Here several
cursors stand on items of a plain or a DUPSORT database spread over many leaves while
puts arrive through txn.put and through another cursor: new keys, new duplicates,
overwrites of the same and of another size, values that overflow, and enough of them to
split leaves now and then.  After every put each cursor must still read its item, and a
step from it must reach the item the sorted model says comes next.  A cursor whose leaf
changed but was left alone, or one kept after a split, reads another item.
"""

from __future__ import annotations

import bisect

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdb

KEYS = 800
VALUE_SIZES = (8, 40, 41, 120, 3000)  # 3000: an overflow value (not in DUPSORT)

PUT = st.tuples(
    st.sampled_from(["txn", "cursor"]),
    # half of the keys land next to the first cursor, so its leaf fills and splits
    st.one_of(st.integers(0, KEYS - 1), st.integers(-40, 40).map(lambda d: ("near", d))),
    st.integers(0, 30),  # which duplicate (DUPSORT) / which value byte
    st.sampled_from(VALUE_SIZES),
)
WATCH = st.tuples(st.integers(0, 10**6), st.sampled_from(["next", "prev", "none"]))


def _key(i: int) -> bytes:
    return b"k%05d" % i


def _value(dup: int, size: int) -> bytes:
    return (b"%03d" % dup + b"v" * size)[:size]


@pytest.mark.parametrize("dupsort", [False, True], ids=["plain", "dupsort"])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    stride=st.integers(1, 4),
    watchers=st.lists(WATCH, min_size=1, max_size=6),
    puts=st.lists(PUT, min_size=1, max_size=120),
)
def test_cursors_keep_their_items(lm, tmp_path_factory, dupsort, stride, watchers, puts):
    env = lm.open(str(tmp_path_factory.mktemp("stay")), map_size=64 << 20, max_dbs=2)
    try:
        db = env.open_db(b"d", dupsort=dupsort)
        model: list[tuple[bytes, bytes]] = []
        with env.begin(write=True, db=db) as txn:
            # filled in this txn: its pages are dirty, so most later puts allocate nothing
            for i in range(0, KEYS, stride):
                for d in range(3 if dupsort else 1):
                    txn.put(_key(i), _value(d, 40))
                    model.append((_key(i), _value(d, 40)))
            model.sort()
            cursors = []
            for pos, _step in watchers:
                c = txn.cursor()
                item = model[pos % len(model)]
                assert c.set_key_dup(*item) if dupsort else c.set_key(item[0])
                cursors.append([c, item])
            writer = txn.cursor()
            first = int(cursors[0][1][0][1:])
            for via, ki, dup, size in puts:
                if isinstance(ki, tuple):
                    ki = min(max(first + ki[1], 0), KEYS - 1)
                k = _key(ki)
                if dupsort:
                    v = _value(dup, min(size, 200))
                    new = (k, v) not in model
                else:
                    v = _value(dup, size)
                    new = True
                if via == "txn":
                    txn.put(k, v)
                else:
                    writer.put(k, v)
                if dupsort:
                    if new:
                        bisect.insort(model, (k, v))
                else:
                    at = bisect.bisect_left(model, (k, b""))
                    if at < len(model) and model[at][0] == k:
                        model[at] = (k, v)
                        for entry in cursors:  # a cursor on k now reads the new value
                            if entry[1][0] == k:
                                entry[1] = (k, v)
                    else:
                        model.insert(at, (k, v))
                for c, item in cursors:
                    assert c.item() == item
            # a step from where each cursor stands reaches the model's neighbour
            for (c, item), (_pos, step) in zip(cursors, watchers, strict=True):
                at = model.index(item)
                if step == "next":
                    want = model[at + 1] if at + 1 < len(model) else None
                    got = c.item() if c.next() else None
                elif step == "prev":
                    want = model[at - 1] if at > 0 else None
                    got = c.item() if c.prev() else None
                else:
                    continue
                assert got == want
        with env.begin(db=db) as txn:
            assert list(txn.cursor()) == model
        rep = env.check() if mdb.backend_features.get("check") else {"ok": True}
        assert rep["ok"], rep
    finally:
        env.close()
