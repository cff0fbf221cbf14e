"""The one list of places where mdb's Python API answers differently from
py-lmdb 3.0 (its bundled LMDB 0.9.36) on purpose, or for a reason owned
elsewhere.  docs/python.md ("Differences from py-lmdb") describes the same
entries; tests/python/test_vs_pylmdb_api.py reads this list:

* the differential fuzzer does not generate the calls an entry covers
  (``covers(op)`` is true), so a known difference never hides a new one;
* ``test_difference_is_real`` runs each entry's ``demo`` on py-lmdb and on mdb
  (both backends) and checks the answers differ as described: an entry whose
  difference went away fails, and must be removed from this list.

Each entry: ``id``, ``kind`` ("intended": mdb is better on purpose;
"engine": an engine difference owned by the C core's issue), ``text``,
``covers(op)`` (op is the fuzzer's tuple: name first), and ``demo(mod, path)``
returning a value to compare (exceptions are compared by class name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Difference:
    id: str
    kind: str
    text: str
    covers: Callable[[tuple], bool]
    demo: Callable[[Any, str], Any]


def _in_child(code: str, mod_name: str, path: str) -> Any:
    """Run `code` (with ``mod`` bound to the module) in a fresh interpreter: the calls here
    crash or hang py-lmdb.  Returns the printed result, or the signal that ended it."""
    import subprocess
    import sys

    prelude = (
        "import sys\n"
        + (
            "import lmdb as mod\n"
            if mod_name == "lmdb"
            else f"import mdb\nmod = mdb.get_backend({mod_name!r})\n"
        )
        + f"path = {path!r}\n"
    )
    try:
        r = subprocess.run(
            [sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=20
        )
    except subprocess.TimeoutExpired:
        return "hung"
    if r.returncode < 0:
        return f"killed by signal {-r.returncode}"
    return r.stdout.strip()


def _mod_name(mod: Any) -> str:
    return getattr(mod, "backend", "lmdb")


_TRY = (
    "try:\n"
    "    {call}\n"
    "    print('returned')\n"
    "except Exception as exc:\n"
    "    print(type(exc).__name__)\n"
)


def _open_db_ended_txn(mod: Any, path: str) -> Any:
    code = (
        "env = mod.open(path, max_dbs=4)\n"
        "txn = env.begin(write=True)\n"
        "txn.abort()\n" + _TRY.format(call="env.open_db(b'x', txn=txn, create=True)")
    )
    return _in_child(code, _mod_name(mod), path)


def _none_as_buffer(mod: Any, path: str) -> Any:
    env = mod.open(path)
    try:
        out = []
        with env.begin(write=True) as txn:
            for call in (lambda: txn.put(b"k", None), lambda: txn.cursor().put(b"j", None)):
                try:
                    out.append(repr(call()))
                except Exception as exc:
                    out.append(type(exc).__name__)
        return out
    finally:
        env.close()


def _open_db_while_writing(mod: Any, path: str) -> Any:
    code = "env = mod.open(path, max_dbs=4)\ntxn = env.begin(write=True)\n" + _TRY.format(
        call="env.open_db(b'x', create=True)"
    )
    return _in_child(code, _mod_name(mod), path)


def _first_dup_after_exhausted(mod: Any, path: str) -> Any:
    env = mod.open(path, max_dbs=2)
    try:
        db = env.open_db(b"d", dupsort=True)
        with env.begin(write=True, db=db) as txn:
            for k in (b"a", b"b"):
                for v in (b"1", b"2"):
                    txn.put(k, v)
        with env.begin(db=db) as txn:
            c = txn.cursor()
            c.set_key(b"a")
            ran = list(c.iternext_dup())
            return ran, c.first_dup(), c.item()
    finally:
        env.close()


DIFFERENCES: list[Difference] = [
    Difference(
        id="open-db-while-writing",
        kind="intended",
        text=(
            "Environment.open_db(name) without txn= while this thread has a write "
            "transaction open: py-lmdb 3.0 begins its own write transaction and waits for "
            "ever on the writer lock it holds itself; mdb raises mdb.Error at once, saying "
            "to pass the open transaction as txn=."
        ),
        covers=lambda op: False,  # stateful: test_vs_pylmdb_api.skipped()
        demo=_open_db_while_writing,
    ),
    Difference(
        id="none-as-buffer",
        kind="intended",
        text=(
            "None where a key or value is wanted: py-lmdb's argument parser takes None as "
            "'not given' and so stores an empty value (put(b'k', None) returns True); mdb "
            "raises TypeError, as for any other non-buffer argument, instead of silently "
            "storing b''."
        ),
        covers=lambda op: False,  # the fuzzer's odd arguments leave None out
        demo=_none_as_buffer,
    ),
    Difference(
        id="open-db-ended-txn",
        kind="intended",
        text=(
            "Environment.open_db(name, txn=T) with T already ended: py-lmdb 3.0 crashes "
            "the interpreter (segmentation fault); mdb raises mdb.Error, as every other "
            "call on an ended transaction does."
        ),
        covers=lambda op: False,  # stateful: test_vs_pylmdb_api.skipped()
        demo=_open_db_ended_txn,
    ),
    Difference(
        id="first-dup-after-exhausted-dups",
        kind="intended",
        text=(
            "Cursor.first_dup() after a duplicate move ran out (iternext_dup ended, or "
            "next_dup returned False) on a DUPSORT database: both return True and stand on "
            "the key's first value, but py-lmdb's item() then gives an empty key (it keeps "
            "the key it cleared at the failed move; MDB_FIRST_DUP does not return one), "
            "where mdb gives the key the cursor stands on."
        ),
        covers=lambda op: False,  # needs a failed duplicate move first, on the same cursor
        demo=_first_dup_after_exhausted,
    ),
]
