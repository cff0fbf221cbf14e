"""Cursor iterators, with cursor calls between their steps, against explicit steps.

An iterator is defined by single cursor steps (py-lmdb's thin iterator): its first step
moves an unpositioned cursor with first()/last() (not the _dup iterators); every step
ends the iteration (StopIteration) while the cursor is unpositioned, else yields the
current record if the iterator yielded nothing yet, else moves with next()/prev()/
next_dup()/... and yields the record found (or ends, leaving the cursor unpositioned).
An ended iterator has no state of its own: once the cursor is positioned again it goes
on from there.  Random scripts run iterators on cursor A and the same steps by hand on
cursor B (same transaction, same database), mixing in other cursor calls on A and B,
several iterators at once (ended ones stay in use), dropped iterators and, at the end, a
closed cursor or an ended transaction; every answer, error and position must agree.
(The cffi backend reads ahead in batches in read-only transactions; this is what keeps
that invisible.)
"""

from __future__ import annotations

import random
from typing import Any

import pytest

# (method, start step, step, keys, values) of each iterator
KINDS = {
    "iternext": ("first", "next", True, True),
    "iterprev": ("last", "prev", True, True),
    "iternext_nodup": ("first", "next_nodup", True, False),
    "iterprev_nodup": ("last", "prev_nodup", True, False),
    "iternext_dup": (None, "next_dup", False, True),
    "iterprev_dup": (None, "prev_dup", False, True),
}


def outcome(fn: Any, *args: Any) -> Any:
    try:
        return ("ok", fn(*args))
    except StopIteration:
        return ("stop",)
    except Exception as exc:  # compare errors by type and text
        return ("err", type(exc).__name__, str(exc))


class Stepper:
    """One iterator, done by hand with single steps on cursor b."""

    def __init__(self, b: Any, kind: str, keys: bool, values: bool) -> None:
        self.b = b
        self.start, self.step, _, _ = KINDS[kind]
        self.keys, self.values = keys, values
        self.begun = self.started = False

    def shape(self) -> Any:
        k, v = self.b.item()
        if self.keys and self.values:
            return k, v
        return k if self.keys else v

    def __next__(self) -> Any:
        b = self.b
        positioned = b.key() != b""  # (keys are never empty)
        if not self.begun:
            self.begun = True
            if not positioned and self.start is not None:
                positioned = getattr(b, self.start)()
                if positioned:
                    self.started = True
                    return self.shape()
        if not positioned:
            raise StopIteration
        if self.started and not getattr(b, self.step)():
            raise StopIteration
        self.started = True
        return self.shape()


def fill(env: Any, rng: random.Random, dupsort: bool) -> tuple[Any, list[bytes]]:
    db = env.open_db(b"dup" if dupsort else b"plain", dupsort=dupsort)
    keys: list[bytes] = []
    with env.begin(write=True, db=db) as t:
        for i in range(rng.choice([0, 1, 2, 5, 40, 300, 1500])):
            k = b"k%06d" % (i * 3)
            keys.append(k)
            if dupsort:
                for j in range(rng.choice([1, 1, 2, 7, 60])):
                    t.put(k, b"d%04d" % j)
            else:
                big = rng.random() < 0.01  # bigger than a read-ahead buffer
                t.put(k, (b"%d." % i) * (rng.choice([0, 1, 30]) if not big else 20000))
    return db, keys


def cursor_call(rng: random.Random, keys: list[bytes], dupsort: bool) -> tuple[str, tuple]:
    probe = rng.choice(keys) if keys and rng.random() < 0.8 else b"k%06d" % rng.randrange(5000)
    calls: list[tuple[str, tuple]] = [
        ("key", ()),
        ("value", ()),
        ("item", ()),
        ("next", ()),
        ("prev", ()),
        ("first", ()),
        ("last", ()),
        ("set_key", (probe,)),
        ("set_range", (probe,)),
        ("get", (probe,)),
    ]
    if dupsort:
        calls += [
            ("count", ()),
            ("next_dup", ()),
            ("prev_dup", ()),
            ("next_nodup", ()),
            ("first_dup", ()),
            ("last_dup", ()),
            ("set_key_dup", (probe, b"d0001")),
        ]
    return rng.choice(calls)


@pytest.mark.parametrize("dupsort", [False, True], ids=["plain", "dupsort"])
@pytest.mark.parametrize("write", [False, True], ids=["read", "write"])
def test_iterators_match_single_steps(lm, env, rng, dupsort, write):
    if dupsort and lm.backend_features["engine"] != "mdbcore":
        # LMDB 0.9.24 (Debian's): after a seek that found nothing in a DUPSORT database,
        # next() can succeed and the get-current of item() right after it fail, so an
        # iterator's step (which yields what the step returned) and next() + item()
        # disagree -- on both backends alike.
        pytest.skip("DUPSORT single steps are not get-current-consistent in system liblmdb")
    for _script in range(12):
        db, keys = fill(env, rng, dupsort)
        txn = env.begin(write=write, db=db)
        a, b = txn.cursor(), txn.cursor()
        live: list[tuple[Any, Stepper]] = []
        if rng.random() < 0.5 and keys:
            k = rng.choice(keys)
            assert a.set_key(k) == b.set_key(k)
        # Mostly steps of the newest iterator, so read-ahead gets to grow.
        for _action in range(rng.choice([10, 60, 400])):
            r = rng.random()
            if r < 0.06 or not live:
                kinds = [k for k in KINDS if dupsort or "dup" not in k]
                kind = rng.choice(kinds)
                _, _, keys_, values_ = KINDS[kind]
                if rng.random() < 0.3:
                    keys_, values_ = rng.choice([(True, True), (True, False), (False, True)])
                ia = outcome(getattr(a, kind), keys_, values_)
                ib = outcome(Stepper, b, kind, keys_, values_)
                assert ia[0] == ib[0]
                if ia[0] == "ok":
                    live.append((ia[1], ib[1]))
            elif r < 0.75:
                pair = live[-1] if rng.random() < 0.8 else rng.choice(live)
                for _ in range(rng.choice([1, 1, 5, 50])):
                    got, want = outcome(next, pair[0]), outcome(next, pair[1])
                    assert got == want
                    if got[0] != "ok":  # ended (or failed): it stays in use
                        break
            elif r < 0.95:
                name, args = cursor_call(rng, keys, dupsort)
                got = outcome(getattr(a, name), *args)
                want = outcome(getattr(b, name), *args)
                assert got == want, name
            else:
                live.pop(rng.randrange(len(live)))  # dropped mid-way (a `break`)
        assert outcome(a.item) == outcome(b.item)
        end = rng.choice(["close", "abort", "none"])
        if end == "close":
            a.close()
            b.close()
        elif end == "abort":
            txn.abort()
        for ita, itb in live:
            got, want = outcome(next, ita), outcome(next, itb)
            assert got[0] == want[0]
        txn.abort()
        with env.begin(write=True) as t:
            t.drop(db)
