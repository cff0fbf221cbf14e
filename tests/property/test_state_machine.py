"""A hypothesis state machine driving an environment through the Python package against a
plain Python model (model.py) -- issue 6.

Databases: plain, INTEGERKEY (8-byte keys), and, once the engine accepts them (feature
probe: open_db(dupsort=True) stops raising mdb.IncompatibleError), DUPSORT and
DUPSORT|DUPFIXED.  Rules: put (overwrite / dupdata / append), delete (key or one pair),
get, replace, pop, cursor moves (first/last/next/prev/set_key/set_range and the dup moves),
cursor put / delete / replace / count, nested write txns (once the engine has them: probe),
commit, abort, reopening the environment.  After every step: every DB in the open write txn
(or a fresh read txn) equals the model, and env.check() -- the core's structural checker on
the committed snapshot -- passes.

Cursor positions are modelled exactly after absolute moves, successful moves and successful
cursor puts; after a failed move, a cursor delete or a deletion of the cursor's item through
another path, the model only knows "somewhere" and allows no relative move until the next
absolute one (LMDB's C_DEL / C_EOF details are the business of tests/c/core/test_cursors.c).

The same machine runs against py-lmdb's real LMDB (`lmdb` module) with a few examples, to
keep the model honest: a model that disagrees with real LMDB is a test bug, not an engine
bug.
"""

import os
import shutil
import tempfile

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from crash import harness as H

from .model import Model

mdb = pytest.importorskip("mdb")

PLAIN_KEYS = [
    b"a",
    b"ab",
    b"abc",
    b"b",
    b"ba",
    b"k1",
    b"k10",
    b"k2",
    b"z",
    b"zz",
    b"\x00",
    b"\xff",
    b"\xff\xff",
    b"mid",
] + [b"key%03d" % i for i in range(15)]
INT_KEYS = [
    i.to_bytes(8, "little")
    for i in (0, 1, 2, 255, 256, 65535, 1 << 32, 1 << 63, (1 << 64) - 1, 7, 8, 9, 1000, 123456)
]
VALUES = st.sampled_from([0, 1, 10, 100, 1000, 2000, 2100, 5000, 12000]).flatmap(
    lambda n: st.binary(min_size=min(n, 4), max_size=min(n, 4)).map(
        lambda b, n=n: (b * (n // max(len(b), 1) + 1))[:n] if b else b"\x00" * n
    )
)
DUP_VALUES = st.sampled_from(
    [b"a", b"b", b"bb", b"c", b"x" * 50, b"y" * 200, b"\x00\x01", b"v%d" % 5, b"v%d" % 12]
)
FIX_VALUES = st.integers(0, 40).map(lambda i: i.to_bytes(8, "big"))


def probe(module):
    """(dupsort, nested) support of the engine behind `module`."""
    d = tempfile.mkdtemp(prefix="mdb-probe-")
    try:
        env = module.open(d, max_dbs=4, map_size=1 << 22)
        try:
            try:
                env.open_db(b"p", dupsort=True)
                dup = True
            except module.IncompatibleError:
                dup = False
            with env.begin(write=True) as t:
                try:
                    c = env.begin(write=True, parent=t)
                    c.abort()
                    nested = True
                except module.IncompatibleError:
                    nested = False
        finally:
            env.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return dup, nested


# cursor moves the state machine draws: on any DB, and on DUPSORT DBs only
KEY_OPS = ["first", "last", "set_key", "set_range", "next", "prev"]
DUP_OPS = [
    "first_dup",
    "last_dup",
    "next_dup",
    "prev_dup",
    "next_nodup",
    "prev_nodup",
    "set_key_dup",
    "set_range_dup",
    "count",
]
# the moves from the current position (not modelled when the position is not)
RELATIVE_OPS = {"next", "prev"} | set(DUP_OPS) - {"set_key_dup", "set_range_dup"}


class EnvMachine(RuleBasedStateMachine):
    module = mdb
    dup = nested = False
    check = True

    def __init__(self):
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="mdb-sm-")
        specs = {"plain": {}, "intkey": {"intkey": True}}
        if self.dup:
            specs["dups"] = {"dupsort": True}
            specs["dfix"] = {"dupsort": True, "dupfixed": True}
        self.specs = specs
        self.committed = Model(specs)
        self.stack = []  # [(txn, model)] innermost last
        self.cursors = {}  # db name -> [cursor, position | None | "?"]
        self._open_env()

    # ---- plumbing
    def _open_env(self):
        m = self.module
        self.env = m.open(self.dir, max_dbs=6, map_size=64 << 20)
        self.handles = {}
        for name, kw in self.specs.items():
            self.handles[name] = self.env.open_db(
                name.encode(),
                integerkey=kw.get("intkey", False),
                dupsort=kw.get("dupsort", False),
                dupfixed=kw.get("dupfixed", False),
            )

    def _close_cursors(self):
        for c, _ in self.cursors.values():
            c.close()
        self.cursors = {}

    def teardown(self):
        self._close_cursors()
        for t, _ in reversed(self.stack):
            t.abort()
        self.stack = []
        self.env.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def step(self):
        H.count(f"state-machine steps ({self.module.__name__})")

    @property
    def top(self):
        return self.stack[-1] if self.stack else None

    def db_key(self, data, name):
        if name == "intkey":
            return data.draw(st.sampled_from(INT_KEYS))
        if name in ("dups", "dfix"):
            return data.draw(st.sampled_from(PLAIN_KEYS[:8]))
        return data.draw(st.sampled_from(PLAIN_KEYS))

    def db_val(self, data, name):
        if name == "dups":
            return data.draw(DUP_VALUES)
        if name == "dfix":
            return data.draw(FIX_VALUES)
        return data.draw(VALUES)

    def _after_write(self, name, via=None):
        """Other cursors on `name`: still on their item if it exists, else unknown."""
        mdl = self.top[1].dbs[name]
        for n, ent in self.cursors.items():
            if n != name or ent is via:
                continue
            if isinstance(ent[1], tuple) and mdl.index_of(ent[1]) is None:
                ent[1] = "?"

    # ---- txns
    @precondition(lambda self: not self.stack)
    @rule()
    def begin(self):
        self.step()
        self.stack.append((self.env.begin(write=True), self.committed.clone()))

    @precondition(lambda self: self.stack and self.nested and len(self.stack) < 3)
    @rule()
    def begin_nested(self):
        self.step()
        self._close_cursors()
        parent = self.top[0]
        self.stack.append((self.env.begin(write=True, parent=parent), self.top[1].clone()))

    def _end_top(self):
        """commit/abort: the innermost (txn, model), popped after its cursors are closed."""
        self.step()
        self._close_cursors()
        return self.stack.pop()

    @precondition(lambda self: self.stack)
    @rule()
    def commit(self):
        t, m = self._end_top()
        t.commit()
        if self.stack:
            self.stack[-1] = (self.stack[-1][0], m)
        else:
            self.committed = m

    @precondition(lambda self: self.stack)
    @rule()
    def abort(self):
        t, _ = self._end_top()
        t.abort()

    @precondition(lambda self: not self.stack)
    @rule()
    def reopen(self):
        self.step()
        self.env.close()
        self._open_env()

    # ---- data ops
    @precondition(lambda self: self.stack)
    @rule(
        data=st.data(),
        overwrite=st.booleans(),
        dupdata=st.booleans(),
        append=st.sampled_from([False, False, False, True]),
    )
    def put(self, data, overwrite, dupdata, append):
        name, k, v, append, want = self._model_put(data, overwrite, dupdata, append)
        got = self.top[0].put(
            k, v, db=self.handles[name], overwrite=overwrite, dupdata=dupdata, append=append
        )
        assert got == want, (
            f"put({k!r}, {len(v)} bytes, {name}, overwrite={overwrite}, "
            f"dupdata={dupdata}, append={append}) -> {got}, model {want}"
        )
        self._after_write(name)

    @precondition(lambda self: self.stack)
    @rule(data=st.data(), pair=st.booleans())
    def delete(self, data, pair):
        name, mdl = self._step_on_db(data)
        k = self.db_key(data, name)
        v = self.db_val(data, name) if (pair and mdl.dupsort) else b""
        if pair and mdl.dupsort and k in mdl.data and data.draw(st.booleans()):
            v = data.draw(st.sampled_from(mdl.data[k]))  # an existing pair
        if v == b"" and mdl.dupsort:
            pass  # b"" means "all duplicates" in py-lmdb
        want = mdl.delete(k, v)
        got = self.top[0].delete(k, v, db=self.handles[name])
        assert got == want, f"delete({k!r}, {v!r}, {name}) -> {got}, model {want}"
        self._after_write(name)

    @precondition(lambda self: self.stack)
    @rule(data=st.data())
    def get(self, data):
        self.step()
        name = data.draw(st.sampled_from(sorted(self.specs)))
        k = self.db_key(data, name)
        got = self.top[0].get(k, db=self.handles[name])
        assert got == self.top[1].dbs[name].get(k), f"get({k!r}, {name})"

    @precondition(lambda self: self.stack)
    @rule(data=st.data(), pop=st.booleans())
    def replace_or_pop(self, data, pop):
        self.step()
        name = data.draw(st.sampled_from(["plain", "intkey"]))
        mdl = self.top[1].dbs[name]
        k = self.db_key(data, name)
        old = mdl.get(k)
        if pop:
            got = self.top[0].pop(k, db=self.handles[name])
            mdl.delete(k)
        else:
            v = self.db_val(data, name)
            got = self.top[0].replace(k, v, db=self.handles[name])
            mdl.put(k, v)
        assert got == old, f"{'pop' if pop else 'replace'}({k!r}, {name}) -> {got!r}"
        self._after_write(name)

    # ---- cursors
    def _step_on_db(self, data):
        """A new step on a drawn DB: (its name, its model)."""
        self.step()
        name = data.draw(st.sampled_from(sorted(self.specs)))
        return name, self.top[1].dbs[name]

    def _model_put(self, data, overwrite, dupdata, append):
        """A step's put on the model: a drawn DB (append is off for DUPSORT), key and value;
        (name, key, value, append, the model's answer)."""
        name, mdl = self._step_on_db(data)
        if mdl.dupsort:
            append = False
        k, v = self.db_key(data, name), self.db_val(data, name)
        return (
            name,
            k,
            v,
            append,
            mdl.put(k, v, dupdata=dupdata, overwrite=overwrite, append=append),
        )

    def _cursor(self, name):
        ent = self.cursors.get(name)
        if ent is None:
            ent = [self.top[0].cursor(db=self.handles[name]), "?"]
            self.cursors[name] = ent
        return ent

    def _expect(self, ent, mdl, ok, want_pos, what):
        """want_pos: the model's position after the move, or None (no such item)."""
        assert ok == (want_pos is not None), f"{what}: engine {ok}, model {want_pos}"
        if ok:
            got = (bytes(ent[0].key()), bytes(ent[0].value()))
            assert got == want_pos, f"{what}: engine at {got}, model at {want_pos}"
            ent[1] = want_pos
        else:
            ent[1] = "?"

    @precondition(lambda self: self.stack)
    @rule(
        data=st.data(),
        op=st.sampled_from(KEY_OPS + DUP_OPS),
    )
    def cursor_move(self, data, op):
        name, mdl = self._step_on_db(data)
        ent = self._cursor(name)
        c, pos = ent
        ps = mdl.pairs()
        dup_op = op in DUP_OPS
        if dup_op and not mdl.dupsort:
            return
        relative = op in RELATIVE_OPS
        if relative and not isinstance(pos, tuple):
            return  # position not modelled (see module docstring)
        i = mdl.index_of(pos) if isinstance(pos, tuple) else None
        if op == "first":
            self._expect(ent, mdl, c.first(), ps[0] if ps else None, op)
        elif op == "last":
            self._expect(ent, mdl, c.last(), ps[-1] if ps else None, op)
        elif op in ("set_key", "set_range"):
            k = self.db_key(data, name)
            if op == "set_key":
                want = next((p for p in ps if p[0] == k), None)
                self._expect(ent, mdl, c.set_key(k), want, f"set_key({k!r})")
            else:
                sk = mdl.sortkey(k)
                want = next((p for p in ps if mdl.sortkey(p[0]) >= sk), None)
                self._expect(ent, mdl, c.set_range(k), want, f"set_range({k!r})")
        elif op in ("set_key_dup", "set_range_dup"):
            k, v = self.db_key(data, name), self.db_val(data, name)
            if op == "set_key_dup":
                want = (k, v) if (k, v) in ps else None
                self._expect(ent, mdl, c.set_key_dup(k, v), want, f"set_key_dup({k!r},{v!r})")
            else:
                want = next((p for p in ps if p[0] == k and p[1] >= v), None)
                self._expect(ent, mdl, c.set_range_dup(k, v), want, f"set_range_dup({k!r},{v!r})")
        elif op == "next":
            self._expect(ent, mdl, c.next(), ps[i + 1] if i + 1 < len(ps) else None, op)
        elif op == "prev":
            self._expect(ent, mdl, c.prev(), ps[i - 1] if i > 0 else None, op)
        else:
            k = pos[0]
            same = [p for p in ps if p[0] == k]
            j = same.index(pos)
            if op == "count":
                assert c.count() == len(same), f"count at {pos}"
                return
            if op == "first_dup":
                self._expect(ent, mdl, c.first_dup(), same[0], op)
            elif op == "last_dup":
                self._expect(ent, mdl, c.last_dup(), same[-1], op)
            elif op == "next_dup":
                self._expect(ent, mdl, c.next_dup(), same[j + 1] if j + 1 < len(same) else None, op)
            elif op == "prev_dup":
                self._expect(ent, mdl, c.prev_dup(), same[j - 1] if j > 0 else None, op)
            elif op == "next_nodup":
                nxt = next((p for p in ps if mdl.sortkey(p[0]) > mdl.sortkey(k)), None)
                self._expect(ent, mdl, c.next_nodup(), nxt, op)
            elif op == "prev_nodup":
                prv = [p for p in ps if mdl.sortkey(p[0]) < mdl.sortkey(k)]
                if prv:  # LMDB: the last duplicate of the previous key
                    prv = [p for p in prv if p[0] == prv[-1][0]][-1]
                self._expect(ent, mdl, c.prev_nodup(), prv or None, op)

    @precondition(lambda self: self.stack)
    @rule(
        data=st.data(),
        overwrite=st.booleans(),
        dupdata=st.booleans(),
        append=st.sampled_from([False, False, True]),
    )
    def cursor_put(self, data, overwrite, dupdata, append):
        name, k, v, append, want = self._model_put(data, overwrite, dupdata, append)
        ent = self._cursor(name)
        got = ent[0].put(k, v, dupdata=dupdata, overwrite=overwrite, append=append)
        assert got == want, (
            f"cursor put({k!r}, {name}, overwrite={overwrite}, "
            f"dupdata={dupdata}, append={append}) -> {got}, model {want}"
        )
        if got:
            ent[1] = (k, v)
            assert (bytes(ent[0].key()), bytes(ent[0].value())) == (k, v), (
                "cursor not on the item it put"
            )
        else:
            ent[1] = "?"
        self._after_write(name, via=ent)

    @precondition(lambda self: self.stack)
    @rule(data=st.data(), dupdata=st.booleans())
    def cursor_delete(self, data, dupdata):
        name, mdl = self._step_on_db(data)
        ent = self.cursors.get(name)
        if ent is None or not isinstance(ent[1], tuple):
            return
        k, v = ent[1]
        assert ent[0].delete(dupdata=dupdata), f"cursor delete at {ent[1]}"
        mdl.delete(k, b"" if (dupdata or not mdl.dupsort) else v)
        ent[1] = "?"
        self._after_write(name, via=ent)

    @precondition(lambda self: self.stack)
    @rule(data=st.data())
    def cursor_replace(self, data):
        self.step()
        name = data.draw(st.sampled_from(["plain", "intkey"]))
        mdl = self.top[1].dbs[name]
        ent = self._cursor(name)
        k, v = self.db_key(data, name), self.db_val(data, name)
        old = mdl.get(k)
        got = ent[0].replace(k, v)
        mdl.put(k, v)
        assert got == old, f"cursor replace({k!r}) -> {got!r}, model {old!r}"
        ent[1] = "?"  # py-lmdb leaves its own positioned flag as it was
        self._after_write(name, via=ent)

    # ---- invariants
    @invariant()
    def engine_equals_model(self):
        if self.stack:
            t, m = self.top
            for name, h in self.handles.items():
                got = [(bytes(k), bytes(v)) for k, v in t.cursor(db=h).iternext()]
                assert got == m.dbs[name].pairs(), f"DB {name} in the write txn"
        else:
            with self.env.begin() as t:
                for name, h in self.handles.items():
                    got = [(bytes(k), bytes(v)) for k, v in t.cursor(db=h).iternext()]
                    assert got == self.committed.dbs[name].pairs(), f"DB {name} committed"

    @invariant()
    def checker_passes(self):
        # the committed snapshot (check() begins its own read txn), also while a write txn
        # (or nested txns) are open
        if self.check:
            rep = self.env.check()
            assert rep["ok"], rep.get("text")


def run_machine(module, examples, steps):
    dup, nested = probe(module)

    class M(EnvMachine):
        pass

    M.module, M.dup, M.nested = module, dup, nested
    M.check = module is mdb and mdb.backend_features.get("check", False)
    run_state_machine_as_test(
        M, settings=settings(max_examples=examples, stateful_step_count=steps)
    )
    return dup, nested


def test_state_machine_mdb():
    dup, nested = run_machine(mdb, H.size("state_machine"), H.size("state_machine_steps"))
    H.count("state-machine runs (mdb)", H.size("state_machine"))
    print(
        f"mdb engine: dupsort {'on' if dup else 'OFF (probe)'}, nested "
        f"{'on' if nested else 'OFF (probe)'}"
    )


@pytest.mark.skipif(os.environ.get("MDB_TEST_IMPL") == "system", reason="same as above")
def test_model_agrees_with_real_lmdb():
    """The model itself, validated against py-lmdb's real LMDB (dupsort and nested on)."""
    lmdb = pytest.importorskip("lmdb")
    run_machine(lmdb, max(5, H.size("state_machine") // 3), H.size("state_machine_steps"))
