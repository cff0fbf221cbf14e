"""Committing a txn while its children are still open.

LMDB's mdb_txn_commit commits a live child first, recursively, so the writes of every txn
down the chain are kept.  Each scenario runs on our library and on Debian's liblmdb (the
oracle), in child processes (ctypes), and the keys each finds afterwards must agree.
"""

from __future__ import annotations

import json
import os

import pytest

from support.ctypes_child import run_child

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBS = {
    "ours": os.path.join(ROOT, "build", "libmdbcore.so"),
    "debian": "/usr/lib/x86_64-linux-gnu/liblmdb.so.0",
}

_CHILD = r"""
path, plan = sys.argv[2].encode(), json.loads(sys.argv[3])
env, dbi = open_env(path), ctypes.c_uint()
txns, out = [], {"rcs": []}
for step in plan:
    op = step[0]
    if op == "begin":
        t = ctypes.c_void_p()
        parent = txns[-1] if txns else None
        out["rcs"].append(lib.mdb_txn_begin(env, parent, 0, ctypes.byref(t)))
        if not txns:
            ok(lib.mdb_dbi_open(t, None, 0, ctypes.byref(dbi)), "dbi_open")
        txns.append(t)
    elif op == "put":
        k = val(step[1].encode())
        out["rcs"].append(lib.mdb_put(txns[-1], dbi, ctypes.byref(k), ctypes.byref(k), 0))
    elif op == "commit":  # step[1]: depth of the txn committed; its children end with it
        out["rcs"].append(lib.mdb_txn_commit(txns[step[1]]))
        del txns[step[1]:]
    elif op == "abort":
        lib.mdb_txn_abort(txns[step[1]])
        del txns[step[1]:]
r = ctypes.c_void_p()
ok(lib.mdb_txn_begin(env, None, 0x20000, ctypes.byref(r)), "read txn_begin")
out["keys"] = [k.decode() for k, _ in walk(r, dbi)]
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
    r = run_child(_CHILD, lib, path, json.dumps(plan))
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
