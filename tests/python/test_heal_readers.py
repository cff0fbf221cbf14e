"""Readers that heal, on both backends.

A reader process SIGKILLed while it holds a snapshot must not pin freed pages: the next
writers find its slot dead and clear it themselves (no reader_check call), so data.mdb
stays within 2x of its size after the first txns.  Without healing the same run grows
about 10x (LMDB's behaviour; bench/heal_readers.py prints both).  Live readers keep
their slots and snapshots and are listed with their age and the pages they hold back.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import mdb
from support.childproc import killed_at_exit

pytestmark = pytest.mark.skipif(
    not mdb.backend_features.get("check"), reason="reader ages need the mdb core"
)

NKEYS = 2000


def _reader(lm, path: str, verify: bool) -> subprocess.Popen[str]:
    code = textwrap.dedent(f"""
        import sys, mdb
        lm = mdb.get_backend({lm.backend!r})
        env = lm.open({path!r}, map_size=256 << 20)
        txn = env.begin()
        before = [txn.get(b"k%05d" % i) for i in range({NKEYS})]
        print(txn.id(), flush=True)
        sys.stdin.readline()
        if {verify!r}:
            after = [txn.get(b"k%05d" % i) for i in range({NKEYS})]
            print("same" if after == before else "changed", flush=True)
    """)
    p = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    return p


def _fill(env) -> None:
    with env.begin(write=True) as t:
        for i in range(NKEYS):
            t.put(b"k%05d" % i, b"x" * 100)


def _updates(env, start: int, n: int) -> None:
    for i in range(start, start + n):
        with env.begin(write=True) as t:
            t.put(b"k%05d" % (i % NKEYS), b"%d" % i * 20)


def test_killed_reader_healed(lm, tmp_path):
    path = str(tmp_path / "db")
    env = lm.open(path, map_size=256 << 20, sync=False)
    try:
        _fill(env)
        with killed_at_exit(_reader(lm, path, verify=False)) as p:
            assert p.stdout.readline().strip().isdigit()
            assert str(p.pid) in env.readers()
        data = os.path.join(path, "data.mdb")
        _updates(env, 0, 300)
        first = os.path.getsize(data)
        _updates(env, 300, 2700)
        last = os.path.getsize(data)
        # no reader_check() was called: the writers cleared the dead slot
        assert str(p.pid) not in env.readers()
        assert last <= 2 * first, f"data.mdb grew from {first} to {last} with a dead reader"
    finally:
        env.close()


def test_live_reader_kept_and_reported(lm, tmp_path):
    path = str(tmp_path / "db")
    env = lm.open(path, map_size=256 << 20, sync=False)
    p = None
    try:
        _fill(env)
        p = _reader(lm, path, verify=True)
        snap = int(p.stdout.readline())
        _updates(env, 0, 50)
        rows = [r for r in env.readers(detail=True) if r["pid"] == p.pid]
        assert len(rows) == 1
        row = rows[0]
        assert row["txnid"] == snap and row["age"] == 50
        assert row["pages_held"] >= 50  # at least the leaf each update replaced
        info = env.info()
        assert info["reader_age"] == 50
        assert "pages_held" not in info  # info() takes no reader slot to count them
        # the snapshot is intact after the writers passed it
        p.stdin.write("\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "same"
        p.wait(10)
        assert all(r["pid"] != p.pid for r in env.readers(detail=True))
        assert env.info()["reader_age"] == 0
    finally:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()
        env.close()


def test_readers_detail_inside_read_txn(lm, env):
    with env.begin(write=True) as t:
        t.put(b"a", b"b")
    assert [r for r in env.readers(detail=True) if r["txnid"] is not None] == []
    with env.begin() as t:
        rows = env.readers(detail=True)
        mine = [r for r in rows if r["pid"] == os.getpid() and r["txnid"] == t.id()]
        assert len(mine) == 1 and mine[0]["age"] == 0 and mine[0]["pages_held"] == 0
    with pytest.raises(TypeError):
        env.readers(detail=True, bogus=1)
