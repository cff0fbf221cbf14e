"""The cffi backend of mdb: the same API as mdb._cext, in Python over cffi.

Selected with ``MDB_BACKEND=cffi`` (or automatically when the C extension
cannot be loaded).  The compiled half is ``mdb._cffi_lib`` (out-of-line API
mode, built by CMake from ``build.py`` and linked to the same engine).

Lifetimes follow mdb._cext (see python/mdb/_cext/module.h): an environment's
engine handle belongs to a :class:`_MapKeeper`; ``buffers=True`` values hold
the keeper, so the map stays mapped while any is alive, and ``close()`` only
drops the environment's own reference.  Objects inherited across ``fork()``
raise instead of touching the parent's engine state.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import time
import weakref
from itertools import chain, repeat
from operator import length_hint
from struct import unpack_from
from typing import Any, Callable, Iterator, Literal, NoReturn, TypeVar

from .. import _registry
from ..errors import Error, _closed, _forked, _from_code

try:
    from .._cffi_lib import ffi, lib
except ImportError as exc:  # pragma: no cover - depends on the build
    raise ImportError(f"mdb._cffi_lib is not built: {exc}") from exc

__all__ = ["Environment", "Transaction", "Cursor", "_Database", "version", "HAVE_CHECK"]

HAVE_CHECK = int(lib.mdbpy_have_check())

CHECK_NUMS = (
    "problems_total",
    "psize",
    "next_pgno",
    "txnid",
    "meta_pages",
    "branch_pages",
    "leaf_pages",
    "leaf2_pages",
    "overflow_pages",
    "overflow_runs",
    "reachable_pages",
    "free_pages",
    "free_records",
    "leaked_pages",
    "twice_pages",
    "free_and_used",
)

_pid = os.getpid()
_batches: weakref.WeakSet[_Batch] = weakref.WeakSet()  # read-ahead not yet handed out
_envs: weakref.WeakSet[Environment] = weakref.WeakSet()  # open in this process


def _after_fork() -> None:
    global _pid
    _pid = os.getpid()
    for st in list(_batches):  # prefetched records are the parent's: never yield them here
        st.cancel()
    for env in list(_envs):  # the cursors' cached records too: the parent's objects raise
        for t in list(env._txns):
            t._wgen += 1


os.register_at_fork(after_in_child=_after_fork)

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
_lib_cursor_get = lib.mdbpy_cursor_get
_lib_cursor_put = lib.mdbpy_cursor_put
_lib_cursor_batch = lib.mdbpy_cursor_batch
_NOARG: Any = object()  # "no value given" for Cursor._seek


def _raise(what: str, rc: int) -> NoReturn:
    raise _from_code(what, rc, ffi.string(lib.mdb_strerror(rc)).decode("utf-8", "replace"))


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


def _load_error(rc: int, count: int) -> NoReturn:
    """Transaction.load_sorted's errors, worded as the C extension words them."""
    from .. import errors

    reason = ffi.string(lib.mdb_strerror(rc)).decode("utf-8", "replace")
    if rc == lib.MDB_KEYEXIST:
        cls: Any = errors.KeyExistsError
        msg = (
            f"load_sorted: record #{count - 1} is not after the one before it (keys must be "
            "strictly ascending in the database's order); nothing was loaded"
        )
    elif rc == errno.EINVAL:
        cls, msg = errors.InvalidParameterError, "load_sorted: the target database must be empty"
    elif rc == lib.MDB_INCOMPATIBLE:
        cls = errors.IncompatibleError
        msg = "load_sorted: DUPSORT databases are not supported (use putmulti with append=True)"
    elif rc == lib.MDB_BAD_VALSIZE:
        cls = errors.BadValsizeError
        msg = (
            f"load_sorted: record #{count - 1} has an empty or too long key, or a value over "
            "4 GiB; nothing was loaded"
        )
    else:
        _raise("load_sorted", rc)
    raise cls(msg, what="load_sorted", code=rc, reason=reason)


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


def _map_range(fd: int) -> tuple[int, int]:
    """Address range where the data file ``fd`` is mapped (0, 0 if unknown)."""
    try:
        st = os.fstat(fd)
        lo = hi = 0
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 5:
                    continue
                major, minor = (int(x, 16) for x in parts[3].split(":"))
                if int(parts[4]) != st.st_ino or os.makedev(major, minor) != st.st_dev:
                    continue
                a, b = (int(x, 16) for x in parts[0].split("-"))
                if not lo and int(parts[2], 16) == 0:
                    lo, hi = a, b
                elif lo and a == hi:
                    hi = b
        return lo, hi
    except OSError:
        return 0, 0


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


class _MapKeeper:
    """Owns an engine environment handle; closes it when the last user goes.

    It also holds what must end before that close: the Environment's list of live
    transactions (the same list object) and its spare read txn.  Normally
    Environment.close() has ended them already; but the objects of a collected cycle (or
    of an interpreter shutting down) are finalized in any order, and the engine frees its
    txns with the env, so a txn ended after this close would touch freed memory."""

    __slots__ = ("env", "pid", "exports", "reg_key", "txns", "spare", "__weakref__")

    def __init__(self, env: Any, txns: list[Transaction]) -> None:
        self.env = env
        self.pid = _pid
        self.exports = 0
        self.reg_key: Any = None
        self.txns = txns
        self.spare: Any = None  # a reset read txn kept for the next begin()

    def __del__(self) -> None:
        env = self.env
        if env is not None and self.pid == _pid:
            for t in list(self.txns):
                if t._parent is None:
                    t.env._valid = False  # nothing new starts, no txn is kept as spare
                    t._end(False)  # children and cursors first, as Environment.close()
            if self.spare is not None:
                lib.mdb_txn_abort(self.spare)
                self.spare = None
        self.env = None
        if env is not None and self.pid == _pid:
            lib.mdb_env_close(env)
        if self.reg_key is not None and self.pid == _pid:
            _registry.release(self.reg_key)
            self.reg_key = None


def _release_export(keeper: _MapKeeper) -> Any:
    def done(_p: Any) -> None:
        keeper.exports -= 1

    return done


class _Database:
    """Handle of a database inside an Environment (from Environment.open_db())."""

    __slots__ = ("_dbi", "_flags", "_valid", "_owner", "_creator")

    def __init__(self, owner: Environment, dbi: int, flags: int) -> None:
        self._dbi = dbi
        self._flags = flags
        self._valid = True
        self._owner = owner
        self._creator: Any = None

    def flags(self, txn: Any = None) -> dict[str, bool]:
        """The database's flags: reverse_key, dupsort, integerkey, integerdup, dupfixed."""
        f = self._flags
        return {
            "reverse_key": bool(f & lib.MDB_REVERSEKEY),
            "dupsort": bool(f & lib.MDB_DUPSORT),
            "integerkey": bool(f & lib.MDB_INTEGERKEY),
            "integerdup": bool(f & lib.MDB_INTEGERDUP),
            "dupfixed": bool(f & lib.MDB_DUPFIXED),
        }


def _stat_dict(st: Any) -> dict[str, int]:
    return {
        "psize": st.ms_psize,
        "depth": st.ms_depth,
        "branch_pages": st.ms_branch_pages,
        "leaf_pages": st.ms_leaf_pages,
        "overflow_pages": st.ms_overflow_pages,
        "entries": st.ms_entries,
    }


_reader_lines: list[str] = []


@ffi.def_extern()
def _mdbpy_reader_cb(msg: Any, ctx: Any) -> int:
    _reader_lines.append(ffi.string(msg).decode("utf-8", "replace"))
    return 0


class _LoadFeed:
    """Transaction.load_sorted's source: packs the next records of the iterable into one
    buffer per chunk (see mdbpy_bulk_load), keeping the chunk alive until the next one."""

    CHUNK = 2048

    __slots__ = ("it", "count", "error", "keep")

    def __init__(self, iterable: Any) -> None:
        self.it = iter(iterable)
        self.count = 0
        self.error: BaseException | None = None
        self.keep: tuple[Any, ...] = ()

    def refill(self, chunk: Any) -> int:
        parts: list[Any] = []
        sizes: list[int] = []
        n = 0
        for item in itertools.islice(self.it, self.CHUNK):
            if type(item) is not tuple and not isinstance(item, (tuple, list)):
                raise TypeError(
                    "load_sorted(): items must be (key, value) pairs, got "
                    f"{type(item).__name__} at #{self.count + n}"
                )
            if len(item) != 2:
                raise TypeError(
                    "load_sorted(): items must be (key, value) pairs, got "
                    f"{len(item)} elements at #{self.count + n}"
                )
            k, v = item
            if type(k) is not bytes:
                k = ffi.buffer(_inbuf(k, "key")[0])[:]
            if type(v) is not bytes:
                v = ffi.buffer(_inbuf(v, "value")[0])[:]
            parts.append(k)
            parts.append(v)
            sizes.append(len(k))
            sizes.append(len(v))
            n += 1
        if not n:
            return 1
        data = b"".join(parts)
        c_sizes = ffi.new("size_t[]", sizes)
        c_data = ffi.from_buffer(data)
        self.keep = (data, c_data, c_sizes)
        chunk.data = c_data
        chunk.sizes = c_sizes
        chunk.n = n
        self.count += n
        return 0


if HAVE_CHECK:

    @ffi.def_extern()
    def _mdbpy_load_refill(handle: Any, chunk: Any) -> int:
        feed: _LoadFeed = ffi.from_handle(handle)
        try:
            return feed.refill(chunk)
        except BaseException as exc:  # re-raised by load_sorted once the core is out
            feed.error = exc
            return -1


class Environment:
    """An open environment (directory or file); ``mdb.open()`` is an alias.

    Keywords as py-lmdb: map_size, subdir, readonly, metasync, sync, map_async,
    mode, create, readahead, writemap, meminit, max_readers, max_dbs,
    max_spare_txns, lock.
    """

    def __init__(
        self,
        path: Any,
        map_size: int = 10485760,
        subdir: bool = True,
        readonly: bool = False,
        metasync: bool = True,
        sync: bool = True,
        map_async: bool = False,
        mode: int = 0o755,
        create: bool = True,
        readahead: bool = True,
        writemap: bool = False,
        meminit: bool = True,
        max_readers: int = 126,
        max_dbs: int = 0,
        max_spare_txns: int = 0,
        lock: bool = True,
        lib_version: int | None = None,
        max_map_size: int | None = None,
    ) -> None:
        self._valid = False
        self._active = 0  # engine calls in flight on other threads (GIL released)
        self._keeper: _MapKeeper | None = None
        self._env: Any = None
        self._txns: list[Transaction] = []
        self._write_txns = 0
        self._writer = 0
        self._dbs: dict[bytes, _Database] = {}
        if lib_version is not None:
            if lib_version < 0:
                raise OverflowError("lib_version must be a non-negative integer")
            if lib_version != 0:
                raise Error(f"lib_version={lib_version} is not available: mdb implements LMDB 0.9")
        if max_map_size is not None and max_map_size and not HAVE_CHECK:
            raise Error("max_map_size needs the mdb core (this build links the system liblmdb)")
        for name, val, top in (
            ("map_size", map_size, 1 << 64),
            ("max_readers", max_readers, 1 << 32),
            ("max_dbs", max_dbs, 1 << 32),
            ("max_map_size", 0 if max_map_size is None else max_map_size, 1 << 64),
        ):
            if not isinstance(val, int):
                raise TypeError(f"{name} must be an integer")
            if val < 0 or val >= top:
                raise OverflowError(f"{name}={val} is out of range")
        path_s = os.fsdecode(path)
        path_b = os.fsencode(path)
        _registry.check(path_s, bool(subdir))
        if create and subdir and not readonly:
            try:
                os.mkdir(path_b, mode)
            except FileExistsError:
                pass
        envp = ffi.new("MDB_env **")
        rc = lib.mdb_env_create(envp)
        if rc:
            _raise("mdb_env_create", rc)
        env = envp[0]
        for what, rc in (
            ("mdb_env_set_mapsize", lib.mdb_env_set_mapsize(env, map_size)),
            ("mdb_env_set_maxreaders", lib.mdb_env_set_maxreaders(env, max_readers)),
            ("mdb_env_set_maxdbs", lib.mdb_env_set_maxdbs(env, max_dbs)),
            (
                "max_map_size",
                lib.mdbpy_set_maxsize(env, max_map_size) if max_map_size else 0,
            ),
        ):
            if rc:
                lib.mdb_env_close(env)
                _raise(what, rc)
        flags = lib.MDB_NOTLS
        if not subdir:
            flags |= lib.MDB_NOSUBDIR
        if readonly:
            flags |= lib.MDB_RDONLY
        if not metasync:
            flags |= lib.MDB_NOMETASYNC
        if not sync:
            flags |= lib.MDB_NOSYNC
        if map_async:
            flags |= lib.MDB_MAPASYNC
        if not readahead:
            flags |= lib.MDB_NORDAHEAD
        if writemap:
            flags |= lib.MDB_WRITEMAP
        if not meminit:
            flags |= lib.MDB_NOMEMINIT
        if not lock:
            flags |= lib.MDB_NOLOCK
        rc = lib.mdb_env_open(env, path_b, flags, mode & ~0o111)
        if rc:
            lib.mdb_env_close(env)
            _raise(path_s, rc)
        keeper = _MapKeeper(env, self._txns)
        self._keeper = keeper
        _envs.add(self)
        self._maxkey = int(lib.mdb_env_get_maxkeysize(env))  # fixed once open
        self._env = env
        self._pid = _pid
        self._readonly = bool(readonly)
        self._max_spare_txns = max_spare_txns
        self._valid = True
        fdp = ffi.new("mdb_filehandle_t *")
        if lib.mdb_env_get_fd(env, fdp) == 0 and fdp[0] >= 0:
            keeper.reg_key = _registry.register(fdp[0], path_s, bool(subdir))
            self._map = self._grown_range(_map_range(fdp[0]))
        else:
            self._map = (0, 0)
        txnp = ffi.new("MDB_txn **")
        rc = lib.mdb_txn_begin(env, ffi.NULL, lib.MDB_RDONLY, txnp)
        if rc:
            self.close()
            _raise("mdb_txn_begin", rc)
        dbip = ffi.new("MDB_dbi *")
        flp = ffi.new("unsigned int *")
        rc = lib.mdb_dbi_open(txnp[0], ffi.NULL, 0, dbip)
        if not rc:
            rc = lib.mdb_dbi_flags(txnp[0], dbip[0], flp)
        lib.mdb_txn_abort(txnp[0])
        if rc:
            self.close()
            _raise("mdb_dbi_open", rc)
        self._main_db = _Database(self, dbip[0], flp[0])

    # -- helpers
    def _check(self) -> None:
        if not self._valid:
            raise _closed()
        if self._pid != _pid:
            raise _forked(self._pid)

    def _grown_range(self, rng: tuple[int, int]) -> tuple[int, int]:
        """A growing map keeps the address space of its bound: all of it is (or will be)
        the file, mapped in place as the map grows."""
        lo, hi = rng
        if HAVE_CHECK and lo:
            bound = int(lib.mdbpy_get_maxsize(self._env))
            if bound and lo + bound > hi:
                hi = lo + (bound + 4095) // 4096 * 4096
        return lo, hi

    def _enter(self) -> None:
        # counted before the check: close() waits for calls in flight
        self._active += 1
        if not self._valid or self._pid != _pid:
            self._active -= 1
            self._check()

    def _leave(self) -> None:
        self._active -= 1

    def _out(self, buffers: bool, val: Any) -> Any:
        """A record's key or value (an mdbpy_val) as bytes, or with buffers a memoryview."""
        if not buffers:
            return _unpack(val.mv_data, val.mv_size)
        size = val.mv_size
        data = val.mv_data
        addr = int(ffi.cast("uintptr_t", data))
        lo, hi = self._map
        keeper = self._keeper
        if keeper is None or not lo or addr < lo or addr + size > hi:
            return memoryview(_unpack(data, size))
        if size > 8192:  # fault multi-page values in with the GIL released
            lib.mdbpy_prefault(data, size)
        keeper.exports += 1
        p = ffi.gc(ffi.cast("char *", data), _release_export(keeper))
        return memoryview(ffi.buffer(p, size)).toreadonly()

    # -- lifetime
    def close(self) -> None:
        """Close the environment, aborting its transactions. Idempotent."""
        if not self._valid:
            return
        if self._pid != _pid:
            self._valid = False
            if self._keeper is not None:
                self._keeper.env = None
                self._keeper.reg_key = None
            self._keeper = None
            self._env = None
            return
        self._valid = False  # new calls fail from here on
        for t in list(self._txns):  # and no cursor answers from its cached record
            t._wgen += 1
        me = _thread_id()
        if self._write_txns and self._writer == me:
            for t in list(self._txns):  # release the writer lock others may wait for
                if t._write and t._parent is None and t._valid:
                    t._end(False)
        while self._active:
            time.sleep(0.001)
        self._end_all_txns()
        main = getattr(self, "_main_db", None)
        if main is not None:
            main._valid = False
        for db in self._dbs.values():
            db._valid = False
        self._env = None
        self._keeper = None

    def _end_all_txns(self) -> None:
        while self._txns:
            top = self._txns[-1]
            while top._parent is not None and top._parent._valid:
                top = top._parent
            top._end(False)
        keeper = self._keeper
        if keeper is not None and keeper.spare is not None:
            lib.mdb_txn_abort(keeper.spare)
            keeper.spare = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> Environment:
        """Return self."""
        self._check()
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        """Close the environment."""
        self.close()
        return False

    # -- API
    @property
    def readonly(self) -> bool:
        """True if opened with readonly=True."""
        return self._readonly

    def begin(
        self,
        db: _Database | None = None,
        parent: Any = None,
        write: bool = False,
        buffers: bool = False,
    ) -> Transaction:
        """Start a transaction (a write one waits for the writer lock)."""
        return Transaction(self, db, parent, write, buffers)

    @_op
    def open_db(
        self,
        key: bytes | None = None,
        txn: Transaction | None = None,
        reverse_key: bool = False,
        dupsort: bool = False,
        create: bool = True,
        integerkey: bool = False,
        integerdup: bool = False,
        dupfixed: bool = False,
    ) -> _Database:
        """Open (and by default create) a named database; None is the main one."""
        self._check()
        flags = 0
        if reverse_key:
            flags |= lib.MDB_REVERSEKEY
        if dupsort:
            flags |= lib.MDB_DUPSORT
        if integerkey:
            flags |= lib.MDB_INTEGERKEY
        if integerdup:
            flags |= lib.MDB_INTEGERDUP | lib.MDB_DUPFIXED | lib.MDB_DUPSORT
        if dupfixed:
            flags |= lib.MDB_DUPFIXED | lib.MDB_DUPSORT
        if key is None:
            if flags:
                raise ValueError("flags cannot be set on the main database")
            return self._main_db
        if not isinstance(key, bytes):
            raise TypeError(f"open_db() key must be bytes, not {type(key).__name__}")
        if key in self._dbs:
            db = self._dbs[key]
            if db._creator is not None and isinstance(txn, Transaction):
                # made by a txn that has not committed: another txn may not see it (py-lmdb
                # asks the engine, which answers for that txn's snapshot)
                t = txn
                while t is not None and t is not db._creator:
                    t = t._parent
                if t is None:
                    txn._check()
                    dbip = ffi.new("MDB_dbi *")
                    rc = lib.mdb_dbi_open(
                        txn._txn, key, lib.MDB_CREATE if create and not self._readonly else 0, dbip
                    )
                    if rc:
                        _raise("mdb_dbi_open", rc)
            return db
        ro_create = False
        if create and not self._readonly:
            flags |= lib.MDB_CREATE
        elif create:
            ro_create = True
        own = None
        if txn is not None:
            if not isinstance(txn, Transaction):
                raise TypeError("txn must be a Transaction")
            txn._check()
            if txn.env is not self:
                _raise("mdb_dbi_open", _EINVAL)  # a transaction of another Environment
            t = txn._txn
        else:
            write = not self._readonly
            if write and self._write_txns and self._writer == _thread_id():
                raise Error(
                    "open_db() needs a write transaction but this thread already has one: "
                    "pass it as open_db(..., txn=txn)"
                )
            txnp = ffi.new("MDB_txn **")
            rc = lib.mdb_txn_begin(self._env, ffi.NULL, 0 if write else lib.MDB_RDONLY, txnp)
            if rc:
                _raise("mdb_txn_begin", rc)
            own = t = txnp[0]
        dbip = ffi.new("MDB_dbi *")
        flp = ffi.new("unsigned int *")
        rc = lib.mdb_dbi_open(t, key, flags, dbip)
        if not rc:
            rc = lib.mdb_dbi_flags(t, dbip[0], flp)
        if rc:
            if own is not None:
                lib.mdb_txn_abort(own)
            if rc == lib.MDB_NOTFOUND and ro_create:
                rc = _EACCES
            _raise("mdb_dbi_open", rc)
        if own is not None:
            rc = lib.mdb_txn_commit(own)
            if rc:
                _raise("mdb_txn_commit", rc)
        db = _Database(self, dbip[0], flp[0])
        if txn is not None and txn._write:
            _wrote(txn)
            db._creator = txn
            txn._created_dbs += 1
        self._dbs[key] = db
        return db

    @_op
    def dbs(self, txn: Transaction | None = None) -> list[bytes]:
        """Names of the named databases."""
        self._check()
        own = None
        if txn is not None:
            if not isinstance(txn, Transaction):
                raise TypeError("txn must be a Transaction")
            txn._check()
            if txn.env is not self:
                _raise("mdb_dbi_open", _EINVAL)  # a transaction of another Environment
            t = txn._txn
        else:
            txnp = ffi.new("MDB_txn **")
            rc = lib.mdb_txn_begin(self._env, ffi.NULL, lib.MDB_RDONLY, txnp)
            if rc:
                _raise("mdb_txn_begin", rc)
            own = t = txnp[0]
        out: list[bytes] = []
        try:
            curp = ffi.new("MDB_cursor **")
            rc = lib.mdb_cursor_open(t, self._main_db._dbi, curp)
            if rc:
                _raise("mdb_cursor_open", rc)
            k = ffi.new("mdbpy_val *")
            v = ffi.new("mdbpy_val *")
            dbip = ffi.new("MDB_dbi *")
            op = lib.MDB_FIRST
            while lib.mdbpy_cursor_get(curp[0], op, ffi.NULL, 0, ffi.NULL, 0, k, v) == 0:
                op = lib.MDB_NEXT
                name = _unpack(k.mv_data, k.mv_size)
                if v.mv_size != 48 or not name or b"\0" in name:
                    continue
                if name in self._dbs or lib.mdb_dbi_open(t, name, 0, dbip) == 0:
                    out.append(name)
            lib.mdb_cursor_close(curp[0])
        finally:
            if own is not None:
                lib.mdb_txn_abort(own)
        return out

    @_op
    def stat(self) -> dict[str, int]:
        """Statistics of the main database."""
        self._check()
        st = ffi.new("MDB_stat *")
        rc = lib.mdb_env_stat(self._env, st)
        if rc:
            _raise("mdb_env_stat", rc)
        return _stat_dict(st)

    @_op
    def info(self) -> dict[str, int]:
        """Environment information."""
        self._check()
        i = ffi.new("MDB_envinfo *")
        rc = lib.mdb_env_info(self._env, i)
        if rc:
            _raise("mdb_env_info", rc)
        out = {
            "map_addr": int(ffi.cast("uintptr_t", i.me_mapaddr)),
            "map_size": i.me_mapsize,
            "last_pgno": i.me_last_pgno,
            "last_txnid": i.me_last_txnid,
            "max_readers": i.me_maxreaders,
            "num_readers": i.me_numreaders,
        }
        if HAVE_CHECK:
            # no read txn (flag 2): info() must not take a reader slot; the pages each
            # reader holds back are in readers(detail=True)
            busy = [r for r in self._reader_table(2) if r["txnid"] is not None]
            out["reader_age"] = max((r["age"] for r in busy), default=0)
        return out

    def _reader_table(self, flags: int = 0) -> list[dict[str, Any]]:
        cap = 16
        count = ffi.new("size_t *")
        for _ in range(4):
            vals = ffi.new("unsigned long long[]", 5 * cap)
            rc = lib.mdbpy_reader_info(self._env, vals, cap, count, flags)
            if rc:
                _raise("mdbcore_reader_info_list", rc)
            n = int(count[0])
            if n <= cap:
                return [
                    {
                        "pid": int(vals[5 * k]),
                        "thread": int(vals[5 * k + 1]),
                        "txnid": None if vals[5 * k + 2] == 2**64 - 1 else int(vals[5 * k + 2]),
                        "age": int(vals[5 * k + 3]),
                        "pages_held": None
                        if vals[5 * k + 4] == 2**64 - 1
                        else int(vals[5 * k + 4]),
                    }
                    for k in range(n)
                ]
            cap = n + 16
        raise Error("readers(): the reader table kept changing")

    @_op
    def flags(self) -> dict[str, bool]:
        """The open flags."""
        self._check()
        fp = ffi.new("unsigned int *")
        rc = lib.mdb_env_get_flags(self._env, fp)
        if rc:
            _raise("mdb_env_get_flags", rc)
        f = fp[0]
        return {
            "subdir": not f & lib.MDB_NOSUBDIR,
            "readonly": bool(f & lib.MDB_RDONLY),
            "metasync": not f & lib.MDB_NOMETASYNC,
            "sync": not f & lib.MDB_NOSYNC,
            "map_async": bool(f & lib.MDB_MAPASYNC),
            "readahead": not f & lib.MDB_NORDAHEAD,
            "writemap": bool(f & lib.MDB_WRITEMAP),
            "meminit": not f & lib.MDB_NOMEMINIT,
            "lock": not f & lib.MDB_NOLOCK,
        }

    @_op
    def path(self) -> str:
        """The path given at open."""
        self._check()
        pp = ffi.new("const char **")
        rc = lib.mdb_env_get_path(self._env, pp)
        if rc:
            _raise("mdb_env_get_path", rc)
        return os.fsdecode(ffi.string(pp[0]))

    @_op
    def max_key_size(self) -> int:
        """Largest key (and dupsort value) size in bytes."""
        self._check()
        return int(lib.mdb_env_get_maxkeysize(self._env))

    @_op
    def max_readers(self) -> int:
        """Size of the reader table."""
        self._check()
        p = ffi.new("unsigned int *")
        rc = lib.mdb_env_get_maxreaders(self._env, p)
        if rc:
            _raise("mdb_env_get_maxreaders", rc)
        return int(p[0])

    @_op
    def readers(self, detail: bool = False) -> Any:
        """The reader table, as text (mdb_reader_list's), or with detail=True a list of
        dicts: pid, thread, txnid (None when idle), age (txns committed since the
        snapshot) and pages_held (freed pages it keeps from reuse)."""
        self._check()
        if detail:
            if not HAVE_CHECK:
                raise Error(
                    "env.readers(detail=True) needs the mdb core "
                    "(this build links the system liblmdb)"
                )
            return self._reader_table()
        del _reader_lines[:]
        rc = lib.mdb_reader_list(self._env, lib._mdbpy_reader_cb, ffi.NULL)
        text = "".join(_reader_lines)
        del _reader_lines[:]
        if rc < 0:
            _raise("mdb_reader_list", rc)
        return text

    @_op
    def reader_check(self) -> int:
        """Clear stale reader slots; returns how many were cleared."""
        self._check()
        p = ffi.new("int *")
        rc = lib.mdb_reader_check(self._env, p)
        if rc:
            _raise("mdb_reader_check", rc)
        return int(p[0])

    @_op
    def sync(self, force: bool = False) -> None:
        """Flush the data buffers to disk."""
        self._check()
        rc = lib.mdb_env_sync(self._env, bool(force))
        if rc:
            _raise("mdb_env_sync", rc)

    @_op
    def copy(self, path: Any, compact: bool = False, txn: Any = None) -> None:
        """Copy the environment into directory ``path``."""
        if txn is not None:
            raise TypeError("copy(txn=) needs an engine with mdb_env_copy3; not supported")
        self._check()
        rc = lib.mdb_env_copy2(self._env, os.fsencode(path), lib.MDB_CP_COMPACT if compact else 0)
        if rc:
            _raise("mdb_env_copy2", rc)

    @_op
    def copyfd(self, fd: int, compact: bool = False, txn: Any = None) -> None:
        """Copy the environment to file descriptor ``fd``."""
        if txn is not None:
            raise TypeError("copyfd(txn=) needs an engine with mdb_env_copy3; not supported")
        self._check()
        rc = lib.mdb_env_copyfd2(self._env, fd, lib.MDB_CP_COMPACT if compact else 0)
        if rc:
            _raise("mdb_env_copyfd2", rc)

    def set_mapsize(self, map_size: int) -> None:
        """Resize the map; refused while a write txn or buffers=True values are alive."""
        # py-lmdb's order: a closed environment, then the argument, then a live writer
        self._check()
        if not isinstance(map_size, int):
            raise TypeError(f"an integer is required, not {type(map_size).__name__}")
        if not 0 <= map_size < 1 << 64:
            raise OverflowError(f"map_size={map_size} is out of range")
        assert self._keeper is not None
        if self._keeper.exports > 0:
            raise Error(
                f"set_mapsize() refused: {self._keeper.exports} buffers=True value(s) still "
                "point into the current map; release them (del / memoryview.release()) first"
            )
        if self._write_txns:
            raise Error("Cannot set_mapsize while a write transaction is active")  # py-lmdb's
        self._valid = False  # no new calls while the map moves
        try:
            while self._active:
                time.sleep(0.001)
            self._end_all_txns()
            rc = lib.mdb_env_set_mapsize(self._env, map_size)
            if rc:
                _raise("mdb_env_set_mapsize", rc)
            fdp = ffi.new("mdb_filehandle_t *")
            if lib.mdb_env_get_fd(self._env, fdp) == 0:
                self._map = self._grown_range(_map_range(fdp[0]))
        finally:
            self._valid = True

    @_op
    def lib_version(self) -> tuple[int, int, int]:
        """(major, minor, patch) of the engine this environment uses."""
        self._check()
        return (lib.MDB_VERSION_MAJOR, lib.MDB_VERSION_MINOR, lib.MDB_VERSION_PATCH)

    @_op
    def check(self) -> dict[str, Any]:
        """Run the mdb core's structural checker (mdb core builds only)."""
        self._check()
        if not HAVE_CHECK:
            raise Error(
                "env.check(): the structural checker needs the mdb core "
                "(this build links the system liblmdb)"
            )
        rcp = ffi.new("int *")
        rep = lib.mdbpy_check_run(self._env, rcp)
        if rep == ffi.NULL:
            _raise("mdbcore_check_env", rcp[0])
        try:
            rc = rcp[0]
            if rc and rc != -30796:  # MDB_CORRUPTED: problems found, report filled
                _raise("mdbcore_check_env", rc)
            out: dict[str, Any] = {"ok": rc == 0}
            num = ffi.new("unsigned long long *")
            for i, name in enumerate(CHECK_NUMS):
                lib.mdbpy_check_num(rep, i, num)
                out[name] = int(num[0])
            pg = ffi.new("unsigned long long *")
            code = ffi.new("int *")
            dbn = ffi.new("const char **")
            msg = ffi.new("const char **")
            out["problems"] = []
            for i in range(lib.mdbpy_check_nproblems(rep)):
                lib.mdbpy_check_problem(rep, i, pg, code, dbn, msg)
                out["problems"].append(
                    {
                        "pgno": int(pg[0]),
                        "code": int(code[0]),
                        "db": ffi.string(dbn[0]).decode("utf-8", "replace"),
                        "msg": ffi.string(msg[0]).decode("utf-8", "replace"),
                    }
                )
            vals = ffi.new("unsigned long long[5]")
            out["dbs"] = []
            for i in range(lib.mdbpy_check_ndbs(rep)):
                lib.mdbpy_check_db(rep, i, dbn, vals)
                out["dbs"].append(
                    {
                        "name": ffi.string(dbn[0]).decode("utf-8", "replace"),
                        "depth": int(vals[0]),
                        "entries": int(vals[1]),
                        "branch_pages": int(vals[2]),
                        "leaf_pages": int(vals[3]),
                        "overflow_pages": int(vals[4]),
                    }
                )
            del _reader_lines[:]
            lib.mdbpy_check_text(rep, lib._mdbpy_reader_cb, ffi.NULL)
            out["text"] = "".join(_reader_lines)
            del _reader_lines[:]
            return out
        finally:
            lib.mdbpy_check_free(rep)


def _thread_id() -> int:
    import threading

    return threading.get_ident()


def _wrote(t: Transaction | None) -> None:
    """Note a change of what t (and so its ancestors) sees: cursors re-read their record
    (see Cursor.key)."""
    while t is not None:
        t._wgen += 1
        t._cached = False
        t = t._parent


def _busy_chain(t: Transaction | None, delta: int) -> None:
    """Add delta to the busy count of t and its ancestors (see Transaction._enter)."""
    while t is not None:
        t._busy += delta
        t = t._parent


class Transaction:
    """A read or write transaction; usually from Environment.begin()."""

    def __init__(
        self,
        env: Environment,
        db: _Database | None = None,
        parent: Transaction | None = None,
        write: bool = False,
        buffers: bool = False,
    ) -> None:
        self._valid = False
        self._busy = 0
        self._created_dbs = 0
        # Changes with every write in this txn or its children and at their end: a
        # cursor's cached record is good while it has not changed (see Cursor.key).
        # The hot writes skip it while _cached is False (no cursor cached a record since).
        self._wgen = 0
        self._cached = False
        self._txn: Any = None
        # The handles of live cursors, not the cursors: an unreferenced cursor goes at
        # once (see _CursorSlot).
        self._cursors: dict[_CursorSlot, None] = {}
        self._parent = parent
        if not isinstance(env, Environment):
            raise TypeError("env must be an Environment")
        self._txenv = env
        env._check()
        if db is not None and (not isinstance(db, _Database)):
            raise TypeError("db must be a _Database")
        if db is not None and (not db._valid or db._owner is not env):
            raise _closed()
        if parent is not None:
            if not isinstance(parent, Transaction):
                raise TypeError("parent must be a Transaction")
            # py-lmdb's order of checks, and its messages
            if not parent._write:
                _raise("Read-only transactions cannot be nested.", _EINVAL)
            parent._check()
            if parent.env is not env:
                _raise("Parent transaction belongs to another environment.", _EINVAL)
            if not write:
                _raise("Read-only child transactions require the LMDB 1.0 engine.", _EINVAL)
        if write and env._readonly:
            _raise("mdb_txn_begin", _EACCES)
        if write and parent is None and env._write_txns and env._writer == _thread_id():
            raise Error(
                "mdb_txn_begin: this thread already has an active write transaction "
                "in this Environment (it would deadlock)"
            )
        self._db = db if db is not None else env._main_db
        self._write: bool = bool(write)
        self._buffers = bool(buffers)
        txn = None
        env._active += 1  # counted before the check: close() waits for us
        if parent is not None:
            parent._enter()  # the parent cannot end while its child is being begun
        try:
            if not env._valid:
                raise _closed()
            keeper = env._keeper
            if not write and keeper is not None and keeper.spare is not None:
                txn, keeper.spare = keeper.spare, None
                if lib.mdb_txn_renew(txn):
                    lib.mdb_txn_abort(txn)
                    txn = None
            if txn is None:
                txnp = ffi.new("MDB_txn **")
                rc = lib.mdb_txn_begin(
                    env._env,
                    parent._txn if parent is not None else ffi.NULL,
                    0 if write else lib.MDB_RDONLY,
                    txnp,
                )
                if rc:
                    _raise("mdb_txn_begin", rc)
                txn = txnp[0]
            if not env._valid:  # closed by another thread while we waited
                lib.mdb_txn_abort(txn)
                raise _closed()
        finally:
            if parent is not None:
                parent._leave()
            env._active -= 1
        self._txn = txn
        self._valid = True
        env._txns.append(self)
        if parent is not None:
            _wrote(parent)  # (the engine moves the parent's cursors to the child)
        if write and parent is None:
            env._write_txns += 1
            env._writer = _thread_id()
        self._val = ffi.new("mdbpy_val *")

    @property
    def env(self) -> Environment:
        """The Environment of this transaction."""
        return self._txenv

    def _check(self) -> None:
        if not self._valid or not self.env._valid:
            raise _closed()
        if self.env._pid != _pid:
            raise _forked(self.env._pid)

    # cffi releases the GIL around every engine call.  A call is bracketed by
    # _enter/_leave: the counters go up *before* validity is re-checked, so
    # close() (which waits for env._active) and commit/abort (which refuse
    # while _busy, counted on this txn and its ancestors) never free what a
    # call in flight is using.
    def _enter(self) -> None:
        env = self._txenv
        env._active += 1
        t: Transaction | None = self
        while t is not None:
            t._busy += 1
            t = t._parent
        if not self._valid or not env._valid or env._pid != _pid:
            self._leave()
            self._check()
            raise _closed()

    def _leave(self) -> None:
        self._txenv._active -= 1
        t: Transaction | None = self
        while t is not None:
            t._busy -= 1
            t = t._parent

    def _end(self, commit: bool, check_busy: bool = False) -> int:
        if not self._valid:
            return 0
        self._valid = False  # before any check: a racing _enter backs out
        if check_busy and self._busy:
            self._valid = True
            raise Error("Transaction is in use by another thread.")
        _wrote(self)  # a child's end changes what its parent sees
        env = self.env
        rc = 0
        for child in [t for t in env._txns if t._parent is self]:
            child._end(False)  # unfinished children are discarded, never committed
        for slot in list(self._cursors):
            c = slot.owner()
            if c is not None:
                c._invalidate()
            self._cursors.pop(slot, None)  # (c did; else c is garbage being finalized)
            _close_slot(slot, env)
        self._valid = False
        txn, self._txn = self._txn, None
        env._txns.remove(self)
        if self._write and self._parent is None:
            env._write_txns -= 1
        if txn is None or env._pid != _pid:
            self._settle_dbs(False)
            return rc
        if commit and self._write:
            p = self._parent
            while p is not None:  # cffi releases the GIL: keep others off the ancestors
                p._busy += 1
                p = p._parent
            try:
                env._active += 1  # close() waits for calls running without the GIL
                try:
                    crc = int(lib.mdb_txn_commit(txn))
                finally:
                    env._active -= 1
            finally:
                p = self._parent
                while p is not None:
                    p._busy -= 1
                    p = p._parent
            self._settle_dbs(crc == 0)
            return crc
        self._settle_dbs(False)
        env._active += 1
        try:
            keeper = env._keeper
            if (
                not self._write
                and env._valid
                and keeper is not None
                and keeper.spare is None
                and env._max_spare_txns > 0
            ):
                lib.mdb_txn_reset(txn)
                keeper.spare = txn
                return 0
            lib.mdb_txn_abort(txn)
        finally:
            env._active -= 1
        return 0

    def _settle_dbs(self, committed: bool) -> None:
        if not self._created_dbs:
            return
        self._created_dbs = 0
        env = self.env
        for name, db in list(env._dbs.items()):
            if db._creator is not self:
                continue
            if committed:
                db._creator = self._parent
                if self._parent is not None:
                    self._parent._created_dbs += 1
            else:
                db._creator = None
                db._valid = False
                del env._dbs[name]

    def __del__(self) -> None:
        try:
            if self._valid:
                self._end(False)
        except Exception:
            pass

    def _resolve(self, db: _Database | None) -> _Database:
        if db is None:
            return self._db
        if not isinstance(db, _Database):
            raise TypeError(f"db must be a _Database, not {type(db).__name__}")
        if not db._valid or db._owner is not self.env:
            _raise("mdb_dbi", _EINVAL)
        return db

    # get/put/delete are the hot calls: they inline what @_op, _enter/_leave, _check,
    # _resolve and _inbuf do (same checks, same order, same errors).
    def get(self, key: Any, default: Any = None, db: _Database | None = None) -> Any:
        """The (first) value of key, or default."""
        env = self._txenv
        env._active += 1
        nested = self._parent is not None
        if nested:
            _busy_chain(self, 1)
        else:
            self._busy += 1
        try:
            if not self._valid or not env._valid or env._pid != _pid:
                self._check()
                raise _closed()
            d = self._db if db is None else self._resolve(db)
            if type(key) is bytes:
                k, kl = key, len(key)
            else:
                k, kl = _inbuf(key, "key")
            val = self._val
            rc = _lib_get(self._txn, d._dbi, k, kl, val)
            if rc:
                if rc == _NOTFOUND:
                    return default
                _raise("mdb_get", rc)
            if self._buffers:
                return env._out(True, val)
            return _unpack(val.mv_data, val.mv_size)
        finally:
            env._active -= 1
            if nested:
                _busy_chain(self, -1)
            else:
                self._busy -= 1

    def put(
        self,
        key: Any,
        value: Any,
        dupdata: bool = True,
        overwrite: bool = True,
        append: bool = False,
        db: _Database | None = None,
    ) -> bool:
        """Store a record; False if not written (exists, or out of order with append)."""
        env = self._txenv
        env._active += 1
        nested = self._parent is not None
        if nested:
            _busy_chain(self, 1)
        else:
            self._busy += 1
        try:
            if not self._valid or not env._valid or env._pid != _pid:
                self._check()
                raise _closed()
            d = self._db if db is None else self._resolve(db)
            if type(key) is bytes:
                k, kl = key, len(key)
            else:
                k, kl = _inbuf(key, "key")
            if type(value) is bytes:
                v, vl = value, len(value)
            else:
                v, vl = _inbuf(value, "value")
            if dupdata is True and overwrite is True and append is False:
                flags = 0
            else:
                flags = _put_flags(d, dupdata, overwrite, append)
            # mdbpy_put checks the key and value sizes first (MDBPY_BADKEY/BADVAL)
            rc = _lib_put(self._txn, d._dbi, k, kl, v, vl, flags)
            if self._cached or nested:
                _wrote(self)
            if rc:
                if rc == _KEYEXIST:
                    return False
                _put_error("mdb_put", rc, kl, vl, env)
            return True
        finally:
            env._active -= 1
            if nested:
                _busy_chain(self, -1)
            else:
                self._busy -= 1

    @_op
    def putmulti(
        self,
        items: Any,
        dupdata: bool = True,
        overwrite: bool = True,
        append: bool = False,
        db: _Database | None = None,
    ) -> tuple[int, int]:
        """Store many (key, value) tuples; returns (consumed, added)."""
        self._check()
        with Cursor(self._resolve(db), self) as c:
            return c.putmulti(items, dupdata, overwrite, append)

    @_op
    def load_sorted(self, iterable: Any, db: _Database | None = None) -> int:
        """Fill an empty database from (key, value) pairs in strictly ascending key order,
        building its pages bottom-up; returns the number of records.  Out-of-order or
        repeated keys raise KeyExistsError and leave the database empty."""
        self._check()
        d = self._resolve(db)
        if not HAVE_CHECK:
            raise Error("load_sorted() needs the mdb core (this build links the system liblmdb)")
        if not self._write:
            _raise("load_sorted", errno.EACCES)
        feed = _LoadFeed(iterable)
        handle = ffi.new_handle(feed)
        count = ffi.new("size_t *")
        py_error = ffi.new("int *")
        rc = lib.mdbpy_bulk_load(self._txn, d._dbi, lib._mdbpy_load_refill, handle, count, py_error)
        feed.keep = ()
        if self._cached or self._parent is not None:
            _wrote(self)
        if py_error[0]:
            assert feed.error is not None
            raise feed.error
        if rc:
            _load_error(rc, int(count[0]))
        return int(count[0])

    @_op
    def replace(self, key: Any, value: Any, db: _Database | None = None) -> Any:
        """Store value and return the previous one (or None)."""
        self._check()
        _inbuf(key, "key")  # the arguments first (TypeError), as py-lmdb
        _inbuf(value, "value")
        with Cursor(self._resolve(db), self) as c:
            return c.replace(key, value)

    @_op
    def pop(self, key: Any, db: _Database | None = None) -> Any:
        """Delete key and return its value (or None)."""
        self._check()
        _inbuf(key, "key")  # the argument first (TypeError), as py-lmdb
        with Cursor(self._resolve(db), self) as c:
            return c.pop(key)

    def delete(self, key: Any, value: Any = b"", db: _Database | None = None) -> bool:
        """Delete key (or just one duplicate value); False if absent."""
        env = self._txenv
        env._active += 1
        nested = self._parent is not None
        if nested:
            _busy_chain(self, 1)
        else:
            self._busy += 1
        try:
            if not self._valid or not env._valid or env._pid != _pid:
                self._check()
                raise _closed()
            d = self._db if db is None else self._resolve(db)
            if type(key) is bytes:
                k, kl = key, len(key)
            else:
                k, kl = _inbuf(key, "key")
            if type(value) is bytes:
                v, vl = value, len(value)
            else:
                v, vl = _inbuf(b"" if value is None else value, "value")
            rc = _lib_del(self._txn, d._dbi, k, kl, v, vl, 1 if vl else 0)
            if self._cached or nested:
                _wrote(self)
            if rc:
                if rc == _NOTFOUND:
                    return False
                _raise("mdb_del", rc)
            return True
        finally:
            env._active -= 1
            if nested:
                _busy_chain(self, -1)
            else:
                self._busy -= 1

    @_op
    def cursor(self, db: _Database | None = None) -> Cursor:
        """A cursor over db."""
        self._check()
        return Cursor(self._resolve(db), self)

    @_op
    def stat(self, db: _Database | None = None) -> dict[str, int]:
        """Statistics of db as seen by this transaction."""
        self._check()
        d = self._resolve(db)
        st = ffi.new("MDB_stat *")
        rc = lib.mdb_stat(self._txn, d._dbi, st)
        if rc:
            _raise("mdb_stat", rc)
        return _stat_dict(st)

    @_op
    def drop(self, db: _Database, delete: bool = True) -> None:
        """Empty db, and with delete=True remove it."""
        self._check()
        d = self._resolve(db)
        env = self.env
        # py-lmdb closes this txn's cursors on the database whenever delete=True is asked,
        # before the engine is called (so even when it then refuses, and for the main
        # database); other txns' cursors are closed only once the handle is gone
        close_cursors = bool(delete)
        delete = bool(delete) and d is not env._main_db

        def settle(txns: list[Any], close: bool) -> None:
            for t in txns:
                for slot in list(t._cursors):
                    c = slot.owner()
                    if c is None:  # garbage being finalized: close it now
                        del t._cursors[slot]
                        _close_slot(slot, env)
                    elif c._db is d:
                        if close:
                            c._invalidate()
                        else:
                            c._positioned = False
                            c._cgen = -1

        settle([self] if close_cursors else list(env._txns), close_cursors)
        rc = lib.mdb_drop(self._txn, d._dbi, 1 if delete else 0)
        _wrote(self)
        if rc:
            _raise("mdb_drop", rc)
        if delete:
            # the handle is gone: other txns' cursors on it would reach a closed slot of
            # the engine (py-lmdb leaves them be; an intended difference)
            settle(list(env._txns), True)
            d._valid = False
            for name, x in list(env._dbs.items()):
                if x is d:
                    del env._dbs[name]

    @_op
    def id(self) -> int:
        """The transaction id."""
        self._check()
        return int(lib.mdb_txn_id(self._txn))

    def commit(self) -> None:
        """Commit the transaction."""
        self._check()
        rc = self._end(True, check_busy=True)
        if rc:
            _raise("mdb_txn_commit", rc)

    def abort(self) -> None:
        """Abandon the transaction. Idempotent."""
        if self._valid and self.env._pid != _pid:
            raise _forked(self.env._pid)
        self._end(False, check_busy=True)

    def __enter__(self) -> Transaction:
        """Return self."""
        self._check()
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> Literal[False]:
        """Commit on normal exit, abort on exception."""
        if not self._valid:
            return False
        if et is None:
            self.commit()
        else:
            self._end(False, check_busy=True)
        return False


def _put_flags(db: _Database, dupdata: bool, overwrite: bool, append: bool) -> int:
    f = 0
    dupsort = db._flags & lib.MDB_DUPSORT
    if not dupdata and dupsort:
        f |= lib.MDB_NODUPDATA
    if not overwrite:
        f |= lib.MDB_NOOVERWRITE
    if append:
        f |= lib.MDB_APPENDDUP if dupsort else lib.MDB_APPEND
    return f


_BATCH_BYTES = 64 * 1024  # record bytes one batch copies at most (a bigger record comes alone)
_BATCH_MAX = 256  # records per batch at most
_alloc = ffi.new_allocator(should_clear_after_alloc=False)


class _BatchBuf:
    """C buffers of one iterator for mdbpy_cursor_batch()."""

    __slots__ = ("buf", "view", "fmt", "big", "ints", "rcp")

    def __init__(self) -> None:
        self.buf = _alloc("char[]", _BATCH_BYTES)
        self.view = ffi.buffer(self.buf)
        self.fmt = _alloc("char[]", 1 + 42 * _BATCH_MAX)
        self.big = ffi.new("mdbpy_val[2]")
        self.ints = ffi.new("int[2]")
        self.rcp = self.ints + 1


class _Batch:
    """Records an iterator read ahead of what it has handed out (read-only txns only).

    The engine cursor is on the last record read (``rc == 0``) or past it (``rc``: the
    error of the step after it); the position the caller sees is the record it was last
    handed out, number i = how far ``it`` got - 1.  Any other use of the cursor first puts
    the engine back there and cancels the rest (Cursor._sync); so does closing the cursor
    (Cursor._invalidate), and fork (_after_fork): the iterator then carries on with
    single steps from wherever the cursor is, exactly as without read-ahead.
    """

    __slots__ = ("lst", "it", "out", "flat", "rc", "cancelled", "__weakref__")

    def __init__(self, flat: tuple[bytes, ...], rc: int, keys: bool, values: bool) -> None:
        self.flat = flat  # key0, value0, key1, value1, ...
        self.rc = rc
        self.cancelled = False
        # The keys (or the values) in a list that cancel() empties, which ends `out`.
        lst = self.lst = list(flat[::2] if keys else flat[1::2])
        it = self.it = iter(lst)
        # What the iterator yields (zip reuses its tuple when the caller drops it).
        self.out: Iterator[Any] = zip(it, flat[1::2]) if keys and values else it

    def cancel(self) -> None:
        self.cancelled = True
        del self.lst[:]  # ends the iterator's `yield from self.out`


class _CursorSlot:
    """A cursor's engine handle, as its transaction tracks it.

    A transaction holds the slots of its live cursors, not the cursors, so a cursor
    nobody refers to is freed (and its handle closed) at once, not when the transaction
    ends.  Ending the transaction ends its live cursors (``owner``); whichever comes first
    closes the handle, once: also when a garbage cycle finalizes the transaction before
    its cursor (the cursor's weak reference is gone by then, the slot is not), which
    matters because the engine frees a write transaction's cursors with it.
    """

    __slots__ = ("cur", "owner")

    def __init__(self, cur: Any, owner: weakref.ref[Cursor]) -> None:
        self.cur = cur
        self.owner = owner


def _close_slot(slot: _CursorSlot, env: Environment) -> None:
    cur = slot.cur
    slot.cur = None
    if cur is not None and env._pid == _pid:
        env._active += 1
        try:
            lib.mdb_cursor_close(cur)
        finally:
            env._active -= 1


class Cursor:
    """A position inside a database; usually from Transaction.cursor()."""

    def __init__(self, db: _Database, txn: Transaction) -> None:
        self._valid = False
        self._pend: _Batch | None = None
        if not isinstance(db, _Database):
            raise TypeError("db must be a _Database")
        if not isinstance(txn, Transaction):
            raise TypeError("txn must be a Transaction")
        self._busy = 0
        if not db._valid or db._owner is not txn.env:
            raise _closed()
        curp = ffi.new("MDB_cursor **")
        txn._enter()
        try:
            rc = lib.mdb_cursor_open(txn._txn, db._dbi, curp)
        finally:
            txn._leave()
        if rc:
            _raise("mdb_cursor_open", rc)
        self._cur = curp[0]
        self._slot = slot = _CursorSlot(curp[0], weakref.ref(self))
        txn._cursors[slot] = None  # from here on the handle is closed, whatever happens
        self._cutxn = txn
        self._db = db
        self._positioned = False
        # put()/putmulti() placed a cursor that was not positioned: py-lmdb's delete() still
        # sees it unpositioned (its flag follows reads only) until key()/value()/item() or
        # a move reads it again, and so does ours
        self._put_only = False
        # The current record as key()/value()/item() last read it, good while _cgen is
        # txn._wgen: every move sets _cgen to -1 (see key()).
        self._cgen = -1
        self._ckey: bytes | None = None
        self._cval: bytes | None = None
        self._k = ffi.new("mdbpy_val *")
        self._v = ffi.new("mdbpy_val *")
        self._valid = True

    @property
    def txn(self) -> Transaction:
        """The Transaction of this cursor."""
        return self._cutxn

    @property
    def db(self) -> _Database:
        """The _Database of this cursor."""
        return self._db

    def _enter(self) -> None:
        self._cutxn._enter()
        self._busy += 1
        if not self._valid:
            self._leave()
            raise _closed()
        if self._pend is not None:
            try:
                self._sync()
            except BaseException:
                self._leave()
                raise

    def _leave(self) -> None:
        self._busy -= 1
        self._cutxn._leave()

    def _sync(self) -> None:
        """Put the engine back on the record a reading-ahead iterator last handed out."""
        st = self._pend
        assert st is not None
        self._pend = None
        n = len(st.lst)
        i = max(n - length_hint(st.it) - 1, 0)
        st.cancel()
        self._cgen = -1
        if i == n - 1 and st.rc == 0:
            return  # the engine is on it
        k = st.flat[2 * i]
        if self._db._flags & _DUPSORT:
            v = st.flat[2 * i + 1]
            rc = _lib_cursor_get(self._cur, _GET_BOTH, k, len(k), v, len(v), self._k, self._v)
        else:
            rc = _lib_cursor_get(self._cur, _SET_KEY, k, len(k), _NULL, 0, self._k, self._v)
        if rc:  # (it is there: a read-only txn's data cannot change)
            self._positioned = False

    def _invalidate(self, check_busy: bool = False) -> None:
        if self._valid:
            self._valid = False  # before any check: a racing _enter backs out
            if check_busy and self._busy:
                self._valid = True
                raise Error("Cursor is in use by another thread.")
            if self._pend is not None:
                self._pend.cancel()
                self._pend = None
            self._cur = None
            self._positioned = False
            self._cgen = -1
            self._ckey = self._cval = None
            txn = self._cutxn
            slot = self._slot
            txn._cursors.pop(slot, None)
            _close_slot(slot, txn._txenv)

    def _check(self) -> None:
        if not self._valid:
            raise _closed()
        self.txn._check()

    def __del__(self) -> None:
        try:
            self._invalidate()
        except Exception:
            pass

    def close(self) -> None:
        """Close the cursor. Idempotent."""
        self._invalidate(check_busy=True)

    def __enter__(self) -> Cursor:
        """Return self."""
        self._check()
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        """Close the cursor."""
        self._invalidate(check_busy=True)
        return False

    # -- positioning
    def _do(self, op: int, k: Any = _NULL, kl: int = 0, v: Any = _NULL, vl: int = 0) -> bool:
        self._put_only = False
        self._cgen = -1
        rc = _lib_cursor_get(self._cur, op, k, kl, v, vl, self._k, self._v)
        if rc == 0:
            self._positioned = True
            return True
        if rc == _NOTFOUND:
            self._positioned = False
            return False
        # other errors (bad argument sizes...) leave the position as it was
        _raise("mdb_cursor_get", rc)
        return False

    def _refresh(self) -> bool:
        self._cgen = -1
        if not self._positioned:
            return False
        rc = _lib_cursor_get(self._cur, _GET_CURRENT, _NULL, 0, _NULL, 0, self._k, self._v)
        if rc:
            self._positioned = False
            return False
        return True

    # _pos (first/next/...) and _current (key/value/item) are hot: they inline what @_op,
    # _enter/_leave and _check do (same checks, same order, same errors).
    def _pos(self, op: int) -> bool:
        self._put_only = False
        txn = self._cutxn
        env = txn._txenv
        env._active += 1
        nested = txn._parent is not None
        if nested:
            _busy_chain(txn, 1)
        else:
            txn._busy += 1
        self._busy += 1
        try:
            if not txn._valid or not env._valid or env._pid != _pid or not self._valid:
                txn._check()
                raise _closed()
            if self._pend is not None:
                self._sync()
            self._cgen = -1
            rc = _lib_cursor_get(self._cur, op, _NULL, 0, _NULL, 0, self._k, self._v)
            if rc == 0:
                self._positioned = True
                return True
            if rc == _NOTFOUND:
                self._positioned = False
                return False
            # other errors (bad argument sizes...) leave the position as it was
            _raise("mdb_cursor_get", rc)
        finally:
            self._busy -= 1
            env._active -= 1
            if nested:
                _busy_chain(txn, -1)
            else:
                txn._busy -= 1

    def _current(self, keys: bool, values: bool) -> Any:
        self._put_only = False
        txn = self._cutxn
        env = txn._txenv
        env._active += 1
        nested = txn._parent is not None
        if nested:
            _busy_chain(txn, 1)
        else:
            txn._busy += 1
        self._busy += 1
        try:
            if not txn._valid or not env._valid or env._pid != _pid or not self._valid:
                txn._check()
                raise _closed()
            if self._pend is not None:
                self._sync()
            if not self._positioned:
                return (b"", b"") if keys and values else b""
            k = self._k
            v = self._v
            gen = txn._wgen
            if self._cgen != gen:
                if _lib_cursor_get(self._cur, _GET_CURRENT, _NULL, 0, _NULL, 0, k, v):
                    self._positioned = False
                    return (b"", b"") if keys and values else b""
                self._cgen = gen  # k and v hold the record until the next move or write
                txn._cached = True
                if txn._buffers:  # (fresh views each time: the caller may release them)
                    self._ckey = self._cval = None
                    return self._item(keys, values)
                kb = self._ckey = _unpack(k.mv_data, k.mv_size) if keys else None
                vb = self._cval = _unpack(v.mv_data, v.mv_size) if values else None
            elif txn._buffers:
                return self._item(keys, values)
            else:
                kb = self._ckey
                if keys and kb is None:
                    kb = self._ckey = _unpack(k.mv_data, k.mv_size)
                vb = self._cval
                if values and vb is None:
                    vb = self._cval = _unpack(v.mv_data, v.mv_size)
            if keys and values:
                return kb, vb
            return kb if keys else vb
        finally:
            self._busy -= 1
            env._active -= 1
            if nested:
                _busy_chain(txn, -1)
            else:
                txn._busy -= 1

    # key()/value()/item() answer from the cursor's cache when they can: _current reads
    # the record with GET_CURRENT once after a move and keeps the bytes it returned;
    # they stay the answer until the cursor moves (every move sets _cgen to -1) or its
    # txn's _wgen changes: any write in the txn or a child (the hot writes bump it only
    # while txn._cached says some cursor cached a record since the last bump), a child's
    # begin and end, the txn's end, close(), fork.  Read-only txns never change.  A
    # repeated GET_CURRENT has no effect the cache could miss: it clears the engine's
    # "deleted under the cursor" flag, which only a write sets.  buffers=True values are
    # not kept (each call gets fresh views; the caller may release them), only the
    # record's address.
    def key(self) -> Any:
        """Key of the current record (b'' if unpositioned)."""
        k = self._ckey
        if k is not None and self._cgen == self._cutxn._wgen:
            return k
        return self._current(True, False)

    def value(self) -> Any:
        """Value of the current record (b'' if unpositioned)."""
        v = self._cval
        if v is not None and self._cgen == self._cutxn._wgen:
            return v
        return self._current(False, True)

    def item(self) -> tuple[Any, Any]:
        """The current record as (key, value)."""
        k = self._ckey
        v = self._cval
        if k is not None and v is not None and self._cgen == self._cutxn._wgen:
            return k, v
        return self._current(True, True)

    def _item(self, keys: bool, values: bool) -> Any:
        txn = self._cutxn
        k = self._k
        v = self._v
        if txn._buffers:
            out = txn._txenv._out
            if keys and values:
                return out(True, k), out(True, v)
            if keys:
                return out(True, k)
            return out(True, v)
        if keys and values:
            return _unpack(k.mv_data, k.mv_size), _unpack(v.mv_data, v.mv_size)
        if keys:
            return _unpack(k.mv_data, k.mv_size)
        return _unpack(v.mv_data, v.mv_size)

    def first(self) -> bool:
        """Move to the first key."""
        return self._pos(lib.MDB_FIRST)

    def last(self) -> bool:
        """Move to the last key."""
        return self._pos(lib.MDB_LAST)

    def next(self) -> bool:
        """Move to the next record (first if unpositioned)."""
        return self._pos(_NEXT)

    def prev(self) -> bool:
        """Move to the previous record (last if unpositioned)."""
        return self._pos(_PREV)

    def first_dup(self) -> bool:
        """Move to the first value of the current key."""
        return self._pos(lib.MDB_FIRST_DUP)

    def last_dup(self) -> bool:
        """Move to the last value of the current key."""
        return self._pos(lib.MDB_LAST_DUP)

    def next_dup(self) -> bool:
        """Move to the next value of the current key."""
        return self._pos(lib.MDB_NEXT_DUP)

    def prev_dup(self) -> bool:
        """Move to the previous value of the current key."""
        return self._pos(lib.MDB_PREV_DUP)

    def next_nodup(self) -> bool:
        """Move to the first value of the next key."""
        return self._pos(lib.MDB_NEXT_NODUP)

    def prev_nodup(self) -> bool:
        """Move to the last value of the previous key."""
        return self._pos(lib.MDB_PREV_NODUP)

    def _set_key(self, key: Any) -> bool:
        k, kl = _inbuf(key, "key")
        return self._do(_SET_KEY, k, kl)

    # Like _pos, with a key (and value): set_key/set_range/get and the _dup seeks.
    def _seek(self, op: int, key: Any, value: Any, get: bool, default: Any) -> Any:
        self._put_only = False
        txn = self._cutxn
        env = txn._txenv
        env._active += 1
        nested = txn._parent is not None
        if nested:
            _busy_chain(txn, 1)
        else:
            txn._busy += 1
        self._busy += 1
        try:
            if not txn._valid or not env._valid or env._pid != _pid or not self._valid:
                txn._check()
                raise _closed()
            if self._pend is not None:
                self._sync()
            if type(key) is bytes:
                k, kl = key, len(key)
            else:
                k, kl = _inbuf(key, "key")
            if value is _NOARG:
                v, vl = _NULL, 0
                if op == _SET_RANGE and not kl:
                    op = _FIRST
            elif type(value) is bytes:
                v, vl = value, len(value)
            else:
                v, vl = _inbuf(value, "value")
            kv = self._k
            vv = self._v
            self._cgen = -1
            rc = _lib_cursor_get(self._cur, op, k, kl, v, vl, kv, vv)
            if rc:
                if rc != _NOTFOUND:
                    # other errors (bad argument sizes...) leave the position as it was
                    _raise("mdb_cursor_get", rc)
                self._positioned = False
                return default if get else False
            self._positioned = True
            if not get:
                return True
            if txn._buffers:
                return env._out(True, vv)
            return _unpack(vv.mv_data, vv.mv_size)
        finally:
            self._busy -= 1
            env._active -= 1
            if nested:
                _busy_chain(txn, -1)
            else:
                txn._busy -= 1

    def set_key(self, key: Any) -> bool:
        """Seek to key exactly."""
        return self._seek(_SET_KEY, key, _NOARG, False, None)

    def set_key_dup(self, key: Any, value: Any) -> bool:
        """Seek to the exact (key, value) pair."""
        return self._seek(_GET_BOTH, key, value, False, None)

    def set_range(self, key: Any) -> bool:
        """Seek to the first key >= key."""
        return self._seek(_SET_RANGE, key, _NOARG, False, None)

    def set_range_dup(self, key: Any, value: Any) -> bool:
        """Seek to the first value >= value of key."""
        return self._seek(lib.MDB_GET_BOTH_RANGE, key, value, False, None)

    def get(self, key: Any, default: Any = None) -> Any:
        """Seek to key and return its value, or default."""
        return self._seek(_SET_KEY, key, _NOARG, True, default)

    @_op
    def getmulti(
        self,
        keys: Any,
        dupdata: bool = False,
        dupfixed_bytes: int | None = None,
        keyfixed: bool = False,
        values: bool = True,
    ) -> Any:
        """Look up many keys; returns the records found."""
        if dupfixed_bytes is not None:
            if dupfixed_bytes <= 0:
                raise OverflowError("dupfixed_bytes must be a positive integer")
            if not dupdata:
                raise TypeError("dupfixed_bytes requires dupdata=True")
        if keyfixed and not dupfixed_bytes:
            raise TypeError("keyfixed=True requires dupfixed_bytes")
        if not values and dupdata:
            raise TypeError("values=False cannot be combined with dupdata=True")
        self._check()
        if dupfixed_bytes and not self._db._flags & lib.MDB_DUPFIXED:
            _raise("mdb_cursor_get", lib.MDB_INCOMPATIBLE)
        out: list[Any] = []
        packed = bytearray() if keyfixed else None
        keylen = -1
        for key in keys:
            if not self._set_key(key):
                continue
            while True:
                if dupfixed_bytes and self._v.mv_size != dupfixed_bytes:
                    raise ValueError(
                        f"value of {self._v.mv_size} bytes, dupfixed_bytes={dupfixed_bytes}"
                    )
                if packed is not None:
                    kb = _unpack(self._k.mv_data, self._k.mv_size)
                    if keylen < 0:
                        keylen = len(kb)
                    elif len(kb) != keylen:
                        raise ValueError("keyfixed=True requires equal-size keys")
                    packed += kb
                    packed += _unpack(self._v.mv_data, self._v.mv_size)
                elif values:
                    out.append(self._item(True, True))
                else:
                    out.append(self._item(True, False))
                if not dupdata or not self._do(lib.MDB_NEXT_DUP):
                    break
        if packed is not None:
            return memoryview(bytes(packed))
        return out

    # -- writes
    def _put(self, key: Any, value: Any, flags: int) -> bool:
        k, kl = _inbuf(key, "key")
        v, vl = _inbuf(value, "value")
        # mdbpy_cursor_put checks the key and value sizes first (MDBPY_BADKEY/BADVAL)
        self._cgen = -1
        rc = _lib_cursor_put(self._cur, k, kl, v, vl, flags)
        txn = self._cutxn
        if txn._cached or txn._parent is not None:
            _wrote(txn)
        if rc == 0:
            if not self._positioned:
                self._put_only = True  # py-lmdb's delete() still sees it unpositioned
            self._positioned = True
            self._refresh()
            return True
        if rc == _KEYEXIST:
            self._refresh()
            return False
        _put_error("mdb_cursor_put", rc, kl, vl, self._cutxn._txenv)

    @_op
    def put(
        self,
        key: Any,
        value: Any,
        dupdata: bool = True,
        overwrite: bool = True,
        append: bool = False,
    ) -> bool:
        """Store a record and position on it; False if not written."""
        self._check()
        return self._put(key, value, _put_flags(self._db, dupdata, overwrite, append))

    @_op
    def putmulti(
        self, items: Any, dupdata: bool = True, overwrite: bool = True, append: bool = False
    ) -> tuple[int, int]:
        """Store many (key, value) tuples; returns (consumed, added)."""
        self._check()
        flags = _put_flags(self._db, dupdata, overwrite, append)
        consumed = added = 0
        for item in items:
            if type(item) is not tuple or len(item) != 2:
                raise TypeError("putmulti() items must be 2-tuples (key, value)")
            added += self._put(item[0], item[1], flags)
            consumed += 1
        return consumed, added

    @_op
    def replace(self, key: Any, value: Any) -> Any:
        """Store value and return the previous one (or None)."""
        self._check()
        k, kl = _inbuf(key, "key")
        _inbuf(value, "value")  # both arguments first (TypeError), as py-lmdb
        if not self._cutxn._write:  # py-lmdb refuses a read-only txn before it looks
            _raise("mdb_cursor_put", errno.EACCES)
        if kl == 0:  # refused by the lookup itself; a long key is a miss, then the put says
            _badvalsize("mdb_cursor_put", kl, self.txn.env._maxkey)
        old = None
        if self._do(lib.MDB_SET_KEY, k, kl):
            old = _unpack(self._v.mv_data, self._v.mv_size)
            if self._db._flags & lib.MDB_DUPSORT:
                rc = lib.mdb_cursor_del(self._cur, lib.MDB_NODUPDATA)
                _wrote(self._cutxn)
                if rc:
                    _raise("mdb_cursor_del", rc)
        self._put(key, value, 0)
        return old

    @_op
    def pop(self, key: Any) -> Any:
        """Delete key and return its value (or None)."""
        self._check()
        if not self._set_key(key):
            return None
        old = _unpack(self._v.mv_data, self._v.mv_size)
        # py-lmdb's contract: on a DUPSORT database only the first value of the key goes.
        rc = lib.mdb_cursor_del(self._cur, 0)
        _wrote(self._cutxn)
        if rc:
            _raise("mdb_cursor_del", rc)
        self._refresh()
        return old

    @_op
    def delete(self, dupdata: bool = False) -> bool:
        """Delete the current record and move to the next one."""
        self._check()
        if not self._positioned or self._put_only:
            return False
        flags = lib.MDB_NODUPDATA if dupdata and self._db._flags & lib.MDB_DUPSORT else 0
        rc = lib.mdb_cursor_del(self._cur, flags)
        _wrote(self._cutxn)
        if rc:
            _raise("mdb_cursor_del", rc)
        self._refresh()
        return True

    @_op
    def count(self) -> int:
        """Number of values of the current key (dupsort only)."""
        self._check()
        p = ffi.new("size_t *")
        self._cgen = -1  # (it may set up the engine's duplicate cursor)
        rc = lib.mdb_cursor_count(self._cur, p)
        if rc:
            _raise("mdb_cursor_count", rc)
        return int(p[0])

    # -- iteration
    def _fetch(self, bb: _BatchBuf, op: int, size: int, keys: bool, values: bool) -> _Batch | None:
        """Read up to size records ahead with op (inside _enter/_leave); None at the end."""
        self._put_only = False
        ints = bb.ints
        self._cgen = -1
        flen = _lib_cursor_batch(
            self._cur, op, size, bb.buf, _BATCH_BYTES, bb.fmt, bb.big, ints, bb.rcp
        )
        n = ints[0]
        rc = ints[1]
        flat: tuple[bytes, ...] = unpack_from(_unpack(bb.fmt, flen), bb.view) if n else ()
        if rc == _BIG:  # a record too big for the buffer: on its own, straight from the map
            big = bb.big
            k = _unpack(big[0].mv_data, big[0].mv_size)
            flat += (k, _unpack(big[1].mv_data, big[1].mv_size))
            n += 1
            rc = 0
        if not n:  # as _do(op)
            if rc == _NOTFOUND:
                self._positioned = False
                return None
            _raise("mdb_cursor_get", rc)
        self._positioned = True
        return _Batch(flat, rc, keys, values)

    def _iter(self, start: int, op: int, keys: bool, values: bool) -> Iterator[Any]:
        self._check()
        return _iterator(self, start, op, keys, values)

    def iternext(self, keys: bool = True, values: bool = True) -> Iterator[Any]:
        """Forward iterator from the current record (the first if unpositioned)."""
        return self._iter(lib.MDB_FIRST, lib.MDB_NEXT, keys, values)

    def iternext_dup(self, keys: bool = False, values: bool = True) -> Iterator[Any]:
        """Forward iterator over the values of the current key."""
        return self._iter(lib.MDB_GET_CURRENT, lib.MDB_NEXT_DUP, keys, values)

    def iternext_nodup(self, keys: bool = True, values: bool = False) -> Iterator[Any]:
        """Forward iterator over distinct keys."""
        return self._iter(lib.MDB_FIRST, lib.MDB_NEXT_NODUP, keys, values)

    def iterprev(self, keys: bool = True, values: bool = True) -> Iterator[Any]:
        """Backward iterator from the current record (the last if unpositioned)."""
        return self._iter(lib.MDB_LAST, lib.MDB_PREV, keys, values)

    def iterprev_dup(self, keys: bool = False, values: bool = True) -> Iterator[Any]:
        """Backward iterator over the values of the current key."""
        return self._iter(lib.MDB_GET_CURRENT, lib.MDB_PREV_DUP, keys, values)

    def iterprev_nodup(self, keys: bool = True, values: bool = False) -> Iterator[Any]:
        """Backward iterator over distinct keys."""
        return self._iter(lib.MDB_LAST, lib.MDB_PREV_NODUP, keys, values)

    def __iter__(self) -> Iterator[Any]:
        """Same as iternext()."""
        return self.iternext()

    def _iter_from(self, key: Any, reverse: bool) -> Iterator[Any]:
        """Iterator starting at set_range(key)."""
        found = self.set_range(key)
        if not found and reverse:
            self.last()
        if reverse:
            return self.iterprev()
        return self.iternext()


_ZEROS = repeat(0)  # endless and stateless: shared by every iterator


class _Cell(list):  # type: ignore[type-arg]
    """cell[0]: where the records of one cursor iterator come from (see _Iterator)."""

    __slots__ = ("__weakref__",)


class _Iterator(map):  # type: ignore[type-arg]
    """What Cursor.iternext() and friends return: ``next(it)`` is ``next(cell[0])``.

    As py-lmdb's, the iterator is a thin object that steps its cursor on each __next__
    and keeps no end state (see _steps): it raises StopIteration while the cursor is
    unpositioned and goes on from wherever the cursor is once it is positioned again.
    A generator stays finished after its end, so cell[0] is a _steps generator that
    leaves a fresh one in the cell when it ends.  While reading ahead, cell[0] is
    ``chain(the batch's records, that generator)``: a batch is handed out with no
    Python code per record.  The cell is held weakly by the generator, so dropping the
    iterator frees it (and lets its cursor go) at once.
    """

    __slots__ = ()


def _iterator(cur: Cursor, start: int, op: int, keys: bool, values: bool) -> Iterator[Any]:
    cell = _Cell((None,))
    cell[0] = _steps(cur, start, op, keys, values, weakref.ref(cell), False, False)
    return _Iterator(next, map(cell.__getitem__, _ZEROS))


def _steps(
    cur: Cursor,
    start: int,
    op: int,
    keys: bool,
    values: bool,
    wcell: weakref.ref[_Cell],
    begun: bool,
    started: bool,
) -> Iterator[Any]:
    """The records of a cursor iterator, for cell[0] (see _Iterator).

    The first __next__ moves an unpositioned cursor with start (first/last; not the
    _dup iterators, whose start is GET_CURRENT).  Every __next__ ends the iteration while
    the cursor is unpositioned; else it returns the current record if the iterator
    returned none yet (begun/started say how far it got), else it steps with op and
    returns the record found, or ends.  At its end (or error) the generator puts a
    fresh one in the cell, for a later __next__.
    """
    try:
        if not started:
            cur._enter()
            try:
                first_call = not begun
                begun = True
                if not cur._positioned:
                    ok = first_call and start != _GET_CURRENT and cur._do(start)
                else:
                    ok = cur._refresh()
                item = cur._item(keys, values) if ok else None
            finally:
                cur._leave()
            if ok:
                started = True
                yield item
        txn = cur._cutxn
        # Write txns (a write in the loop must show in what comes next) and buffers=True
        # (values point into the map) take one step per record (size 0).  Read-only txns
        # read ahead: one step, then batches of 4, 16, 64, 256 records (one engine call
        # and one struct.unpack_from each; see _Batch for how the cursor's position stays
        # the one last handed out) while nothing else uses the cursor.
        size = 0 if txn._write or txn._buffers else 1
        bb: _BatchBuf | None = None
        me: weakref.ref[Iterator[Any]] | None = None
        while started:
            if size <= 1:
                cur._enter()
                try:
                    ok = cur._positioned and cur._do(op)
                    item = cur._item(keys, values) if ok else None
                finally:
                    cur._leave()
                if not ok:
                    break
                yield item
                if size:
                    size = 4
                continue
            cur._enter()
            try:
                st = None
                if cur._positioned:
                    if bb is None:
                        bb = _BatchBuf()
                    st = cur._fetch(bb, op, size, keys, values)
            finally:
                cur._leave()
            if st is None:
                break
            cell = wcell()
            if cell is None:
                return  # the iterator is gone
            if me is None:  # this generator (in the cell until its first batch)
                me = weakref.ref(cell[0])
            out = st.out
            # (first in a list: no local may hold zip's tuple while the chain hands the
            # batch out, or zip could not reuse it and would build one per record)
            first = [next(out)]
            if st.rc or length_hint(st.it):  # else the engine is on it: nothing to put back
                cur._pend = st
                _batches.add(st)
            cell[0] = chain(out, me())  # type: ignore[arg-type]
            del cell
            yield first.pop()
            # Resumed by the chain: the batch was handed out in full, or cancelled.
            if st.cancelled:  # the cursor was used (or closed) meanwhile: one step first
                size = 1
                continue
            if cur._pend is st:
                cur._pend = None
            if st.rc:  # the step after the batch failed: as a single step would now
                cur._enter()
                try:
                    if st.rc != _NOTFOUND:
                        _raise("mdb_cursor_get", st.rc)
                    cur._positioned = False
                    cur._cgen = -1
                finally:
                    cur._leave()
                break
            size = min(size * 4, _BATCH_MAX)
    except GeneratorExit:
        raise
    except BaseException:
        _renew(cur, start, op, keys, values, wcell, begun, started)
        raise
    _renew(cur, start, op, keys, values, wcell, begun, started)


def _renew(
    cur: Cursor,
    start: int,
    op: int,
    keys: bool,
    values: bool,
    wcell: weakref.ref[_Cell],
    begun: bool,
    started: bool,
) -> None:
    cell = wcell()
    if cell is not None:
        cell[0] = _steps(cur, start, op, keys, values, wcell, begun, started)


def version(subpatch: bool = False) -> tuple[int, ...]:
    """(major, minor, patch) of the engine's lmdb.h, plus 0 with subpatch=True."""
    v = (lib.MDB_VERSION_MAJOR, lib.MDB_VERSION_MINOR, lib.MDB_VERSION_PATCH)
    return v + (0,) if subpatch else v
