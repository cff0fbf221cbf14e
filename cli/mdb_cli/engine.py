"""The one place where mdb-cli meets the storage engine.

Owns: choosing the engine module, the list of engine features the CLI relies on,
and the small helpers that paper over differences between our ``mdb`` package and
py-lmdb (used only for bring-up and testing).

Rules:
- Every other module of the CLI gets the engine through :func:`get`; nothing else
  imports ``mdb`` or ``lmdb``.
- The engine is ``mdb``. ``MDB_CLI_ENGINE=lmdb`` selects py-lmdb explicitly and
  ``MDB_CLI_ENGINE=auto`` tries ``mdb`` first and then py-lmdb. Without the variable
  (or with ``MDB_CLI_ENGINE=mdb``) a missing ``mdb`` is an error with a one-line
  message, never a silent fallback.
- The import happens on first use, so ``mdb-cli --help`` works without an engine.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any, Optional

ENV_VAR = "MDB_CLI_ENGINE"

_engine: Optional[ModuleType] = None
_name: str = ""


class EngineUnavailable(Exception):
    """The engine module cannot be imported; the message is one line for the user."""


def get() -> ModuleType:
    """Return the engine module (``mdb``, or py-lmdb when asked for)."""
    global _engine, _name
    if _engine is not None:
        return _engine
    choice = os.environ.get(ENV_VAR, "mdb").strip().lower() or "mdb"
    if choice not in ("mdb", "lmdb", "auto"):
        raise EngineUnavailable(f"{ENV_VAR}={choice!r} is not understood; use mdb, lmdb or auto")
    if choice in ("mdb", "auto"):
        try:
            mdb = importlib.import_module("mdb")
            _engine, _name = mdb, "mdb"
            return mdb
        except ImportError as exc:
            if choice == "mdb":
                raise EngineUnavailable(
                    f"the mdb package cannot be imported ({exc}); install it with "
                    f"'pip install .' from the mdb source tree, or set {ENV_VAR}=lmdb "
                    "to run on py-lmdb for testing"
                ) from exc
    try:
        lmdb = importlib.import_module("lmdb")
    except ImportError as exc:
        raise EngineUnavailable(
            f"{ENV_VAR}={choice} asks for py-lmdb, but it cannot be imported ({exc}); "
            "pip install lmdb"
        ) from exc
    _engine, _name = lmdb, "lmdb"
    return lmdb


def name() -> str:
    """``"mdb"`` or ``"lmdb"``: which engine :func:`get` chose."""
    get()
    return _name


def version_text() -> str:
    """A short description of the engine for ``--version``."""
    try:
        eng = get()
    except EngineUnavailable as exc:
        return f"engine: unavailable ({exc})"
    ver = getattr(eng, "__version__", None)
    try:
        lib = ".".join(str(p) for p in eng.version())
    except Exception:  # an engine without version() still gets reported
        lib = "?"
    label = _name if ver is None else f"{_name} {ver}"
    return f"engine: {label} (LMDB API {lib})"


def error_base() -> type[BaseException]:
    """The engine's base exception class (``mdb.Error`` / ``lmdb.Error``)."""
    return get().Error  # type: ignore[no-any-return]


# --- features only our engine has ---------------------------------------------------


def has_check(env: Any) -> bool:
    """True when the environment offers a working structural checker ``env.check()``.

    The mdb package always has the method, but it works only in builds on the mdb
    core; ``mdb.backend_features["check"]`` says which (a build over the system
    liblmdb reports False).
    """
    if not callable(getattr(env, "check", None)):
        return False
    features = getattr(get(), "backend_features", None)
    if isinstance(features, dict) and "check" in features:
        return bool(features["check"])
    return True


def has_growing_map() -> bool:
    """True when ``open(..., max_map_size=N)`` works: the mdb engine on its own core."""
    if name() != "mdb":
        return False
    features = getattr(get(), "backend_features", None)
    return isinstance(features, dict) and bool(features.get("check"))


def has_freelist(env: Any) -> bool:
    """True when the environment can report its free list (``env.freelist()``)."""
    return callable(getattr(env, "freelist", None))


def db_flags(db: Any, txn: Any) -> dict[str, bool]:
    """The persistent flags of a database, with every key present.

    py-lmdb reports reverse_key, dupsort, integerkey, integerdup, dupfixed; ``mdb``
    adds reverse_dup. A flag an engine does not report reads as False.
    """
    raw = dict(db.flags(txn))
    out = {k: bool(raw.get(k, False)) for k in FLAG_NAMES}
    return out


#: Database flag names as the engine API spells them, in LMDB bit order
#: (REVERSEKEY 0x02, DUPSORT 0x04, INTEGERKEY 0x08, DUPFIXED 0x10, INTEGERDUP 0x20,
#: REVERSEDUP 0x40).
FLAG_NAMES = ("reverse_key", "dupsort", "integerkey", "dupfixed", "integerdup", "reverse_dup")
