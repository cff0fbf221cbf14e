"""Committing a txn while its children are still open.

LMDB's mdb_txn_commit commits a live child first, recursively, so the writes of every txn
down the chain are kept.  Each scenario runs on our library and on Debian's liblmdb (the
oracle), in child processes (ctypes), and the keys each finds afterwards must agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBS = {
    "ours": os.path.join(ROOT, "build", "libmdbcore.so"),
    "debian": "/usr/lib/x86_64-linux-gnu/liblmdb.so.0",
}

_CHILD = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
path, plan = sys.argv[2].encode(), json.loads(sys.argv[3])
class Val(ctypes.Structure):
    _fields_ = [("mv_size", ctypes.c_size_t), ("mv_data", ctypes.c_void_p)]
env, dbi = ctypes.c_void_p(), ctypes.c_uint()
assert lib.mdb_env_create(ctypes.byref(env)) == 0
assert lib.mdb_env_open(env, path, 0x10000 | 0x4000, 0o644) == 0
txns, keep, out = [], [], {"rcs": []}
for step in plan:
    op = step[0]
    if op == "begin":
        t = ctypes.c_void_p()
        parent = txns[-1] if txns else None
        out["rcs"].append(lib.mdb_txn_begin(env, parent, 0, ctypes.byref(t)))
        if not txns:
            assert lib.mdb_dbi_open(t, None, 0, ctypes.byref(dbi)) == 0
        txns.append(t)
    elif op == "put":
        b = ctypes.create_string_buffer(step[1].encode())
        keep.append(b)
        k = Val(len(step[1]), ctypes.cast(b, ctypes.c_void_p))
        out["rcs"].append(lib.mdb_put(txns[-1], dbi, ctypes.byref(k), ctypes.byref(k), 0))
    elif op == "commit":  # step[1]: depth of the txn committed; its children end with it
        out["rcs"].append(lib.mdb_txn_commit(txns[step[1]]))
        del txns[step[1]:]
    elif op == "abort":
        lib.mdb_txn_abort(txns[step[1]])
        del txns[step[1]:]
r = ctypes.c_void_p()
assert lib.mdb_txn_begin(env, None, 0x20000, ctypes.byref(r)) == 0
cur = ctypes.c_void_p()
assert lib.mdb_cursor_open(r, dbi, ctypes.byref(cur)) == 0
k, v, keys, op = Val(), Val(), [], 0
while lib.mdb_cursor_get(cur, ctypes.byref(k), ctypes.byref(v), op) == 0:
    keys.append(ctypes.string_at(k.mv_data, k.mv_size).decode())
    op = 8
out["keys"] = keys
print(json.dumps(out))
"""

SCENARIOS = {
    "top committed under child and grandchild": [
        ["begin"], ["put", "a"], ["begin"], ["put", "b"], ["begin"], ["put", "c"], ["commit", 0],
    ],
    "child committed under grandchild, then top": [
        ["begin"], ["put", "a"], ["begin"], ["put", "b"], ["begin"], ["put", "c"],
        ["commit", 1], ["commit", 0],
    ],
    "four deep, top committed": [
        ["begin"], ["put", "a"], ["begin"], ["put", "b"], ["begin"], ["put", "c"], ["begin"],
        ["put", "d"], ["commit", 0],
    ],
    "grandchild aborted, then top committed with the child open": [
        ["begin"], ["put", "a"], ["begin"], ["put", "b"], ["begin"], ["put", "c"],
        ["abort", 2], ["commit", 0],
    ],
}  # fmt: skip


def _run(lib: str, path: str, plan: list) -> dict:
    r = subprocess.run(
        [sys.executable, "-c", _CHILD, lib, path, json.dumps(plan)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


@pytest.mark.skipif(
    not all(os.path.exists(p) for p in LIBS.values()), reason="needs both libraries"
)
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_commit_keeps_the_writes_of_open_children(tmp_path, name):
    plan = SCENARIOS[name]
    got = {lib: _run(path, str(tmp_path / f"{lib}.mdb"), plan) for lib, path in LIBS.items()}
    assert got["ours"] == got["debian"], got
