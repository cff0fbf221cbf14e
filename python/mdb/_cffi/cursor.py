"""Cursor of the cffi backend (as mdb._cext's cursor.c), and its engine handle's slot."""

from __future__ import annotations

import errno
import weakref
from operator import length_hint
from struct import unpack_from
from typing import Any, Iterator, Literal

from .._common import check_getmulti_args
from ..errors import Error, _closed
from ._ffi import (
    _BIG,
    _DUPSORT,
    _ERR,
    _FIRST,
    _GET_BOTH,
    _GET_CURRENT,
    _KEYEXIST,
    _LOST,
    _LOST_EXIST,
    _NEXT,
    _NOTFOUND,
    _NULL,
    _OUT,
    _PREV,
    _SET_KEY,
    _SET_RANGE,
    _STALE,
    _badvalsize,
    _close_gate,
    _inbuf,
    _lib_cinit,
    _lib_cmove,
    _lib_cput_b,
    _lib_cread,
    _lib_cseek,
    _lib_cursor_batch,
    _lib_cursor_get,
    _lib_cursor_put,
    _new_state,
    _op,
    _put_error,
    _put_flags,
    _raise,
    _unpack,
    _wrote,
    ffi,
    lib,
    pid_global,
)
from .database import _Database
from .environment import Environment
from .iterator import _BATCH_BYTES, _Batch, _BatchBuf, _iterator
from .transaction import Transaction

_pid = pid_global(globals())
_NOARG: Any = object()  # "no value given" for Cursor._seek


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
        # The hot calls' guard and buffer (see helpers.h).  Allocated before the engine's
        # cursor: nothing after its open may fail before the slot below owns it.
        cst = self._cst = _new_state("mdbpy_curst *")  # (its gate opens in _lib_cinit)
        self._view = ffi.buffer(cst.buf)
        # the record as the slow paths read it (the fast paths' stays in the state)
        self._k = ffi.new("mdbpy_val *")
        self._v = ffi.new("mdbpy_val *")
        txn._enter()
        try:
            rc = lib.mdb_cursor_open(txn._txn, db._dbi, curp)
            if not rc:  # (while counted: it releases the GIL, and the txn must not end)
                _lib_cinit(cst, curp[0], txn._st)
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
            # then the fast paths' gate, as Transaction._end does
            if self._cutxn._txenv._pid == _pid and not _close_gate(self._cst, check_busy):
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

    # _pos (first/next/...), _current (key/value/item) and _seek are hot.  Their fast path
    # is one helper call, which checks and counts in the C states (see helpers.h) what
    # _enter/_leave check and count, when no read-ahead batch is pending (_sync); a shut
    # gate (MDBPY_STALE: the cursor or its txn ended, the env closed or being resized, a
    # forked child) or a record too big for the cursor's buffer sends them to the slow
    # path, which brackets its work with _enter/_leave and raises what it always did.
    def _pos(self, op: int) -> bool:
        self._put_only = False
        if self._pend is None:
            self._cgen = -1
            rc = _lib_cmove(self._cst, op)
            if not rc:
                self._positioned = True
                return True
            if rc == _NOTFOUND:
                self._positioned = False
                return False
            if rc != _STALE:  # (bad argument sizes...: the position is as it was)
                _raise("mdb_cursor_get", rc)
        self._enter()
        try:
            return self._do(op)
        finally:
            self._leave()

    def _current(self, keys: bool, values: bool) -> Any:
        self._put_only = False
        txn = self._cutxn
        if self._positioned and self._pend is None and not txn._buffers:
            gen = txn._wgen
            r = _lib_cread(self._cst, _GET_CURRENT)
            if r >= 0:  # the record, copied: key and value with a slice each
                view = self._view
                kl = r & 0xFFFF
                kb = self._ckey = view[:kl]
                vb = self._cval = view[kl : r >> 16]
                self._cgen = gen  # (kept until the next move or write, as below)
                txn._cached = True
                if keys and values:
                    return kb, vb
                return kb if keys else vb
            if r == _NOTFOUND or r == _ERR:
                self._positioned = False
                return (b"", b"") if keys and values else b""
        self._enter()
        try:
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
            self._leave()

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
        if (
            value is _NOARG
            and type(key) is bytes
            and self._pend is None
            and not (get and self._cutxn._buffers)
        ):
            kl = len(key)
            if op == _SET_RANGE and not kl:
                op = _FIRST
            self._cgen = -1
            r = _lib_cseek(self._cst, op, key, kl)
            if r >= 0:
                self._positioned = True
                if get:
                    return self._view[r & 0xFFFF : r >> 16]
                return True
            if r == _NOTFOUND:
                self._positioned = False
                return default if get else False
            if r == _ERR:  # (bad argument sizes...: the position is as it was)
                _raise("mdb_cursor_get", self._cst.rc)
            if r == _OUT and not get:
                self._positioned = True
                return True
            # (_STALE; or _OUT for get: found, too big for the buffer, sought again below)
        self._enter()
        txn = self._cutxn
        env = txn._txenv
        try:
            k, kl = (key, len(key)) if type(key) is bytes else _inbuf(key, "key")
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
            self._leave()

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
        check_getmulti_args(dupdata, dupfixed_bytes, keyfixed, values)
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
        """put() inside _enter/_leave (or the fast path's counts)."""
        if type(key) is bytes and type(value) is bytes:
            self._cgen = -1
            rc = _lib_cput_b(self._cst, key, value, flags)
            if rc != _STALE:
                return self._put_done(rc, len(key), len(value))
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

    def _put_done(self, rc: int, kl: int, vl: int) -> bool:
        """The end of a _lib_cput_b that ran: as _put's, with the _refresh it did."""
        txn = self._cutxn
        if txn._cached or txn._parent is not None:
            _wrote(txn)
        if rc == 0 or rc == _LOST:
            if not self._positioned:
                self._put_only = True  # py-lmdb's delete() still sees it unpositioned
            self._positioned = rc == 0
            return True
        if rc == _KEYEXIST or rc == _LOST_EXIST:
            if rc == _LOST_EXIST:
                self._positioned = False
            return False
        _put_error("mdb_cursor_put", rc, kl, vl, txn._txenv)

    def put(
        self,
        key: Any,
        value: Any,
        dupdata: bool = True,
        overwrite: bool = True,
        append: bool = False,
    ) -> bool:
        """Store a record and position on it; False if not written."""
        if type(key) is bytes and type(value) is bytes and self._pend is None:
            if dupdata is True and overwrite is True and append is False:
                flags = 0
            else:
                flags = _put_flags(self._db, dupdata, overwrite, append)
            self._cgen = -1
            rc = _lib_cput_b(self._cst, key, value, flags)
            if rc != _STALE:
                return self._put_done(rc, len(key), len(value))
        return self._put_slow(key, value, dupdata, overwrite, append)

    @_op
    def _put_slow(self, key: Any, value: Any, dupdata: bool, overwrite: bool, append: bool) -> bool:
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
        cst = self._cst
        txn = self._cutxn
        # (_enter/_leave count this whole call: a gate shut meanwhile, by a close() that
        # waits for that count, only sends the rest to _put's slow way)
        for item in items:
            if type(item) is not tuple or len(item) != 2:
                raise TypeError("putmulti() items must be 2-tuples (key, value)")
            k, v = item
            if type(k) is bytes and type(v) is bytes:
                self._cgen = -1
                rc = _lib_cput_b(cst, k, v, flags)
                if rc == 0 and self._positioned and not txn._cached and txn._parent is None:
                    added += 1  # _put_done's common case, inline
                elif rc != _STALE:
                    added += self._put_done(rc, len(k), len(v))
                else:
                    added += self._put(k, v, flags)
            else:
                added += self._put(k, v, flags)
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
