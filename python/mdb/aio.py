"""asyncio wrappers over mdb, with the shape of py-lmdb's ``lmdb.aio``.

``wrap(env)`` returns an :class:`AsyncEnvironment`.  Every engine call runs in
an executor so the event loop never blocks; cheap accessors (``key()``,
``value()``, ``item()``, ``id()``, ``path()``, ``max_key_size()``, ...) run
directly.  A write transaction gets a private single-thread executor, because
the engine binds write transactions to the thread that began them; each
transaction holds an :class:`asyncio.Lock` that serialises its own calls and
its cursors' calls, so ``gather()`` on one transaction is safe.  Iterators are
consumed in the executor and returned as lists.  Leaving ``async with`` on a
transaction commits, or aborts on an exception.  Do not mix synchronous and
asynchronous use of one environment.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Generator, Generic, TypeVar

__all__ = ["wrap", "AsyncEnvironment", "AsyncTransaction", "AsyncCursor"]

_T = TypeVar("_T")


async def _run(executor: Executor | None, fn: Callable[..., _T], *args: Any, **kw: Any) -> _T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(executor, functools.partial(fn, *args, **kw))


class _AsyncContextWrapper(Generic[_T]):
    """An awaitable that is also an async context manager over its result."""

    def __init__(self, coro: Awaitable[_T]) -> None:
        self._coro = coro
        self._obj: Any = None

    def __await__(self) -> Generator[Any, Any, _T]:
        return self._coro.__await__()

    async def __aenter__(self) -> _T:
        self._obj = await self._coro
        return await self._obj.__aenter__()

    async def __aexit__(self, et: Any, ev: Any, tb: Any) -> None:
        await self._obj.__aexit__(et, ev, tb)


def wrap(env: Any, executor: Executor | None = None) -> AsyncEnvironment:
    """Wrap an Environment for asyncio; ``executor`` defaults to the loop's."""
    return AsyncEnvironment(env, executor)


class AsyncEnvironment:
    """Asynchronous view of an Environment (see :func:`wrap`)."""

    def __init__(self, env: Any, executor: Executor | None = None) -> None:
        self.env = env
        self.executor = executor

    async def __aenter__(self) -> AsyncEnvironment:
        """Return self."""
        return self

    async def __aexit__(self, *exc: Any) -> None:
        """Close the environment."""
        await self.close()

    def begin(
        self, db: Any = None, parent: Any = None, write: bool = False, buffers: bool = False
    ) -> _AsyncContextWrapper[AsyncTransaction]:
        """Start a transaction; await it or use ``async with``."""
        return _AsyncContextWrapper(self._begin(db, parent, write, buffers))

    async def _begin(self, db: Any, parent: Any, write: bool, buffers: bool) -> AsyncTransaction:
        if write:
            if parent is not None:
                executor: Executor | None = parent._executor
                own = None
            else:
                own = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mdb-aio-write")
                executor = own
        else:
            executor, own = self.executor, None
        ptxn = parent.txn if parent is not None else None
        try:
            txn = await _run(executor, self.env.begin, db=db, parent=ptxn, write=write,
                             buffers=buffers)
        except BaseException:
            if own is not None:
                own.shutdown(wait=False)
            raise
        return AsyncTransaction(self, txn, executor, own)

    # cheap accessors
    def path(self) -> str:
        """The environment's path."""
        return self.env.path()

    def max_key_size(self) -> int:
        """Largest key size."""
        return self.env.max_key_size()

    def max_readers(self) -> int:
        """Size of the reader table."""
        return self.env.max_readers()

    def flags(self) -> dict[str, bool]:
        """The open flags."""
        return self.env.flags()

    def lib_version(self) -> tuple[int, ...]:
        """Engine version tuple."""
        from . import version

        return version()

    # executor calls
    async def stat(self) -> dict[str, int]:
        """Environment.stat() in the executor."""
        return await _run(self.executor, self.env.stat)

    async def info(self) -> dict[str, int]:
        """Environment.info() in the executor."""
        return await _run(self.executor, self.env.info)

    async def close(self) -> None:
        """Environment.close() in the executor."""
        await _run(self.executor, self.env.close)

    async def copy(self, path: str, compact: bool = False, txn: Any = None) -> None:
        """Environment.copy() in the executor."""
        await _run(self.executor, self.env.copy, path, compact=compact, txn=txn)

    async def copyfd(self, fd: int, compact: bool = False, txn: Any = None) -> None:
        """Environment.copyfd() in the executor."""
        await _run(self.executor, self.env.copyfd, fd, compact=compact, txn=txn)

    async def sync(self, force: bool = False) -> None:
        """Environment.sync() in the executor."""
        await _run(self.executor, self.env.sync, force)

    async def readers(self) -> str:
        """Environment.readers() in the executor."""
        return await _run(self.executor, self.env.readers)

    async def reader_check(self) -> int:
        """Environment.reader_check() in the executor."""
        return await _run(self.executor, self.env.reader_check)

    async def set_mapsize(self, map_size: int) -> None:
        """Environment.set_mapsize() in the executor."""
        await _run(self.executor, self.env.set_mapsize, map_size)

    async def open_db(self, key: bytes | None = None, txn: Any = None, **kw: Any) -> Any:
        """Environment.open_db() in the executor (in txn's thread if txn given)."""
        if txn is not None:
            async with txn._lock:
                return await _run(txn._executor, self.env.open_db, key, txn=txn.txn, **kw)
        return await _run(self.executor, self.env.open_db, key, **kw)

    async def dbs(self, txn: Any = None) -> list[bytes]:
        """Environment.dbs() in the executor."""
        if txn is not None:
            async with txn._lock:
                return await _run(txn._executor, self.env.dbs, txn.txn)
        return await _run(self.executor, self.env.dbs)


class AsyncTransaction:
    """Asynchronous view of a Transaction."""

    def __init__(self, aenv: AsyncEnvironment, txn: Any, executor: Executor | None,
                 own: ThreadPoolExecutor | None = None) -> None:
        self.env = aenv
        self.txn = txn
        self._executor = executor
        self._own = own
        self._lock = asyncio.Lock()

    async def _call(self, fn: Callable[..., _T], *args: Any, **kw: Any) -> _T:
        async with self._lock:
            return await _run(self._executor, fn, *args, **kw)

    def _finish(self) -> None:
        if self._own is not None:
            self._own.shutdown(wait=False)
            self._own = None

    async def __aenter__(self) -> AsyncTransaction:
        """Return self."""
        return self

    async def __aexit__(self, et: Any, ev: Any, tb: Any) -> None:
        """Commit on normal exit, abort on exception."""
        try:
            await self._call(self.txn.__exit__, et, ev, tb)
        finally:
            self._finish()

    def cursor(self, db: Any = None) -> _AsyncContextWrapper[AsyncCursor]:
        """Open a cursor; await it or use ``async with``."""
        return _AsyncContextWrapper(self._cursor(db))

    async def _cursor(self, db: Any) -> AsyncCursor:
        cur = await self._call(self.txn.cursor, db)
        return AsyncCursor(self, cur)

    def id(self) -> int:
        """The transaction id."""
        return self.txn.id()

    async def stat(self, db: Any = None) -> dict[str, int]:
        """Transaction.stat() in the executor."""
        return await self._call(self.txn.stat, db)

    async def drop(self, db: Any, delete: bool = True) -> None:
        """Transaction.drop() in the executor."""
        await self._call(self.txn.drop, db, delete)

    async def commit(self) -> None:
        """Commit in the executor."""
        try:
            await self._call(self.txn.commit)
        finally:
            self._finish()

    async def abort(self) -> None:
        """Abort in the executor."""
        try:
            await self._call(self.txn.abort)
        finally:
            self._finish()

    async def get(self, key: Any, default: Any = None, db: Any = None) -> Any:
        """Transaction.get() in the executor."""
        return await self._call(self.txn.get, key, default, db)

    async def put(self, key: Any, value: Any, dupdata: bool = True, overwrite: bool = True,
                  append: bool = False, db: Any = None) -> bool:
        """Transaction.put() in the executor."""
        return await self._call(self.txn.put, key, value, dupdata=dupdata,
                                overwrite=overwrite, append=append, db=db)

    async def replace(self, key: Any, value: Any, db: Any = None) -> Any:
        """Transaction.replace() in the executor."""
        return await self._call(self.txn.replace, key, value, db)

    async def pop(self, key: Any, db: Any = None) -> Any:
        """Transaction.pop() in the executor."""
        return await self._call(self.txn.pop, key, db)

    async def delete(self, key: Any, value: Any = b"", db: Any = None) -> bool:
        """Transaction.delete() in the executor."""
        return await self._call(self.txn.delete, key, value, db)


def _cursor_call(name: str) -> Callable[..., Awaitable[Any]]:
    async def method(self: AsyncCursor, *args: Any, **kw: Any) -> Any:
        return await self.txn._call(getattr(self.cursor, name), *args, **kw)

    method.__name__ = name
    method.__doc__ = f"Cursor.{name}() in the transaction's executor."
    return method


def _cursor_iter(name: str) -> Callable[..., Awaitable[list[Any]]]:
    async def method(self: AsyncCursor, *args: Any, **kw: Any) -> list[Any]:
        def consume() -> list[Any]:
            return list(getattr(self.cursor, name)(*args, **kw))

        return await self.txn._call(consume)

    method.__name__ = name
    method.__doc__ = f"Cursor.{name}() consumed in the executor; returns a list."
    return method


class AsyncCursor:
    """Asynchronous view of a Cursor."""

    def __init__(self, txn: AsyncTransaction, cursor: Any) -> None:
        self.txn = txn
        self.cursor = cursor

    async def __aenter__(self) -> AsyncCursor:
        """Return self."""
        return self

    async def __aexit__(self, *exc: Any) -> None:
        """Close the cursor."""
        await self.close()

    def key(self) -> Any:
        """Key of the current record."""
        return self.cursor.key()

    def value(self) -> Any:
        """Value of the current record."""
        return self.cursor.value()

    def item(self) -> tuple[Any, Any]:
        """The current record."""
        return self.cursor.item()

    close = _cursor_call("close")
    first = _cursor_call("first")
    first_dup = _cursor_call("first_dup")
    last = _cursor_call("last")
    last_dup = _cursor_call("last_dup")
    next = _cursor_call("next")
    next_dup = _cursor_call("next_dup")
    next_nodup = _cursor_call("next_nodup")
    prev = _cursor_call("prev")
    prev_dup = _cursor_call("prev_dup")
    prev_nodup = _cursor_call("prev_nodup")
    set_key = _cursor_call("set_key")
    set_key_dup = _cursor_call("set_key_dup")
    set_range = _cursor_call("set_range")
    set_range_dup = _cursor_call("set_range_dup")
    get = _cursor_call("get")
    getmulti = _cursor_call("getmulti")
    put = _cursor_call("put")
    putmulti = _cursor_call("putmulti")
    replace = _cursor_call("replace")
    pop = _cursor_call("pop")
    delete = _cursor_call("delete")
    count = _cursor_call("count")
    iternext = _cursor_iter("iternext")
    iternext_dup = _cursor_iter("iternext_dup")
    iternext_nodup = _cursor_iter("iternext_nodup")
    iterprev = _cursor_iter("iterprev")
    iterprev_dup = _cursor_iter("iterprev_dup")
    iterprev_nodup = _cursor_iter("iterprev_nodup")
