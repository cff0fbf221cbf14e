"""mdb: an LMDB 0.9 compatible key-value store, with py-lmdb's Python API.

``import mdb as lmdb`` works for code written against py-lmdb.  The package
picks one of two backends with the same behaviour:

* ``cext``: the CPython C-API extension ``mdb._cext`` (fast, the default);
* ``cffi``: ``mdb._cffi``, the same API through cffi (PyPy, debugging).

``MDB_BACKEND=auto|cext|cffi`` chooses; ``auto`` (the default) uses ``cext``
and falls back to ``cffi`` when the extension cannot be loaded.  The chosen
backend is in :data:`backend`, and the intended differences between the two
are listed in :data:`backend_features`.
"""

from __future__ import annotations

import os as _os
import types as _types
from typing import Any

from . import _common
from . import errors as _errors
from .errors import (
    BadDbiError,
    BadRslotError,
    BadTxnError,
    BadValsizeError,
    CorruptedError,
    CursorFullError,
    DbsFullError,
    DiskError,
    Error,
    IncompatibleError,
    InvalidError,
    InvalidParameterError,
    KeyExistsError,
    LockError,
    MapFullError,
    MapResizedError,
    MemoryError,
    NotFoundError,
    PageFullError,
    PageNotFoundError,
    PanicError,
    ReadersFullError,
    ReadonlyError,
    TlsFullError,
    TxnFullError,
    VersionMismatchError,
)

__version__ = "0.1.0"

__all__ = [
    "BadDbiError",
    "BadRslotError",
    "BadTxnError",
    "BadValsizeError",
    "CorruptedError",
    "Cursor",
    "CursorFullError",
    "DbsFullError",
    "DiskError",
    "Environment",
    "Error",
    "IncompatibleError",
    "InvalidError",
    "InvalidParameterError",
    "KeyExistsError",
    "LockError",
    "MapFullError",
    "MapResizedError",
    "MemoryError",
    "NotFoundError",
    "PageFullError",
    "PageNotFoundError",
    "PanicError",
    "ReadersFullError",
    "ReadonlyError",
    "TlsFullError",
    "Transaction",
    "TxnFullError",
    "VersionMismatchError",
    "_Database",
    "enable_drop_gil",
    "version",
]

BACKENDS = ("cext", "cffi")


def _import_backend(name: str) -> Any:
    if name == "cext":
        from . import _cext

        return _cext
    if name == "cffi":
        from . import _cffi

        return _cffi
    raise ValueError(f"unknown mdb backend {name!r}; expected one of {BACKENDS}")


def _choose() -> tuple[str, Any]:
    choice = _os.environ.get("MDB_BACKEND", "auto").strip().lower() or "auto"
    if choice == "auto":
        try:
            return "cext", _import_backend("cext")
        except ImportError:
            return "cffi", _import_backend("cffi")
    return choice, _import_backend(choice)


backend, _impl = _choose()
"""Name of the backend in use: ``"cext"`` or ``"cffi"``."""

try:
    from . import _build_config as _cfg

    _ENGINE = _cfg.ENGINE
except ImportError:  # running from a source tree without a build
    _ENGINE = "unknown"

Environment = _impl.Environment
Transaction = _impl.Transaction
Cursor = _impl.Cursor
_Database = _impl._Database
open = Environment  # noqa: A001 -- py-lmdb's name


def _features(name: str) -> dict[str, Any]:
    """The feature table of backend ``name`` (see :data:`backend_features`)."""
    impl = _impl if name == backend else _import_backend(name)
    return {
        "backend": name,
        "engine": _ENGINE,
        # Environment.check() needs mdbcore_check_env from our core.
        "check": bool(getattr(impl, "HAVE_CHECK", 0)),
        # What buffers=True returns: memoryview (cext) or a memoryview over a
        # cffi buffer (cffi); both keep the map alive while referenced.
        "buffers_type": "memoryview",
        # The C types carry module-less names as py-lmdb's C extension does
        # (Environment.__module__ == "builtins"); the cffi classes live in mdb._cffi.
        "builtin_type_names": name == "cext",
        # Single-record calls keep the GIL (cheaper than releasing it): in cffi
        # through _cffi/keep_gil.h, which relies on how cffi writes its wrappers.
        "gil_released_per_record": name == "cffi" and not impl.lib.mdbpy_keeps_gil(),
    }


backend_features: dict[str, Any] = _features(backend)
"""Intended differences between backends; the test suite checks every entry."""


def get_backend(name: str) -> _types.SimpleNamespace:
    """Return a namespace with the API of backend ``name`` (``"cext"`` or ``"cffi"``).

    The namespace has Environment, Transaction, Cursor, _Database, open,
    version, backend and backend_features; the exception classes are shared and
    live on the :mod:`mdb` package.  Mostly useful for tests and comparisons.
    """
    impl = _import_backend(name)
    return _types.SimpleNamespace(
        Environment=impl.Environment,
        Transaction=impl.Transaction,
        Cursor=impl.Cursor,
        _Database=impl._Database,
        open=impl.Environment,
        version=version,
        backend=name,
        backend_features=_features(name),
        errors=_errors,
    )


def version(subpatch: bool = False, lib_version: Any = None) -> tuple[int, ...]:
    """Return ``(major, minor, patch)`` of the LMDB API the engine implements.

    With ``subpatch=True`` a fourth element is appended: always 0 (mdb carries
    no py-lmdb patch series).  ``lib_version`` exists for py-lmdb compatibility;
    only ``None`` and ``0`` (the 0.9 format) are accepted.
    """
    _common.check_lib_version(lib_version)  # as Environment(lib_version=) checks it
    return tuple(_impl.version(subpatch=bool(subpatch)))


def enable_drop_gil() -> None:
    """Deprecated no-op kept for py-lmdb compatibility (the GIL is always released)."""


def __getattr__(name: str) -> Any:
    # Lazily import the asyncio wrappers (import mdb.aio also works).
    if name == "aio":
        import importlib

        return importlib.import_module(".aio", __name__)
    raise AttributeError(f"module 'mdb' has no attribute {name!r}")
