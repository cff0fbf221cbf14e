"""Randomised operations on both backends checked against a dict model.

Hypothesis drives puts, deletes, replaces, pops, aborted transactions and
cursor scans over a plain and a dupsort database; after every step the data
seen through several read paths must equal the model.
"""

from __future__ import annotations

import os
import tempfile

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import Phase, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule  # noqa: E402

import mdb  # noqa: E402

KEYS = st.binary(min_size=1, max_size=12)
VALS = st.binary(min_size=0, max_size=300)
DVALS = st.binary(min_size=0, max_size=8)


def make_machine(backend: str) -> type:
    lm = mdb.get_backend(backend)

    class Model(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.dir = tempfile.TemporaryDirectory()
            self.env = lm.open(self.dir.name, map_size=32 << 20, max_dbs=2)
            self.dup = self.env.open_db(b"dup", dupsort=True)
            self.db = self.env.open_db(b"plain")
            self.plain: dict[bytes, bytes] = {}
            self.dups: dict[bytes, set[bytes]] = {}

        def teardown(self) -> None:
            self.env.close()
            self.dir.cleanup()

        @rule(k=KEYS, v=VALS)
        def put(self, k, v):
            with self.env.begin(write=True, db=self.db) as t:
                assert t.put(k, v)
            self.plain[k] = v

        @rule(k=KEYS, v=VALS)
        def put_no_overwrite(self, k, v):
            with self.env.begin(write=True, db=self.db) as t:
                assert t.put(k, v, overwrite=False) == (k not in self.plain)
            self.plain.setdefault(k, v)

        @rule(k=KEYS)
        def delete(self, k):
            with self.env.begin(write=True, db=self.db) as t:
                assert t.delete(k) == (k in self.plain)
            self.plain.pop(k, None)

        @rule(k=KEYS, v=VALS)
        def replace(self, k, v):
            with self.env.begin(write=True, db=self.db) as t:
                assert t.replace(k, v) == self.plain.get(k)
            self.plain[k] = v

        @rule(k=KEYS)
        def pop(self, k):
            with self.env.begin(write=True, db=self.db) as t:
                assert t.pop(k) == self.plain.get(k)
            self.plain.pop(k, None)

        @rule(k=KEYS, v=VALS)
        def aborted_put(self, k, v):
            t = self.env.begin(write=True, db=self.db)
            t.put(k, v)
            t.abort()

        @rule(items=st.lists(st.tuples(KEYS, VALS), max_size=20))
        def putmulti(self, items):
            with self.env.begin(write=True, db=self.db) as t:
                assert t.cursor().putmulti(items) == (len(items), len(items))
            for k, v in items:
                self.plain[k] = v

        @rule(k=KEYS, v=DVALS)
        def dup_put(self, k, v):
            if not v:
                # A duplicate is a sub-tree key: empty ones are refused, as by LMDB 0.9.36,
                # and the refused put leaves the database as it was.
                with pytest.raises(mdb.BadValsizeError):
                    with self.env.begin(write=True, db=self.dup) as t:
                        t.put(k, v)
                return
            with self.env.begin(write=True, db=self.dup) as t:
                t.put(k, v)
            self.dups.setdefault(k, set()).add(v)

        @rule(k=KEYS, v=DVALS)
        def dup_delete_one(self, k, v):
            with self.env.begin(write=True, db=self.dup) as t:
                gone = t.delete(k, v) if v else t.delete(k)
            if v:
                assert gone == (v in self.dups.get(k, set()))
                self.dups.get(k, set()).discard(v)
                if k in self.dups and not self.dups[k]:
                    del self.dups[k]
            else:
                assert gone == (k in self.dups)
                self.dups.pop(k, None)

        @invariant()
        def same_data(self):
            with self.env.begin(db=self.db) as t:
                assert list(t.cursor()) == sorted(self.plain.items())
                assert list(t.cursor().iterprev(values=False)) == sorted(self.plain, reverse=True)
                for k, v in list(self.plain.items())[:5]:
                    assert t.get(k) == v
                expect = sorted((k, v) for k, vs in self.dups.items() for v in vs)
                assert list(t.cursor(db=self.dup)) == expect
                assert list(t.cursor(db=self.dup).iternext_nodup()) == sorted(self.dups)
                assert t.stat()["entries"] == len(self.plain)
                assert sorted(self.env.dbs()) == [b"dup", b"plain"]

    Model.__name__ = f"Model_{backend}"
    return Model


@pytest.mark.parametrize("backend", mdb.BACKENDS)
def test_model(backend):
    try:
        machine = make_machine(backend)
    except ImportError as exc:
        pytest.skip(str(exc))
    phases = [p for p in Phase if p != Phase.shrink] if os.environ.get("CI") else list(Phase)
    settings_ = settings(
        max_examples=60,
        stateful_step_count=40,
        deadline=None,
        phases=phases,
        derandomize=bool(os.environ.get("CI")),
    )
    hypothesis.stateful.run_state_machine_as_test(machine, settings=settings_)
