"""Shim: makes ``import lmdb`` resolve to ``mdb`` so py-lmdb's own test files
run unchanged against mdb.  Put this folder on PYTHONPATH (subprocesses
spawned by the tests then see it too).  The backend is chosen by MDB_BACKEND.
"""

import sys

import mdb
import mdb.aio

sys.modules["lmdb"] = mdb
sys.modules["lmdb.aio"] = mdb.aio
