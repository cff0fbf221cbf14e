"""ctypes_child -- run a short script against one LMDB shared library in a child process.

The interop tests that drive a library through ctypes -- ours (build/libmdbcore.so) or
Debian's liblmdb -- do it in a child process, so that the two never share a process and a
crash (glibc aborting on a use after free) fails the case, not pytest.  PRELUDE opens
every such script and defines:

  lib               the library named by sys.argv[1]
  Val               MDB_val
  ok(rc, what)      a nonzero rc ends the child with the message "what: rc"
  val(data)         an MDB_val over a copy of the bytes (kept alive until the child ends)
  open_env(path, maxdbs=0)   an environment opened on the file `path` (NOSYNC | NOSUBDIR)
  walk(txn, dbi)    every (key, value) of the DB in cursor order, as bytes
"""

from __future__ import annotations

import subprocess
import sys

PRELUDE = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
class Val(ctypes.Structure):
    _fields_ = [("mv_size", ctypes.c_size_t), ("mv_data", ctypes.c_void_p)]
def ok(rc, what):
    if rc:
        raise SystemExit(f"{what}: {rc}")
_keep = []
def val(data):
    b = ctypes.create_string_buffer(data, len(data))
    _keep.append(b)
    return Val(len(data), ctypes.cast(b, ctypes.c_void_p))
def open_env(path, maxdbs=0):
    env = ctypes.c_void_p()
    ok(lib.mdb_env_create(ctypes.byref(env)), "env_create")
    if maxdbs:
        ok(lib.mdb_env_set_maxdbs(env, maxdbs), "maxdbs")
    ok(lib.mdb_env_open(env, path, 0x10000 | 0x4000, 0o644), "env_open")  # NOSYNC|NOSUBDIR
    return env
def walk(txn, dbi):
    cur = ctypes.c_void_p()
    ok(lib.mdb_cursor_open(txn, dbi, ctypes.byref(cur)), "cursor_open")
    key, data, out, op = Val(), Val(), [], 0  # MDB_FIRST, then MDB_NEXT
    while lib.mdb_cursor_get(cur, ctypes.byref(key), ctypes.byref(data), op) == 0:
        out.append((ctypes.string_at(key.mv_data, key.mv_size),
                    ctypes.string_at(data.mv_data, data.mv_size)))
        op = 8
    return out
"""


def run_child(script: str, lib: str, *args: object) -> subprocess.CompletedProcess:
    """PRELUDE + script run with sys.argv[1:] = lib, *args (as strings); output as text."""
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + script, lib, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
    )
