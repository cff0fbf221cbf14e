"""A cursor of a write transaction keeps working while a child transaction of it runs, as
in LMDB and py-lmdb: it reads the child's writes, and the child's end puts it back (abort)
or leaves it where the child left it (commit).  Each case runs on py-lmdb 3.0 and on mdb,
and the answers must be the same (found by the API differential fuzzer)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest

lmdb = pytest.importorskip("lmdb")
if hasattr(lmdb, "backend_features"):  # the mdb shim, not py-lmdb
    pytest.skip("py-lmdb is not installed", allow_module_level=True)


def scenario(mod: Any, path: str, end: str, close_in_child: bool) -> list[Any]:
    env = mod.open(path, max_dbs=4)
    out: list[Any] = []
    try:
        with env.begin(write=True) as txn:
            for k in (b"b", b"d", b"f"):
                txn.put(k, b"v")
        parent = env.begin(write=True)
        cur = parent.cursor()
        out.append(cur.first())
        child = env.begin(write=True, parent=parent)
        child.put(b"e", b"child")
        out.append((cur.next(), bytes(cur.key())))  # d
        out.append((cur.next(), bytes(cur.key()), bytes(cur.value())))  # the child's e
        out.append((cur.last(), bytes(cur.key())))
        out.append((cur.prev(), bytes(cur.key())))
        if close_in_child:
            cur.close()
        if end == "commit":
            child.commit()
        elif end == "abort":
            child.abort()
        if not close_in_child and end != "parent-abort":
            # a move (not key(), which py-lmdb answers from its cache after an abort)
            out.append((cur.next(), bytes(cur.key())))
            out.append((cur.first(), bytes(cur.key())))
            out.append([bytes(k) for k, _ in cur])
        parent.abort()
        with env.begin() as txn:
            out.append([bytes(k) for k, _ in txn.cursor()])
    finally:
        env.close()
    return out


@pytest.mark.parametrize("close_in_child", [False, True])
@pytest.mark.parametrize("end", ["commit", "abort", "parent-abort"])
def test_parent_cursor_during_child_as_pylmdb(lm, end: str, close_in_child: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        want = scenario(lmdb, os.path.join(tmp, "ref"), end, close_in_child)
        got = scenario(lm, os.path.join(tmp, "mdb"), end, close_in_child)
    assert got == want
    # and what that is, so an engine that blocks the cursor cannot agree by accident
    assert want[1] == (True, b"d") and want[2] == (True, b"e", b"child")
