"""_Database of the cffi backend: a named database's handle (as mdb._cext's db.c)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._common import db_flags_dict

if TYPE_CHECKING:
    from .environment import Environment


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
        return db_flags_dict(self._flags)
