"""The Python API, differentially against py-lmdb 3.0 (issue 12, fuzzer 4).

Hypothesis draws a sequence of calls over every public method of Environment, Transaction
and Cursor -- bad arguments included: wrong types, empty and over-long keys, values up to
overflow sizes, closed environments, ended transactions, dropped databases, cursors of
ended transactions -- and runs the same sequence on py-lmdb (the ``lmdb`` wheel, LMDB
0.9.36) and on mdb, once per backend.  Objects are named by their index in each world's
lists, so one sequence drives all of them alike.  Every call's outcome is normalised
(bytes for buffers, lists for iterators, the class name for an exception) and must be the
same as py-lmdb's.  The places where mdb answers differently on purpose are listed once, in
``pylmdb_differences.py``: the fuzzer does not generate the calls they cover, and
``test_difference_is_real`` shows each of them still differs as described.

Engine layout (page counts, tree depth, last page number, map address) is not an API
result and is not compared; entries, page size, txn ids and map size are.

MDB_API_FUZZ_EXAMPLES sets the number of sequences (default 60; CI uses the default).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest

lmdb = pytest.importorskip("lmdb")
if hasattr(lmdb, "backend_features"):  # the shim, not py-lmdb
    pytest.skip("lmdb resolves to mdb", allow_module_level=True)

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from pylmdb_differences import DIFFERENCES  # noqa: E402

import mdb  # noqa: E402
from conftest import CURSOR_ITERS, CURSOR_STEPS  # noqa: E402

EXAMPLES = int(os.environ.get("MDB_API_FUZZ_EXAMPLES", "60"))

# -- arguments -------------------------------------------------------------------------
KEY = st.one_of(
    st.binary(min_size=0, max_size=4),
    st.sampled_from([b"a" * 511, b"a" * 512, b"z" * 600]),
)
VAL = st.one_of(
    st.binary(min_size=0, max_size=6),
    st.sampled_from([b"v" * 511, b"v" * 512, b"w" * 5000]),
)
# what a caller may pass by mistake where bytes are wanted
# (not None: py-lmdb reads None as "argument not given", mdb refuses it -- the
# "none-as-buffer" entry of pylmdb_differences.py)
ODD = st.sampled_from(["str", 7, 1.5, ["list"], bytearray(b"ba"), memoryview(b"mv")])
ANYKEY = st.one_of(KEY, KEY, KEY, ODD)
ANYVAL = st.one_of(VAL, VAL, VAL, ODD)
IDX = st.integers(0, 7)
FLAG = st.booleans()

DB_NAMES = [None, b"plain", b"dups", b"ints"]
DB_FLAGS = {
    b"plain": {},
    b"dups": {"dupsort": True},
    b"ints": {"integerkey": True},
}

CURSOR_MOVES = ["first", "last", *CURSOR_STEPS, "key", "value", "item", "count", "close"]

OP = st.one_of(
    st.tuples(st.just("begin"), FLAG, st.one_of(st.none(), IDX), st.one_of(st.none(), IDX), FLAG),
    st.tuples(st.just("open_db"), st.integers(1, 3), FLAG, st.one_of(st.none(), IDX)),
    st.tuples(st.just("txn_get"), IDX, ANYKEY, st.one_of(st.none(), IDX)),
    st.tuples(st.just("txn_put"), IDX, ANYKEY, ANYVAL, FLAG, FLAG, FLAG, st.one_of(st.none(), IDX)),
    st.tuples(
        st.just("txn_delete"), IDX, ANYKEY, st.one_of(st.just(b""), VAL), st.one_of(st.none(), IDX)
    ),
    st.tuples(st.just("txn_replace"), IDX, ANYKEY, ANYVAL, st.one_of(st.none(), IDX)),
    st.tuples(st.just("txn_pop"), IDX, ANYKEY, st.one_of(st.none(), IDX)),
    st.tuples(
        st.just("cur_putmulti"), IDX, st.lists(st.tuples(KEY, VAL), max_size=4), FLAG, FLAG, FLAG
    ),
    st.tuples(st.just("txn_stat"), IDX, st.one_of(st.none(), IDX)),
    st.tuples(st.just("txn_drop"), IDX, IDX, FLAG),
    st.tuples(st.just("txn_id"), IDX),
    st.tuples(st.just("txn_end"), IDX, st.sampled_from(["commit", "abort"])),
    st.tuples(st.just("cursor"), IDX, st.one_of(st.none(), IDX)),
    st.tuples(st.just("cur_move"), IDX, st.sampled_from(CURSOR_MOVES)),
    st.tuples(st.just("cur_iter"), IDX, st.sampled_from(CURSOR_ITERS), FLAG, FLAG),
    st.tuples(
        st.just("cur_set"), IDX, st.sampled_from(["set_key", "set_range", "get", "pop"]), ANYKEY
    ),
    st.tuples(
        st.just("cur_set2"),
        IDX,
        st.sampled_from(["set_key_dup", "set_range_dup", "replace"]),
        ANYKEY,
        ANYVAL,
    ),
    st.tuples(st.just("cur_put"), IDX, ANYKEY, ANYVAL, FLAG, FLAG, FLAG),
    st.tuples(st.just("cur_delete"), IDX, FLAG),
    st.tuples(st.just("cur_getmulti"), IDX, st.lists(KEY, max_size=4), FLAG),
    st.tuples(
        st.just("env"),
        st.sampled_from(
            ["stat", "info", "flags", "max_key_size", "max_readers", "reader_check", "sync", "path"]
        ),
    ),
    st.tuples(st.just("env_set_mapsize"), st.sampled_from([0, 1 << 20, 1 << 23, -1])),
    st.tuples(st.just("env_close")),
)


# -- worlds ----------------------------------------------------------------------------
class World:
    """One implementation's objects; ops name them by index."""

    def __init__(self, mod: Any, path: str) -> None:
        self.mod = mod
        self.env = mod.open(path, max_dbs=4, map_size=1 << 22)
        self.dbs: list[Any] = [self.env.open_db(None) if hasattr(self.env, "open_db") else None]
        self.txns: list[Any] = []
        self.writers: list[Any] = []  # top-level write txns
        self.cursors: list[Any] = []

    def pick(self, seq: list[Any], i: int | None) -> Any:
        if i is None or not seq:
            return None
        return seq[i % len(seq)]

    def close(self) -> None:
        try:
            self.env.close()
        except Exception:
            pass


def norm(x: Any, depth: int = 0) -> Any:
    """A call's result in a form the two implementations can be compared in."""
    if isinstance(x, (bytes, bytearray, memoryview)):
        return bytes(x)
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if isinstance(x, (list, tuple)):
        return [norm(v, depth + 1) for v in x]
    if isinstance(x, dict):
        return {k: norm(v, depth + 1) for k, v in x.items()}
    name = type(x).__name__
    if name in ("Transaction", "Cursor", "_Database", "Environment"):
        return name
    if hasattr(x, "__next__") and depth == 0:  # an iterator: its first records
        out = []
        try:
            for _ in range(40):
                out.append(norm(next(x), depth + 1))
        except StopIteration:
            pass
        return out
    return name


STAT_KEYS = ("psize", "entries")
INFO_KEYS = ("map_size", "last_txnid", "max_readers", "num_readers")


def txn_ended(world: World, i: int | None) -> bool:
    t = world.pick(world.txns, i)
    if t is None:
        return False
    try:
        t.id()
        return False
    except Exception:
        return True


def live_writer(world: World) -> bool:
    """A top-level write txn of this world is still open."""
    for t in world.writers:
        try:
            t.id()
            return True
        except Exception:
            continue
    return False


def skipped(ref: World, op: tuple) -> bool:
    """Calls py-lmdb cannot take: it deadlocks or crashes the interpreter there, while mdb
    raises (each is an entry of pylmdb_differences.py with its own test)."""
    if op[0] == "open_db" and op[3] is not None and txn_ended(ref, op[3]):
        return True  # "open-db-ended-txn"
    if op[0] == "open_db" and (op[3] is None or not ref.txns) and live_writer(ref):
        return True  # "open-db-while-writing"
    return False


def run(world: World, op: tuple) -> Any:
    """Apply `op` to `world`; return the normalised outcome (or the exception's class)."""
    w = world
    name = op[0]
    trace = os.environ.get("MDB_API_FUZZ_TRACE")
    if trace:  # a file: the last line names the call that crashed the interpreter
        with open(trace, "a") as f:
            f.write(f"{getattr(w.mod, 'backend', 'py-lmdb')} {op!r:.300}\n")
    try:
        if name == "begin":
            _, write, parent, db, buffers = op
            kw: dict[str, Any] = {"write": write, "buffers": buffers}
            if parent is not None and w.txns:
                kw["parent"] = w.pick(w.txns, parent)
            if db is not None:
                kw["db"] = w.pick(w.dbs, db)
            t = w.env.begin(**kw)
            w.txns.append(t)
            if write and "parent" not in kw:
                w.writers.append(t)
            return "Transaction"
        if name == "open_db":
            _, which, create, txn = op
            nm = DB_NAMES[which]
            kw = dict(DB_FLAGS[nm])
            kw["create"] = create
            if txn is not None and w.txns:
                kw["txn"] = w.pick(w.txns, txn)
            d = w.env.open_db(nm, **kw)
            w.dbs.append(d)
            return "_Database"
        if name == "env":
            res = getattr(w.env, op[1])()
            if op[1] == "stat":
                res = {k: res[k] for k in STAT_KEYS}
            elif op[1] == "info":
                res = {k: res[k] for k in INFO_KEYS}
            elif op[1] == "path":  # each world has its own directory
                res = type(res).__name__
            return norm(res)
        if name == "env_set_mapsize":
            return norm(w.env.set_mapsize(op[1]))
        if name == "env_close":
            return norm(w.env.close())
        if name.startswith("txn_"):
            t = w.pick(w.txns, op[1])
            if t is None:
                return "no-txn"
            if name == "txn_get":
                return norm(t.get(op[2], db=w.pick(w.dbs, op[3])))
            if name == "txn_put":
                _, _, k, v, dupdata, overwrite, append, db = op
                return norm(
                    t.put(
                        k,
                        v,
                        dupdata=dupdata,
                        overwrite=overwrite,
                        append=append,
                        db=w.pick(w.dbs, db),
                    )
                )
            if name == "txn_delete":
                return norm(t.delete(op[2], op[3], db=w.pick(w.dbs, op[4])))
            if name == "txn_replace":
                return norm(t.replace(op[2], op[3], db=w.pick(w.dbs, op[4])))
            if name == "txn_pop":
                return norm(t.pop(op[2], db=w.pick(w.dbs, op[3])))
            if name == "txn_stat":
                res = t.stat(w.pick(w.dbs, op[2]) if op[2] is not None else None)
                return norm({k: res[k] for k in STAT_KEYS})
            if name == "txn_drop":
                d = w.pick(w.dbs, op[2])
                return norm(t.drop(d, delete=op[3]))
            if name == "txn_id":
                return norm(t.id())
            if name == "txn_end":
                return norm(getattr(t, op[2])())
        if name == "cursor":
            t = w.pick(w.txns, op[1])
            if t is None:
                return "no-txn"
            c = t.cursor(db=w.pick(w.dbs, op[2]))
            w.cursors.append(c)
            return "Cursor"
        if name.startswith("cur_"):
            c = w.pick(w.cursors, op[1])
            if c is None:
                return "no-cursor"
            if name == "cur_move":
                return norm(getattr(c, op[2])())
            if name == "cur_iter":
                return norm(getattr(c, op[2])(keys=op[3], values=op[4]))
            if name == "cur_set":
                return norm(getattr(c, op[2])(op[3]))
            if name == "cur_set2":
                return norm(getattr(c, op[2])(op[3], op[4]))
            if name == "cur_put":
                _, _, k, v, dupdata, overwrite, append = op
                return norm(c.put(k, v, dupdata=dupdata, overwrite=overwrite, append=append))
            if name == "cur_delete":
                return norm(c.delete(dupdata=op[2]))
            if name == "cur_putmulti":
                return norm(c.putmulti(op[2], dupdata=op[3], overwrite=op[4], append=op[5]))
            if name == "cur_getmulti":
                return norm(c.getmulti(op[2], dupdata=op[3]))
        raise AssertionError(f"unknown op {op!r}")
    except Exception as exc:  # the class is the result
        return ("raised", type(exc).__name__)


def covered(op: tuple) -> bool:
    return any(d.covers(op) for d in DIFFERENCES)


def mdb_backends() -> list[str]:
    out = []
    for b in mdb.BACKENDS:
        try:
            mdb.get_backend(b)
            out.append(b)
        except ImportError:
            pass
    return out


BACKENDS = mdb_backends()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(OP, min_size=1, max_size=40))
def test_every_call_answers_as_pylmdb(ops: list[tuple]) -> None:
    ops = [op for op in ops if not covered(op)]
    with tempfile.TemporaryDirectory() as tmp:
        worlds = {"py-lmdb": World(lmdb, os.path.join(tmp, "ref"))}
        for b in BACKENDS:
            worlds[b] = World(mdb.get_backend(b), os.path.join(tmp, b))
        try:
            for i, op in enumerate(ops):
                ref = worlds["py-lmdb"]
                if skipped(ref, op):
                    continue
                want = run(ref, op)
                for b in BACKENDS:
                    got = run(worlds[b], op)
                    if got != want and os.environ.get("MDB_API_FUZZ_FAILED"):
                        with open(os.environ["MDB_API_FUZZ_FAILED"], "w") as f:
                            f.write(repr(ops[: i + 1]))
                    assert got == want, (
                        f"call {i} {op!r}: py-lmdb gave {want!r}, mdb[{b}] gave {got!r}"
                    )
        finally:
            # cursors and txns first: py-lmdb must not see its env closed under them
            for w in worlds.values():
                for t in reversed(w.txns):
                    try:
                        t.abort()
                    except Exception:
                        pass
                w.close()


@pytest.mark.parametrize("diff", DIFFERENCES, ids=[d.id for d in DIFFERENCES])
def test_difference_is_real(diff, tmp_path) -> None:
    want = diff.demo(lmdb, str(tmp_path / "ref"))
    for b in BACKENDS:
        got = diff.demo(mdb.get_backend(b), str(tmp_path / b))
        assert got != want, f"{diff.id}: mdb[{b}] now answers as py-lmdb; remove the entry"
