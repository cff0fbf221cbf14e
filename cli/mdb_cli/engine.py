"""The one place where mdb-cli meets the storage engine, the ``mdb`` package.

Owns: importing ``mdb``, the one feature question the CLI asks of it (does it run on the
mdb core, or on a build over the system liblmdb), and the database-flag helper.

Rules:
- Every other module of the CLI gets the engine through :func:`get`; nothing else
  imports ``mdb``.
- A missing ``mdb`` is an error with a one-line message, never a fallback.
- The import happens on first use, so ``mdb-cli --help`` works without an engine.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Optional

_engine: Optional[ModuleType] = None


class EngineUnavailable(Exception):
    """The engine module cannot be imported; the message is one line for the user."""


def get() -> ModuleType:
    """Return the engine module, ``mdb``."""
    global _engine
    if _engine is not None:
        return _engine
    try:
        _engine = importlib.import_module("mdb")
    except ImportError as exc:
        raise EngineUnavailable(
            f"the mdb package cannot be imported ({exc}); install it with "
            "'pip install .' from the mdb source tree"
        ) from exc
    return _engine


def version_text() -> str:
    """A short description of the engine for ``--version``."""
    try:
        eng = get()
    except EngineUnavailable as exc:
        return f"engine: unavailable ({exc})"
    lib = ".".join(str(p) for p in eng.version())
    return f"engine: mdb {eng.__version__} (LMDB API {lib})"


def error_base() -> type[BaseException]:
    """The engine's base exception class, ``mdb.Error``."""
    return get().Error  # type: ignore[no-any-return]


def on_core() -> bool:
    """True when ``mdb`` runs on the mdb core, so that its extras work: a map that grows
    by itself (``open(..., max_map_size=N)``) and ``Transaction.load_sorted``. A build
    of ``mdb`` over the system liblmdb reports False (``backend_features["check"]``);
    there ``check``, ``stat -f`` and ``readers`` say they need the mdb core."""
    return bool(get().backend_features["check"])


def db_flags(db: Any, txn: Any) -> dict[str, bool]:
    """The persistent flags of a database, with every key of :data:`FLAG_NAMES` present."""
    raw = dict(db.flags(txn))
    return {k: bool(raw.get(k, False)) for k in FLAG_NAMES}


#: Database flag names as the engine API spells them, in LMDB bit order
#: (REVERSEKEY 0x02, DUPSORT 0x04, INTEGERKEY 0x08, DUPFIXED 0x10, INTEGERDUP 0x20,
#: REVERSEDUP 0x40).
FLAG_NAMES = ("reverse_key", "dupsort", "integerkey", "dupfixed", "integerdup", "reverse_dup")
