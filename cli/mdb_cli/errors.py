"""Errors: the CLI's exception type and the table from engine errors to messages.

Owns: :class:`CliError` (the only exception that ends a command on purpose), the
exit codes, and :func:`describe`, which turns an engine exception (``mdb.Error`` or
one of its subclasses) into one line that says what went wrong and what to do.

Exit codes (documented in ``mdb-cli --help`` and docs/cli.md):
  0  success
  1  an error in the data or the file: bad input, a damaged or missing database,
     the map is full, the environment is locked, ...
  2  usage: an unknown option, a missing argument, options that do not go together

Engine exceptions are matched by class name (``mdb``'s classes, py-lmdb's names), so the
table needs no import of the engine.
"""

from __future__ import annotations

from typing import IO, Any, Optional

import click

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

PROG = "mdb-cli"


class CliError(click.ClickException):
    """An expected failure: one line on stderr, then exit with ``exit_code``."""

    def __init__(self, message: str, code: int = EXIT_ERROR, detail: Optional[str] = None):
        super().__init__(message)
        self.exit_code = code
        self.detail = detail

    def show(self, file: Optional[IO[Any]] = None) -> None:
        click.echo(f"{PROG}: error: {self.format_message()}", file=file, err=True)


# class name -> advice: the advice column of src/mdbcore/errors.def, which
# tests/python/test_error_table.py checks this table against. describe() keeps the
# engine's own text (e.g. "MDB_MAP_FULL: Environment mapsize limit reached") after it.
_ADVICE: dict[str, str] = {
    "MapFullError": "the map is full; reopen with a larger map size (e.g. --map-size)",
    "MapResizedError": "another process grew the map; run the command again",
    "LockError": (
        "the environment is locked by another process; wait for it to finish "
        "(see 'mdb-cli readers ENV')"
    ),
    "ReadonlyError": "the environment is read-only or you lack write permission on it",
    "InvalidError": "the file is not an LMDB database",
    "VersionMismatchError": (
        "the environment was written by an incompatible LMDB version; "
        "dump it with that version's tools and load it here"
    ),
    "CorruptedError": "the database file is damaged; run 'mdb-cli check ENV' and restore a copy",
    "PageNotFoundError": "the database file is damaged; run 'mdb-cli check ENV' and restore a copy",
    "PanicError": "the environment had a fatal error; close every user of it and reopen",
    "ReadersFullError": (
        "the reader table is full; clear dead readers with 'mdb-cli readers --clear-stale ENV'"
    ),
    "DbsFullError": "too many named databases are open",
    "TxnFullError": "the transaction is too large; use a smaller --batch-size",
    "BadValsizeError": "a key is empty or longer than the engine's limit (511 bytes)",
    "IncompatibleError": "the database's flags do not match, or the name is not a database",
    "DiskError": "no space left on the device",
    "MemoryError": "out of memory",
    "NotFoundError": "no such key or database",
    "KeyExistsError": "the key already exists",
    "BadRslotError": "the reader slot is invalid (was the environment used after fork?)",
    "BadTxnError": "the transaction is no longer usable",
    "BadDbiError": "the database handle is no longer valid",
    "InvalidParameterError": "the engine rejected a parameter",
}


def describe(exc: BaseException, where: str = "") -> str:
    """One line for an engine exception: advice first, the engine's words after."""
    name = type(exc).__name__
    advice = _ADVICE.get(name)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else name
    prefix = f"{where}: " if where else ""
    if advice is None:
        return f"{prefix}{text}"
    return f"{prefix}{advice} ({text})"
