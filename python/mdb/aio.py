"""asyncio wrappers over mdb, with the shape of py-lmdb's ``lmdb.aio``.

``wrap(env)`` returns an :class:`AsyncEnvironment`.  Every engine call runs in
an executor so the event loop never blocks; cheap accessors (``key()``,
``value()``, ``item()``, ``id()``, ``path()``, ``max_key_size()``,
``max_readers()``, ``flags()``, ``lib_version()``) run directly.

* A write transaction gets a private single-thread executor, because the
  engine binds a write transaction (and its writer lock) to the thread that
  began it; begin, every operation and commit/abort run on that thread, and the
  executor is shut down when the transaction ends.  A nested write transaction
  and every cursor use their transaction's executor.
* Each transaction holds an :class:`asyncio.Lock` that serialises its own calls
  and its cursors' calls, so ``gather()`` on one transaction is safe.
* Iterators (``iternext()`` and friends) are consumed in the executor and
  returned as lists.
* ``async with`` on a transaction commits on a clean exit and aborts on an
  exception; after an explicit ``commit()``/``abort()`` the exit does nothing.

The proxies are generated from the synchronous classes, so every public method
of :class:`mdb.Environment`, :class:`mdb.Transaction` and :class:`mdb.Cursor`
exists on the wrapper, with the same name, ``__doc__`` and ``__wrapped__``.
Non-callable attributes are reached through ``__getattr__``.  Do not mix
synchronous and asynchronous use of one environment.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Awaitable, Callable, Generator, Generic, TypeVar

from . import Cursor, Environment, Transaction

__all__ = ["wrap", "AsyncEnvironment", "AsyncTransaction", "AsyncCursor"]

_T = TypeVar("_T")

_ITERATORS = frozenset(
    {"iternext", "iternext_dup", "iternext_nodup", "iterprev", "iterprev_dup", "iterprev_nodup"}
)


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


async def _in_executor(executor: Executor | None, fn: Callable[[], _T]) -> _T:
    return await asyncio.get_running_loop().run_in_executor(executor, fn)


def _async_proxy(cls: type, name: str, target: str) -> Callable[..., Awaitable[Any]]:
    meth = getattr(cls, name)
    consume = name in _ITERATORS

    @functools.wraps(meth)
    async def proxy(self: Any, *args: Any, **kw: Any) -> Any:
        obj = getattr(self, target)
        if consume:

            def call() -> Any:
                return list(getattr(obj, name)(*args, **kw))
        else:

            def call() -> Any:
                return getattr(obj, name)(*args, **kw)

        return await self._run(call)

    return proxy


def _sync_proxy(cls: type, name: str, target: str) -> Callable[..., Any]:
    meth = getattr(cls, name)

    @functools.wraps(meth)
    def proxy(self: Any, *args: Any, **kw: Any) -> Any:
        return getattr(getattr(self, target), name)(*args, **kw)

    return proxy


def _public(cls: type) -> list[str]:
    return sorted(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n)))


def _install(
    wrapper: type, cls: type, target: str, sync: frozenset[str], special: frozenset[str]
) -> None:
    for name in _public(cls):
        if name in special or name in vars(wrapper):
            continue
        proxy = _sync_proxy(cls, name, target) if name in sync else _async_proxy(cls, name, target)
        setattr(wrapper, name, proxy)


class AsyncEnvironment:
    """Asynchronous view of an Environment (see :func:`wrap`)."""

    def __init__(self, env: Any, executor: Executor | None = None) -> None:
        self._env = env
        self._executor = executor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    async def _run(self, call: Callable[[], _T]) -> _T:
        return await _in_executor(self._executor, call)

    async def __aenter__(self) -> AsyncEnvironment:
        """Return self."""
        return self

    async def __aexit__(self, *exc: Any) -> None:
        """Close the environment."""
        await self._run(self._env.close)

    def begin(
        self, db: Any = None, parent: Any = None, write: bool = False, buffers: bool = False
    ) -> _AsyncContextWrapper[AsyncTransaction]:
        """Start a transaction; await it or use ``async with`` (commits on clean exit)."""
        return _AsyncContextWrapper(self._begin(db, parent, write, buffers))

    async def _begin(self, db: Any, parent: Any, write: bool, buffers: bool) -> AsyncTransaction:
        own: ThreadPoolExecutor | None = None
        if parent is not None:
            executor = parent._executor
        elif write:
            own = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mdb-aio-write")
            executor = own
        else:
            executor = self._executor
        ptxn = parent._txn if parent is not None else None

        def call() -> Any:
            return self._env.begin(db=db, parent=ptxn, write=write, buffers=buffers)

        try:
            if parent is not None:
                async with parent._lock:
                    txn = await _in_executor(executor, call)
            else:
                txn = await _in_executor(executor, call)
        except BaseException:
            if own is not None:
                own.shutdown(wait=False)
            raise
        return AsyncTransaction(
            self, txn, executor, own, parent._lock if parent is not None else None
        )

    async def open_db(self, key: bytes | None = None, txn: Any = None, **kw: Any) -> Any:
        """Environment.open_db() in the executor (on txn's thread if txn is given)."""
        if txn is not None:
            return await txn._run(lambda: self._env.open_db(key, txn=txn._txn, **kw))
        return await self._run(lambda: self._env.open_db(key, **kw))

    async def dbs(self, txn: Any = None) -> list[bytes]:
        """Environment.dbs() in the executor (on txn's thread if txn is given)."""
        if txn is not None:
            return await txn._run(lambda: self._env.dbs(txn._txn))
        return await self._run(self._env.dbs)


class AsyncTransaction:
    """Asynchronous view of a Transaction."""

    def __init__(
        self,
        aenv: AsyncEnvironment,
        txn: Any,
        executor: Executor | None,
        own: ThreadPoolExecutor | None = None,
        lock: asyncio.Lock | None = None,
    ) -> None:
        self._aenv = aenv
        self._txn = txn
        self._executor = executor
        self._own = own
        self._owns_executor = own is not None
        self._lock = lock if lock is not None else asyncio.Lock()
        self._done = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._txn, name)

    async def _run(self, call: Callable[[], _T]) -> _T:
        async with self._lock:
            return await _in_executor(self._executor, call)

    def _finish(self) -> None:
        self._done = True
        if self._own is not None:
            self._own.shutdown(wait=False)
            self._own = None
        self._owns_executor = False

    async def __aenter__(self) -> AsyncTransaction:
        """Return self."""
        return self

    async def __aexit__(self, et: Any, ev: Any, tb: Any) -> None:
        """Commit on a clean exit, abort on an exception; no-op after commit()/abort()."""
        if self._done:
            return
        try:
            await self._run(lambda: self._txn.__exit__(et, ev, tb))
        finally:
            self._finish()

    async def commit(self) -> None:
        """Transaction.commit() in the executor; releases a private executor."""
        try:
            await self._run(self._txn.commit)
        finally:
            self._finish()

    async def abort(self) -> None:
        """Transaction.abort() in the executor; releases a private executor."""
        try:
            await self._run(self._txn.abort)
        finally:
            self._finish()

    def cursor(self, db: Any = None) -> _AsyncContextWrapper[AsyncCursor]:
        """Open a cursor; await it or use ``async with``."""
        return _AsyncContextWrapper(self._cursor(db))

    async def _cursor(self, db: Any) -> AsyncCursor:
        cur = await self._run(lambda: self._txn.cursor(db))
        return AsyncCursor(self, cur)


class AsyncCursor:
    """Asynchronous view of a Cursor; runs on its transaction's executor."""

    def __init__(self, txn: AsyncTransaction, cursor: Any) -> None:
        self._atxn = txn
        self._cursor = cursor
        self._executor = txn._executor

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    async def _run(self, call: Callable[[], _T]) -> _T:
        return await self._atxn._run(call)

    async def __aenter__(self) -> AsyncCursor:
        """Return self."""
        return self

    async def __aexit__(self, *exc: Any) -> None:
        """Close the cursor."""
        await self._run(self._cursor.close)


_install(
    AsyncEnvironment,
    Environment,
    "_env",
    frozenset({"path", "lib_version", "max_key_size", "max_readers", "flags"}),
    frozenset({"begin"}),
)
_install(AsyncTransaction, Transaction, "_txn", frozenset({"id"}), frozenset({"cursor"}))
_install(AsyncCursor, Cursor, "_cursor", frozenset({"key", "value", "item"}), frozenset())
