"""The mdb exception hierarchy and the one table mapping engine codes to it.

Both backends raise through :func:`_from_code`; nothing else decides which
class a return code becomes.  Every class derives from :class:`Error`, which
carries ``what`` (the engine function that failed), ``code`` (its return code,
0 for errors raised by the binding itself) and ``reason`` (the engine's text).
"""

from __future__ import annotations

import errno as _errno

__all__ = [
    "Error",
    "KeyExistsError",
    "NotFoundError",
    "PageNotFoundError",
    "CorruptedError",
    "PanicError",
    "VersionMismatchError",
    "InvalidError",
    "MapFullError",
    "DbsFullError",
    "ReadersFullError",
    "TlsFullError",
    "TxnFullError",
    "CursorFullError",
    "PageFullError",
    "MapResizedError",
    "IncompatibleError",
    "BadRslotError",
    "BadTxnError",
    "BadValsizeError",
    "BadDbiError",
    "ReadonlyError",
    "InvalidParameterError",
    "LockError",
    "MemoryError",
    "DiskError",
]


class Error(Exception):
    """Base class of every mdb error.

    Attributes: ``what`` (engine call or operation), ``code`` (engine return
    code or errno, 0 when raised by the binding) and ``reason`` (engine text).
    """

    what: str
    code: int
    reason: str

    def __init__(self, *args: object, what: str = "", code: int = 0, reason: str = "") -> None:
        super().__init__(*args)
        self.what = what
        self.code = code
        self.reason = reason


def _cls(name: str, doc: str) -> type[Error]:
    return type(name, (Error,), {"__doc__": doc, "__module__": __name__})


KeyExistsError = _cls("KeyExistsError", "Key/data pair already exists (MDB_KEYEXIST).")
NotFoundError = _cls("NotFoundError", "No matching key/data pair found (MDB_NOTFOUND).")
PageNotFoundError = _cls("PageNotFoundError", "Requested page not found (MDB_PAGE_NOTFOUND).")
CorruptedError = _cls("CorruptedError", "Located page was of the wrong type (MDB_CORRUPTED).")
PanicError = _cls("PanicError", "Update of meta page failed (MDB_PANIC).")
VersionMismatchError = _cls("VersionMismatchError", "Database version mismatch.")
InvalidError = _cls("InvalidError", "File is not an MDB file (MDB_INVALID).")
MapFullError = _cls("MapFullError", "Environment map_size reached (MDB_MAP_FULL).")
DbsFullError = _cls("DbsFullError", "Environment max_dbs reached (MDB_DBS_FULL).")
ReadersFullError = _cls("ReadersFullError", "Environment max_readers reached.")
TlsFullError = _cls("TlsFullError", "Thread-local storage keys full (MDB_TLS_FULL).")
TxnFullError = _cls("TxnFullError", "Transaction has too many dirty pages (MDB_TXN_FULL).")
CursorFullError = _cls("CursorFullError", "Internal cursor stack limit reached.")
PageFullError = _cls("PageFullError", "Internal page space exhausted (MDB_PAGE_FULL).")
MapResizedError = _cls("MapResizedError", "Database contents grew beyond map_size.")
IncompatibleError = _cls("IncompatibleError", "Operation and database incompatible.")
BadRslotError = _cls("BadRslotError", "Invalid reuse of reader locktable slot.")
BadTxnError = _cls("BadTxnError", "Transaction must abort, has a child, or is invalid.")
BadValsizeError = _cls("BadValsizeError", "Unsupported size of key/DB name/data.")
BadDbiError = _cls("BadDbiError", "The specified DBI was changed unexpectedly.")
ReadonlyError = _cls("ReadonlyError", "An attempt was made to modify a read-only database.")
InvalidParameterError = _cls("InvalidParameterError", "An invalid parameter was specified.")
LockError = _cls("LockError", "The environment was locked by another process.")
MemoryError = _cls("MemoryError", "Out of memory.")  # noqa: A001 -- py-lmdb's name
DiskError = _cls("DiskError", "No more disk space.")

# THE table: engine code -> (class, hint appended to the message).  Which class each
# code raises is src/mdbcore/errors.def's; tests/python/test_error_table.py checks it.
_TABLE: dict[int, tuple[type[Error], str]] = {
    -30799: (KeyExistsError, ""),
    -30798: (NotFoundError, ""),
    -30797: (PageNotFoundError, ""),
    -30796: (CorruptedError, ""),
    -30795: (PanicError, ""),
    -30794: (VersionMismatchError, ""),
    -30793: (InvalidError, ""),
    -30792: (MapFullError, "Please use a larger Environment(map_size=) parameter"),
    -30791: (DbsFullError, "Please use a larger Environment(max_dbs=) parameter"),
    -30790: (ReadersFullError, "Please use a larger Environment(max_readers=) parameter"),
    -30789: (TlsFullError, ""),
    -30788: (TxnFullError, "Please do less work within your transaction"),
    -30787: (CursorFullError, ""),
    -30786: (PageFullError, ""),
    -30785: (MapResizedError, ""),
    -30784: (IncompatibleError, ""),
    -30783: (BadRslotError, ""),
    -30782: (BadTxnError, ""),
    -30781: (BadValsizeError, ""),
    -30780: (BadDbiError, ""),
    _errno.EACCES: (ReadonlyError, ""),
    _errno.EINVAL: (InvalidParameterError, ""),
    _errno.EAGAIN: (LockError, ""),
    _errno.ENOMEM: (MemoryError, ""),
    _errno.ENOSPC: (DiskError, ""),
}

CLOSED_MESSAGE = "Attempt to operate on closed/deleted/dropped object."


def _from_code(what: str, code: int, reason: str) -> Error:
    """Build (not raise) the exception for engine return ``code`` of ``what``."""
    cls, hint = _TABLE.get(code, (Error, ""))
    msg = f"{what}: {reason}"
    if hint:
        msg += f" ({hint})"
    return cls(msg, what=what, code=code, reason=reason)


def _closed() -> Error:
    """The error for using a closed/ended/dropped object."""
    return Error(CLOSED_MESSAGE)


def _forked(pid: int) -> Error:
    """The error for using an object inherited across fork()."""
    return Error(
        f"This object belongs to an environment opened in process {pid}; "
        "it cannot be used after fork(). Open the environment anew in this process."
    )
