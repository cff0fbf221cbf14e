"""The compiled half of the cffi backend and what every part of it shares.

Loads ``mdb._cffi_lib`` (out-of-line API mode, built by CMake from ``build.py``), keeps
the process id the objects compare with to tell inherited ones apart after ``fork()``,
and holds the error helpers and the engine constants the hot paths read as module
globals (cheaper than ``lib.X`` per call).
"""

from __future__ import annotations

import functools
import os
import time
import weakref
from threading import get_ident as _thread_id
from typing import TYPE_CHECKING, Any, Callable, NoReturn, TypeVar

from .. import _common
from ..errors import _from_code

try:
    from .._cffi_lib import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the build
    raise ImportError(f"mdb._cffi_lib is not built: {exc}") from exc

if TYPE_CHECKING:
    from .database import _Database
    from .environment import Environment
    from .iterator import _Batch
    from .transaction import Transaction

__all__ = ["ffi", "lib", "HAVE_CHECK", "pid_global", "_thread_id"]

HAVE_CHECK = int(lib.mdbpy_have_check())

_common.check_constants("_cffi", {name: getattr(lib, name) for name in _common.CONSTANTS})

# -- fork

_pid_users: list[dict[str, Any]] = []
_batches: weakref.WeakSet[_Batch] = weakref.WeakSet()  # read-ahead not yet handed out
_envs: weakref.WeakSet[Environment] = weakref.WeakSet()  # open in this process


def pid_global(g: dict[str, Any]) -> int:
    """Return the pid, and keep ``g["_pid"]`` the current pid in a forked child too.

    A module calls it as ``_pid = pid_global(globals())``: its hot paths compare with
    the module global ``_pid`` (cheaper than a call or an attribute lookup).
    """
    _pid_users.append(g)
    return os.getpid()


def _after_fork() -> None:
    pid = os.getpid()
    for g in _pid_users:
        g["_pid"] = pid
    for st in list(_batches):  # prefetched records are the parent's: never yield them here
        st.cancel()
    for env in list(_envs):  # the cursors' cached records too: the parent's objects raise
        env._st.gate = 0  # shut: the hot helpers refuse, the slow paths raise _forked
        for t in list(env._txns):
            t._wgen += 1


os.register_at_fork(after_in_child=_after_fork)

# -- constants

_EINVAL = 22
_EACCES = 13

# Hot paths read these as module globals (cheaper than lib.X / ffi.X per call).
_unpack = ffi.unpack
_NULL = ffi.NULL
_NOTFOUND = lib.MDB_NOTFOUND
_KEYEXIST = lib.MDB_KEYEXIST
_DUPSORT = lib.MDB_DUPSORT
_BADKEY = lib.MDBPY_BADKEY
_BADVAL = lib.MDBPY_BADVAL
_BIG = lib.MDBPY_BIG
_STALE = lib.MDBPY_STALE
_OUT = lib.MDBPY_OUT
_ERR = lib.MDBPY_ERR
_LOST = lib.MDBPY_LOST
_LOST_EXIST = lib.MDBPY_LOST_EXIST
_GET_CURRENT = lib.MDB_GET_CURRENT
_SET_KEY = lib.MDB_SET_KEY
_SET_RANGE = lib.MDB_SET_RANGE
_FIRST = lib.MDB_FIRST
_GET_BOTH = lib.MDB_GET_BOTH
_NEXT = lib.MDB_NEXT
_PREV = lib.MDB_PREV
_lib_get = lib.mdbpy_get
_lib_put = lib.mdbpy_put
_lib_del = lib.mdbpy_del
_lib_tbegin = lib.mdbpy_tbegin
_lib_tbegin_read = lib.mdbpy_tbegin_read
_lib_tend_read = lib.mdbpy_tend_read
_lib_tget = lib.mdbpy_tget
_lib_tput = lib.mdbpy_tput
_lib_tdel = lib.mdbpy_tdel
_lib_cinit = lib.mdbpy_cinit
_lib_cmove = lib.mdbpy_cmove
_lib_cread = lib.mdbpy_cread
_lib_cseek = lib.mdbpy_cseek
_lib_cput = lib.mdbpy_cput
_lib_cursor_get = lib.mdbpy_cursor_get
# The Transaction/Cursor states of the fast paths (helpers.h): not zeroed (their buffers
# are 2 KiB); mdbpy_tbegin/mdbpy_cinit set every field the helpers read, and open them.
_new_state = ffi.new_allocator(should_clear_after_alloc=False)
_lib_cursor_put = lib.mdbpy_cursor_put
_lib_cursor_batch = lib.mdbpy_cursor_batch


def _bytes_arg_offset() -> int:
    """Where a bytes object's data sits from its head, as bytes_arg.h reads lengths by
    it: what every sample agrees on (and their sizes their len()), else 0 (unusable)."""
    samples = (b"", b"k", b"0123456789abcdef", b"v" * 100, b"w" * 5000)
    found = {lib.mdbpy_bytes_probe(b, id(b), len(b)) for b in samples}
    return found.pop() if len(found) == 1 and -1 not in found else 0


_BYTES_OFFSET = _bytes_arg_offset()
_BYTES_ARG = _BYTES_OFFSET > 0 and lib.mdbpy_bytes_use(_BYTES_OFFSET) == _BYTES_OFFSET


# The same calls passing the lengths: what the fast paths use if the probe disagrees.
def _tget_len(st: Any, k: bytes) -> int:
    return _lib_tget(st, k, len(k))


def _tput_len(st: Any, k: bytes, v: bytes) -> int:
    return _lib_tput(st, k, len(k), v, len(v))


def _tdel_len(st: Any, k: bytes) -> int:
    return _lib_tdel(st, k, len(k))


def _cput_len(cst: Any, k: bytes, v: bytes, flags: int) -> int:
    return _lib_cput(cst, k, len(k), v, len(v), flags)


# Each takes exact bytes objects only (the fast paths test that before calling).
_lib_tget_b = lib.mdbpy_tget_b if _BYTES_ARG else _tget_len
_lib_tput_b = lib.mdbpy_tput_b if _BYTES_ARG else _tput_len
_lib_tdel_b = lib.mdbpy_tdel_b if _BYTES_ARG else _tdel_len
_lib_cput_b = lib.mdbpy_cput_b if _BYTES_ARG else _cput_len


# -- errors and arguments


def _raise(what: str, rc: int) -> NoReturn:
    raise _from_code(what, rc, ffi.string(lib.mdb_strerror(rc)).decode("utf-8", "replace"))


def _out_call(what: str, ctype: str, fn: Any, *args: Any) -> Any:
    """fn(*args, out) with out a new ctype (a pointer type); out[0], or the error of what.
    For MDB_stat / MDB_envinfo, ctype "MDB_stat *" gives the struct itself (out)."""
    out = ffi.new(ctype)
    rc = fn(*args, out)
    if rc:
        _raise(what, rc)
    return out if ctype in ("MDB_stat *", "MDB_envinfo *") else out[0]


def _close_gate(st: Any, check_busy: bool) -> bool:
    """Close the fast paths' gate of st (helpers.h): with check_busy, refused (False) while
    a call is in flight; else that call is waited for."""
    if check_busy:
        return not lib.mdbpy_close(st, 1)
    while lib.mdbpy_close(st, 0):
        time.sleep(0.001)
    return True


def _stat_dict(st: Any) -> dict[str, int]:
    """mdb._common.stat_dict of an MDB_stat."""
    return _common.stat_dict(
        st.ms_psize,
        st.ms_depth,
        st.ms_branch_pages,
        st.ms_leaf_pages,
        st.ms_overflow_pages,
        st.ms_entries,
    )


def _badvalsize(what: str, got: int, limit: int) -> NoReturn:
    from ..errors import BadValsizeError

    reason = ffi.string(lib.mdb_strerror(lib.MDB_BAD_VALSIZE)).decode()
    if got == 0:
        msg = f"{what}: {reason} (keys must be 1 to {limit} bytes long; got an empty key)"
    else:
        msg = f"{what}: {reason} ({got} bytes given, the limit is {limit} bytes)"
    raise BadValsizeError(msg, what=what, code=lib.MDB_BAD_VALSIZE, reason=reason)


def _put_error(what: str, rc: int, klen: int, vlen: int, env: Environment) -> NoReturn:
    """Raise for a failed mdbpy_put/mdbpy_cursor_put (not MDB_KEYEXIST)."""
    if rc == _BADKEY:
        _badvalsize(what, klen, env._maxkey)
    if rc == _BADVAL:
        _badvalsize(what, vlen, env._maxkey)
    _raise(what, rc)


def _inbuf(obj: Any, name: str) -> tuple[Any, int]:
    """(pointer-compatible object, length) for a key/value, without copying."""
    if type(obj) is bytes:
        return obj, len(obj)
    if isinstance(obj, str) or obj is None:
        raise TypeError(f"{name} must be a bytes-like object, not {type(obj).__name__}")
    try:
        buf = ffi.from_buffer(obj)
    except TypeError:
        raise TypeError(f"{name} must be a bytes-like object, not {type(obj).__name__}") from None
    return buf, len(buf)


_F = TypeVar("_F", bound=Callable[..., Any])


def _op(fn: _F) -> _F:
    """Bracket a Transaction/Cursor/Environment method with _enter/_leave."""

    @functools.wraps(fn)
    def op(self: Any, *args: Any, **kw: Any) -> Any:
        self._enter()
        try:
            return fn(self, *args, **kw)
        finally:
            self._leave()

    return op  # type: ignore[return-value]


def _wrote(t: Transaction | None) -> None:
    """Note a change of what t (and so its ancestors) sees: cursors re-read their record
    (see Cursor.key)."""
    while t is not None:
        t._wgen += 1
        t._cached = False
        t = t._parent


def _put_flags(db: _Database, dupdata: bool, overwrite: bool, append: bool) -> int:
    """mdb_put()'s flags for put()'s keywords on db (per call: not in _common)."""
    f = 0
    dupsort = db._flags & lib.MDB_DUPSORT
    if not dupdata and dupsort:
        f |= lib.MDB_NODUPDATA
    if not overwrite:
        f |= lib.MDB_NOOVERWRITE
    if append:
        f |= lib.MDB_APPENDDUP if dupsort else lib.MDB_APPEND
    return f
