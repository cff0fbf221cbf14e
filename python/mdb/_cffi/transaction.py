"""Transaction of the cffi backend (as mdb._cext's txn.c), and load_sorted's feed."""

from __future__ import annotations

import errno
import itertools
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from ..errors import Error, _closed, _forked
from ._ffi import (
    _EACCES,
    _EINVAL,
    _ERR,
    _KEYEXIST,
    _NOTFOUND,
    _NULL,
    _STALE,
    HAVE_CHECK,
    _close_gate,
    _inbuf,
    _lib_del,
    _lib_get,
    _lib_put,
    _lib_tbegin,
    _lib_tbegin_read,
    _lib_tdel_b,
    _lib_tend_read,
    _lib_tget_b,
    _lib_tput_b,
    _new_state,
    _op,
    _out_call,
    _put_error,
    _put_flags,
    _raise,
    _stat_dict,
    _thread_id,
    _unpack,
    _wrote,
    ffi,
    lib,
    pid_global,
)
from .database import _Database
from .environment import Environment

if TYPE_CHECKING:
    from .cursor import _CursorSlot

_pid = pid_global(globals())


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


class Transaction:
    """A read or write transaction; usually from Environment.begin()."""

    __slots__ = (
        "_valid",
        "_busy",
        "_created_dbs",
        "_wgen",
        "_cached",
        "_txn",
        "_cursors",
        "_parent",
        "_txenv",
        "_db",
        "_write",
        "_buffers",
        "_st",
        "_view",
        "_val",
        "__weakref__",
    )

    def __init__(
        self,
        env: Environment,
        db: _Database | None = None,
        parent: Transaction | None = None,
        write: bool = False,
        buffers: bool = False,
    ) -> None:
        # (the order of the checks, and their messages, are py-lmdb's)
        if type(env) is not Environment and not isinstance(env, Environment):
            raise TypeError("env must be an Environment")
        if not env._valid or env._pid != _pid:
            env._check()  # (raises)
        if db is None:
            db = env._main_db
        else:
            if not isinstance(db, _Database):
                raise TypeError("db must be a _Database")
            if not db._valid or db._owner is not env:
                raise _closed()
        if parent is not None or write:
            self._check_begin(env, parent, write)
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
        self._txenv = env
        self._db = db
        self._write: bool = bool(write)
        self._buffers = bool(buffers)
        # The hot calls' guard and buffer (see helpers.h): get/put/delete's fast paths
        # check and count there, in C, not with _enter/_leave.  (Allocated before the
        # engine's txn: nothing after the begin may fail and leak it.)
        st = self._st = _new_state("mdbpy_txnst *")
        self._view = ffi.buffer(st.buf)
        self._val: Any = None  # _get's result, allocated by its first call
        env._active += 1  # counted before the check: close() waits for us
        if parent is not None:
            parent._enter()  # the parent cannot end while its child is being begun
        try:
            if not env._valid:
                raise _closed()
            if not write:  # (a top-level one: children are write txns)
                spare = _NULL
                keeper = env._keeper
                if keeper is not None and keeper.spare is not None:
                    spare, keeper.spare = keeper.spare, None
                rc = _lib_tbegin_read(st, env._env, spare, db._dbi, env._st)
            else:  # (counted in env._active: it releases the GIL, and close() must wait)
                pst = parent._st if parent is not None else _NULL
                rc = _lib_tbegin(st, env._env, pst, db._dbi, env._st)
            if rc:
                _raise("mdb_txn_begin", rc)
            txn = st.txn
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

    def _check_begin(self, env: Environment, parent: Transaction | None, write: bool) -> None:
        """__init__'s checks of a write or child transaction."""
        if parent is not None:
            if not isinstance(parent, Transaction):
                raise TypeError("parent must be a Transaction")
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

    @property
    def env(self) -> Environment:
        """The Environment of this transaction."""
        return self._txenv

    def _check(self) -> None:
        env = self._txenv  # (not the env property: begin/commit run it twice)
        if not self._valid or not env._valid:
            raise _closed()
        if env._pid != _pid:
            raise _forked(env._pid)

    # cffi releases the GIL around every engine call.  A call is bracketed by
    # _enter/_leave: the counters go up *before* validity is re-checked, so
    # close() (which waits for env._active) and commit/abort (which refuse
    # while _busy, counted on this txn and its ancestors) never free what a
    # call in flight is using.  The ancestors' validity is checked too: an
    # ancestor's end, once past its _busy check, discards this txn (unchecked).
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
        t = self._parent
        while t is not None:
            if not t._valid:
                self._leave()
                raise _closed()
            t = t._parent

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
        env = self._txenv
        if not self._write and not self._cursors and not self._created_dbs and env._pid == _pid:
            # A read txn with nothing of its own to end (no cursors, no databases opened
            # in it, and it cannot have children): one helper shuts its gate as below
            # and ends the engine's txn as _free would.
            env._active += 1
            try:
                keeper = env._keeper
                keep = (
                    env._valid
                    and keeper is not None
                    and keeper.spare is None
                    and env._max_spare_txns > 0
                )
                if _lib_tend_read(self._st, check_busy, keep):
                    self._valid = True
                    raise Error("Transaction is in use by another thread.")
                if keep:
                    keeper.spare = self._txn
                self._txn = None
            finally:
                env._active -= 1
            env._txns.remove(self)
            return 0
        # Then the gate of the fast paths (see helpers.h): a check_busy end is refused
        # while one is in flight, other ends wait for it (it is short).  (Meanwhile the
        # GIL is released: a slow path starting then in another thread finds the txn
        # closed even if the end is then refused, as can only happen in a race.)  A
        # forked child's end does not touch the engine: nothing to wait for.
        if env._pid == _pid and not _close_gate(self._st, check_busy):
            self._valid = True
            raise Error("Transaction is in use by another thread.")
        # Listed until the engine is done with it: Environment.close() (_end_all_txns)
        # waits for a txn another thread is ending, and must not close the engine first.
        try:
            return self._free(commit, env)
        finally:
            env._txns.remove(self)

    def _free(self, commit: bool, env: Environment) -> int:
        """_end's work once the txn is no longer valid: children, cursors, the engine's txn."""
        _wrote(self)  # a child's end changes what its parent sees
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

    # get/put/delete are the hot calls.  Their fast path (bytes arguments, the txn's own
    # database, put's default flags) is one helper call, which checks and counts in the C
    # state (see helpers.h) what _enter/_leave check and count; a shut gate (MDBPY_STALE:
    # the txn ended, its env closed or being resized, a forked child) sends it to the slow
    # path, which raises what it always did.  The slow paths inline what @_op, _resolve
    # and _inbuf do for the common case (same checks, same order, same errors).
    def get(self, key: Any, default: Any = None, db: _Database | None = None) -> Any:
        """The (first) value of key, or default."""
        if db is None and type(key) is bytes and not self._buffers:
            r = _lib_tget_b(self._st, key)
            if r >= 0:  # copied into the state's buffer: bytes with one slice
                return self._view[:r]
            if r == _NOTFOUND:
                return default
            if r == _ERR:
                _raise("mdb_get", self._st.rc)
            # (_STALE, or _OUT: a value too big for the buffer, read again below)
        return self._get(key, default, db)

    def _get(self, key: Any, default: Any, db: _Database | None) -> Any:
        self._enter()
        env = self._txenv
        try:
            d = self._db if db is None else self._resolve(db)
            k, kl = (key, len(key)) if type(key) is bytes else _inbuf(key, "key")
            val = self._val
            if val is None:
                val = self._val = ffi.new("mdbpy_val *")
            rc = _lib_get(self._txn, d._dbi, k, kl, val)
            if rc:
                if rc == _NOTFOUND:
                    return default
                _raise("mdb_get", rc)
            if self._buffers:
                return env._out(True, val)
            return _unpack(val.mv_data, val.mv_size)
        finally:
            self._leave()

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
        if (
            type(key) is bytes
            and type(value) is bytes
            and db is None
            and dupdata is True
            and overwrite is True
            and append is False
        ):
            rc = _lib_tput_b(self._st, key, value)
            if rc != _STALE:  # the call ran (else nothing happened: the slow path raises)
                if self._cached or self._parent is not None:
                    _wrote(self)
                if not rc:
                    return True
                if rc == _KEYEXIST:
                    return False
                _put_error("mdb_put", rc, len(key), len(value), self._txenv)
        return self._put(key, value, dupdata, overwrite, append, db)

    def _put(
        self,
        key: Any,
        value: Any,
        dupdata: bool,
        overwrite: bool,
        append: bool,
        db: _Database | None,
    ) -> bool:
        self._enter()
        env = self._txenv
        try:
            d = self._db if db is None else self._resolve(db)
            k, kl = (key, len(key)) if type(key) is bytes else _inbuf(key, "key")
            v, vl = (value, len(value)) if type(value) is bytes else _inbuf(value, "value")
            if dupdata is True and overwrite is True and append is False:
                flags = 0
            else:
                flags = _put_flags(d, dupdata, overwrite, append)
            # mdbpy_put checks the key and value sizes first (MDBPY_BADKEY/BADVAL)
            rc = _lib_put(self._txn, d._dbi, k, kl, v, vl, flags)
            if self._cached or self._parent is not None:
                _wrote(self)
            if rc:
                if rc == _KEYEXIST:
                    return False
                _put_error("mdb_put", rc, kl, vl, env)
            return True
        finally:
            self._leave()

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
        if db is None and type(key) is bytes and type(value) is bytes and not value:
            rc = _lib_tdel_b(self._st, key)
            if rc != _STALE:  # the call ran (else nothing happened: the slow path raises)
                if self._cached or self._parent is not None:
                    _wrote(self)
                if not rc:
                    return True
                if rc == _NOTFOUND:
                    return False
                _raise("mdb_del", rc)
        return self._delete(key, value, db)

    def _delete(self, key: Any, value: Any, db: _Database | None) -> bool:
        self._enter()
        try:
            d = self._db if db is None else self._resolve(db)
            k, kl = (key, len(key)) if type(key) is bytes else _inbuf(key, "key")
            v, vl = (
                (value, len(value))
                if type(value) is bytes
                else _inbuf(b"" if value is None else value, "value")
            )
            rc = _lib_del(self._txn, d._dbi, k, kl, v, vl, 1 if vl else 0)
            if self._cached or self._parent is not None:
                _wrote(self)
            if rc:
                if rc == _NOTFOUND:
                    return False
                _raise("mdb_del", rc)
            return True
        finally:
            self._leave()

    def cursor(self, db: _Database | None = None) -> Cursor:
        """A cursor over db."""
        # (no @_op: the checks raise what _enter would, and Cursor() counts its own
        # engine call)
        self._check()
        return Cursor(self._resolve(db), self)

    @_op
    def stat(self, db: _Database | None = None) -> dict[str, int]:
        """Statistics of db as seen by this transaction."""
        self._check()
        d = self._resolve(db)
        return _stat_dict(_out_call("mdb_stat", "MDB_stat *", lib.mdb_stat, self._txn, d._dbi))

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
        env = self._txenv
        if not self._valid or not env._valid or env._pid != _pid:
            self._check()  # (raises)
        rc = self._end(True, check_busy=True)
        if rc:
            _raise("mdb_txn_commit", rc)

    def abort(self) -> None:
        """Abandon the transaction. Idempotent."""
        if self._valid and self._txenv._pid != _pid:
            raise _forked(self._txenv._pid)
        self._end(False, check_busy=True)

    def __enter__(self) -> Transaction:
        """Return self."""
        env = self._txenv
        if not self._valid or not env._valid or env._pid != _pid:
            self._check()  # (raises)
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


# (at the end: cursor.py imports this module's Transaction)
from .cursor import Cursor, _close_slot  # noqa: E402
