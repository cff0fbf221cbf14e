"""The cffi backend of mdb: the same API as mdb._cext, in Python over cffi.

Selected with ``MDB_BACKEND=cffi`` (or automatically when the C extension cannot be
loaded).  The compiled half is ``mdb._cffi_lib`` (out-of-line API mode, built by CMake
from ``build.py`` and linked to the same engine).

One module per type, as the C extension has one file per type:

* ``_ffi``: loads the compiled half; fork tracking, error helpers, hot-path constants;
* ``environment``: Environment and _MapKeeper (the engine handle's owner);
* ``database``: _Database;
* ``transaction``: Transaction (and load_sorted's feed);
* ``cursor``: Cursor;
* ``iterator``: the cursor iterators and their read-ahead batches.

What is not on a hot path and not tied to cffi (argument checks, flag mapping, the
stat/info/flags dictionaries, version checks, the map lookup) is in :mod:`mdb._common`,
shared with the C extension.
"""

from __future__ import annotations

from .. import _common
from ._ffi import HAVE_CHECK, lib

# environment first: it imports transaction, which imports cursor (see their ends)
from .environment import Environment  # isort: skip
from .cursor import Cursor
from .database import _Database
from .transaction import Transaction

__all__ = ["Environment", "Transaction", "Cursor", "_Database", "version", "HAVE_CHECK"]

# The classes answer to mdb._cffi, where the backend's API lives (reprs, introspection).
for _cls in (Environment, Transaction, Cursor, _Database):
    _cls.__module__ = __name__
del _cls


def version(subpatch: bool = False) -> tuple[int, ...]:
    """(major, minor, patch) of the engine's lmdb.h, plus 0 with subpatch=True."""
    return _common.version_tuple(
        lib.MDB_VERSION_MAJOR, lib.MDB_VERSION_MINOR, lib.MDB_VERSION_PATCH, bool(subpatch)
    )
