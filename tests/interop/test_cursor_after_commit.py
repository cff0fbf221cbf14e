"""A write txn's cursor closed after the txn ended.

LMDB frees a write txn's cursors when the txn ends, so closing one afterwards is a use after
free; real programs do it anyway (OpenLDAP 2.5's `slapadd -w` closes its id2entry cursor
after the contextCSN update committed its txn).  Our library retires such cursors instead of
freeing them (src/mdbcore/cursor_alloc.c): the late close must do nothing, and any other
call on the retired cursor must fail with EINVAL rather than touch freed memory.  Each case
runs in a child process, since the failure being guarded against is glibc aborting it.
"""

from __future__ import annotations

import os

import pytest

from support.ctypes_child import run_child

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUR_LIB = os.path.join(ROOT, "build", "libmdbcore.so")

_CHILD = r"""
path, end = sys.argv[2].encode(), sys.argv[3]
dupsort, nested = sys.argv[4] == "1", sys.argv[5] == "1"
env, top, dbi = open_env(path, maxdbs=2), ctypes.c_void_p(), ctypes.c_uint()
ok(lib.mdb_txn_begin(env, None, 0, ctypes.byref(top)), "txn_begin")
ok(lib.mdb_dbi_open(top, b"d", 0x40000 | (0x04 if dupsort else 0), ctypes.byref(dbi)), "dbi_open")
ok(lib.mdb_txn_commit(top), "commit of the DB's creation")  # the handle outlives aborts
top = ctypes.c_void_p()
ok(lib.mdb_txn_begin(env, None, 0, ctypes.byref(top)), "txn_begin")
txn = top
if nested:
    txn = ctypes.c_void_p()
    ok(lib.mdb_txn_begin(env, top, 0, ctypes.byref(txn)), "child begin")
stale = []
for round_ in range(3):  # several, so that pooled cursors are reused and retired again
    cur = ctypes.c_void_p()
    ok(lib.mdb_cursor_open(txn, dbi, ctypes.byref(cur)), "cursor_open")
    k, v = val(b"key%d" % round_), val(b"key%d" % round_)
    ok(lib.mdb_cursor_put(cur, ctypes.byref(k), ctypes.byref(v), 0), "cursor_put")
    stale.append(cur)
    if end == "commit":
        ok(lib.mdb_txn_commit(txn), "commit")
    else:
        lib.mdb_txn_abort(txn)
    key, data = Val(), Val()
    print("get", lib.mdb_cursor_get(cur, ctypes.byref(key), ctypes.byref(data), 0))
    lib.mdb_cursor_close(cur)  # after its txn ended: must be harmless
    lib.mdb_cursor_close(cur)
    if nested:
        txn = ctypes.c_void_p()
        ok(lib.mdb_txn_begin(env, top, 0, ctypes.byref(txn)), "child begin")
    else:
        top = ctypes.c_void_p()
        ok(lib.mdb_txn_begin(env, None, 0, ctypes.byref(top)), "txn_begin")
        txn = top
lib.mdb_txn_abort(txn)
if nested:
    lib.mdb_txn_abort(top)
lib.mdb_env_close(env)
print("done")
"""


@pytest.mark.skipif(not os.path.exists(OUR_LIB), reason="build/libmdbcore.so not built")
@pytest.mark.parametrize("nested", [False, True], ids=["top", "child"])
@pytest.mark.parametrize("dupsort", [False, True], ids=["plain", "dupsort"])
@pytest.mark.parametrize("end", ["commit", "abort"])
def test_close_after_txn_end_is_harmless(tmp_path, end, dupsort, nested):
    r = run_child(_CHILD, OUR_LIB, tmp_path / "db", end, int(dupsort), int(nested))
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    lines = r.stdout.split()
    assert lines[-1] == "done"
    # every get on a cursor whose txn ended: EINVAL (22), never a read of freed memory
    assert [int(x) for x in lines[1:-1:2]] == [22, 22, 22], r.stdout
