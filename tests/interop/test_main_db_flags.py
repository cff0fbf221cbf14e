"""Flags given to mdb_dbi_open(txn, NULL, ...) on the main database.

LMDB lets a program give the unnamed (main) database key flags -- MDB_INTEGERKEY,
MDB_REVERSEKEY, MDB_DUPSORT -- and from then on compares its keys (and values) by them.
A file written that way must be ordered by those flags, or real LMDB reading it later
sees a tree out of order.  Each case writes keys in a scrambled order with one library
and walks the main database with the other, in child processes (ctypes), so that our
library and Debian's never share a process.
"""

from __future__ import annotations

import json
import os

import pytest

from support.ctypes_child import run_child

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUR_LIB = os.path.join(ROOT, "build", "libmdbcore.so")
DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu/liblmdb.so.0"

MDB_REVERSEKEY, MDB_DUPSORT, MDB_INTEGERKEY, MDB_CREATE = 0x02, 0x04, 0x08, 0x40000

_CHILD = r"""
path, mode, flags = sys.argv[2].encode(), sys.argv[3], int(sys.argv[4])
env, txn, dbi = open_env(path), ctypes.c_void_p(), ctypes.c_uint()
if mode == "write":
    ok(lib.mdb_txn_begin(env, None, 0, ctypes.byref(txn)), "txn_begin")
    ok(lib.mdb_dbi_open(txn, None, flags, ctypes.byref(dbi)), "dbi_open")
    for k, v in json.loads(sys.argv[5]):
        key, data = val(bytes.fromhex(k)), val(bytes.fromhex(v))
        ok(lib.mdb_put(txn, dbi, ctypes.byref(key), ctypes.byref(data), 0), "put")
    ok(lib.mdb_txn_commit(txn), "commit")
    print("[]")
else:
    ok(lib.mdb_txn_begin(env, None, 0x20000, ctypes.byref(txn)), "txn_begin")
    ok(lib.mdb_dbi_open(txn, None, 0, ctypes.byref(dbi)), "dbi_open")
    print(json.dumps([[k.hex(), v.hex()] for k, v in walk(txn, dbi)]))
"""


def _child(lib: str, path: str, mode: str, flags: int, pairs: list | None = None) -> list:
    r = run_child(_CHILD, lib, path, mode, flags, json.dumps(pairs or []))
    assert r.returncode == 0, r.stderr
    return [tuple(p) for p in json.loads(r.stdout)]


def _le(i: int) -> str:
    return i.to_bytes(8, "little").hex()


CASES = {
    # numeric order of native (little-endian) integers, not memcmp order
    "integerkey": (
        MDB_INTEGERKEY,
        lambda p: sorted(p, key=lambda kv: int.from_bytes(bytes.fromhex(kv[0]), "little")),
    ),
    # keys compared from their last byte to their first
    "reversekey": (MDB_REVERSEKEY, lambda p: sorted(p, key=lambda kv: bytes.fromhex(kv[0])[::-1])),
    # several values under one key, sorted
    "dupsort": (MDB_DUPSORT, lambda p: sorted(p)),
}


@pytest.mark.skipif(not os.path.exists(OUR_LIB), reason="build/libmdbcore.so not built")
@pytest.mark.skipif(not os.path.exists(DEBIAN_LIB), reason="Debian's liblmdb0 not installed")
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("writer", ["ours", "debian"])
def test_main_db_flags_order_the_tree(tmp_path, case, writer):
    flags, expected_order = CASES[case]
    scrambled = [(i * 7919) % 1000 for i in range(1000)]
    if case == "dupsort":
        pairs = [(_le(i % 10), _le(i)) for i in scrambled]
    elif case == "reversekey":
        pairs = [(i.to_bytes(4, "big").hex() + "aa", "01") for i in scrambled]
    else:
        pairs = [(_le(i), "01") for i in scrambled]
    libs = {"ours": OUR_LIB, "debian": DEBIAN_LIB}
    reader = "debian" if writer == "ours" else "ours"
    path = str(tmp_path / "data.mdb")
    _child(libs[writer], path, "write", flags | MDB_CREATE, pairs)
    want = expected_order(pairs)
    assert _child(libs[reader], path, "read", 0) == want, f"{reader} reading {writer}'s file"
    assert _child(libs[writer], path, "read", 0) == want, f"{writer} reading its own file"
