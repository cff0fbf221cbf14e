"""Cursor iterators of the cffi backend (as mdb._cext's iter.c), with read-ahead.

Cursor.iternext() and friends return an :class:`_Iterator`; iterators of read-only
transactions read records ahead in batches (:class:`_Batch`, one engine call each).
"""

from __future__ import annotations

import weakref
from itertools import chain, repeat
from operator import length_hint
from typing import TYPE_CHECKING, Any, Iterator

from ._ffi import _ERR, _GET_CURRENT, _NOTFOUND, _STALE, _batches, _lib_cread, _raise, ffi

if TYPE_CHECKING:
    from .cursor import Cursor


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
        cst = cur._cst
        view = cur._view
        copy = not txn._buffers
        while started:
            if size <= 1:
                reread = False  # True: on the record already, read it again
                if copy and cur._positioned and cur._pend is None:
                    # One step and its record in one helper call (see Cursor._pos); a
                    # stale state or a record too big for the buffer: the slow way below.
                    cur._put_only = False
                    cur._cgen = -1
                    r = _lib_cread(cst, op)
                    if r >= 0:
                        kl = r & 0xFFFF
                        if keys and values:
                            yield view[:kl], view[kl : r >> 16]
                        else:
                            yield view[:kl] if keys else view[kl : r >> 16]
                        if size:
                            size = 4
                        continue
                    if r == _NOTFOUND:
                        cur._positioned = False
                        break
                    if r == _ERR:  # (the position is as it was)
                        _raise("mdb_cursor_get", cst.rc)
                    reread = r != _STALE  # _OUT: on the record, read again the slow way
                cur._enter()
                try:
                    ok = cur._refresh() if reread else (cur._positioned and cur._do(op))
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
