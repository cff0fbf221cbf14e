"""Lookups with keys longer than a key can be are misses, as in py-lmdb.

A stored key is at most max_key_size() bytes, so txn.get(b"z" * 600) is None,
txn.delete(...) is False, cursor.set_key(...) is False, and set_range(...) finds the
next key in order.  An empty key stays BadValsizeError for lookups that LMDB refuses.
Each outcome (value or exception class) is compared with py-lmdb's, on both backends.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

import mdb

lmdb = pytest.importorskip("lmdb")
if hasattr(lmdb, "backend_features"):  # the shim, not py-lmdb
    pytest.skip("lmdb resolves to mdb", allow_module_level=True)

MAX = 511
SIZES = [0, 1, MAX, MAX + 1, 600, 2 * MAX + 1, 5000]
FILLERS = [b"a", b"m", b"~"]  # below, among and above the stored keys


def _lookups(key: bytes) -> list[tuple[str, Callable[[Any, Any], Any]]]:
    def cur(txn: Any) -> Any:
        return txn.cursor()

    return [
        ("get", lambda txn, db: txn.get(key, db=db)),
        ("get_default", lambda txn, db: txn.get(key, b"dflt", db=db)),
        ("delete", lambda txn, db: txn.delete(key, db=db)),
        ("delete_value", lambda txn, db: txn.delete(key, b"v1", db=db)),
        ("pop", lambda txn, db: txn.pop(key, db=db)),
        ("set_key", lambda txn, db: (lambda c: (c.set_key(key), c.item()))(txn.cursor(db))),
        ("set_range", lambda txn, db: (lambda c: (c.set_range(key), c.item()))(txn.cursor(db))),
        ("cursor_get", lambda txn, db: txn.cursor(db).get(key)),
        (
            "set_key_dup",
            lambda txn, db: (lambda c: (c.set_key_dup(key, b"v1"), c.item()))(txn.cursor(db)),
        ),
        (
            "set_range_dup",
            lambda txn, db: (lambda c: (c.set_range_dup(key, b"v1"), c.item()))(txn.cursor(db)),
        ),
        ("dup_value_lookup", lambda txn, db: txn.cursor(db).set_key_dup(b"mango", key)),
        ("getmulti", lambda txn, db: txn.cursor(db).getmulti([b"mango", key])),
    ]


def _outcomes(mod: Any, path: str, dupsort: bool) -> dict[tuple[str, int, bytes], Any]:
    env = mod.open(path, max_dbs=2, map_size=1 << 24)
    out: dict[tuple[str, int, bytes], Any] = {}
    try:
        db = env.open_db(b"db", dupsort=dupsort)
        with env.begin(write=True, db=db) as txn:
            for k in (b"apple", b"mango", b"zebra"):
                txn.put(k, b"v1")
                txn.put(k, b"v2")
        for size in SIZES:
            for fill in FILLERS:
                key = fill * size
                for name, call in _lookups(key):
                    txn = env.begin(write=True, db=db)
                    try:
                        result: Any = ("ok", call(txn, db))
                    except Exception as exc:  # compare the class name only
                        result = ("exc", type(exc).__name__)
                    finally:
                        txn.abort()
                    out[(name, size, fill)] = result
    finally:
        env.close()
    return out


@pytest.mark.parametrize("dupsort", [False, True], ids=["plain", "dupsort"])
@pytest.mark.parametrize("backend", mdb.BACKENDS)
def test_long_lookup_keys_like_pylmdb(backend: str, dupsort: bool, tmp_path: Any) -> None:
    ours = _outcomes(mdb.get_backend(backend), str(tmp_path / "ours"), dupsort)
    theirs = _outcomes(lmdb, str(tmp_path / "theirs"), dupsort)
    diffs = {k: (ours[k], theirs[k]) for k in theirs if ours.get(k) != theirs[k]}
    assert not diffs, f"{len(diffs)} outcomes differ from py-lmdb (ours, py-lmdb): {diffs}"
    # the issue's own examples, spelled out
    assert theirs[("get", 600, b"m")] == ("ok", None)
    assert theirs[("delete", 600, b"m")] == ("ok", False)
    assert ours[("get", 600, b"~")] == ("ok", None)
    first = b"v1" if dupsort else b"v2"  # plain: the second put replaced the value
    assert ours[("set_range", 600, b"m")] == ("ok", (True, (b"zebra", first)))
    assert ours[("get", 0, b"m")] == ("exc", "BadValsizeError")
