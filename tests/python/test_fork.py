"""Fork safety: inherited objects raise in the child; the child may reopen."""

from __future__ import annotations

import os

import pytest

import mdb

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _in_child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            msg = fn()
        except BaseException as exc:  # noqa: BLE001
            msg = f"EXC {type(exc).__name__}: {exc}"
        os.write(w, msg.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out


def test_child_gets_clear_error(env):
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    txn = env.begin()

    def child():
        out = []
        for fn in (lambda: env.begin(), lambda: txn.get(b"k"), env.stat):
            try:
                fn()
                out.append("no error")
            except mdb.Error as e:
                out.append("fork" if "fork" in str(e) else str(e))
        return ",".join(out)

    assert _in_child(child) == "fork,fork,fork"
    assert txn.get(b"k") == b"v"  # parent unaffected


def test_child_can_reopen(lm, env, tmp_path):
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    reader = env.begin()  # a reader slot of the parent

    def child():
        e = lm.open(str(tmp_path / "db"), max_dbs=8, map_size=64 << 20)
        v = e.begin().get(b"k")
        e.close()
        return v.decode()

    assert _in_child(child) == "v"
    assert reader.get(b"k") == b"v"
    assert str(os.getpid()) in env.readers()


def test_child_close_leaves_parent_reader_slot(lm, env, tmp_path):
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    reader = env.begin()
    reader.get(b"k")
    before = env.info()["num_readers"]

    def child():
        import gc

        env.close()  # inherited: marks closed, leaks the engine handle
        try:
            reader.abort()
        except mdb.Error:
            pass
        gc.collect()
        return "ok"

    assert _in_child(child) == "ok"
    assert env.info()["num_readers"] == before
    assert str(os.getpid()) in env.readers()
    assert reader.get(b"k") == b"v"
    assert env.reader_check() == 0


def test_child_iterator_raises(env):
    """An iterator that read ahead in the parent does not hand the child those records."""
    with env.begin(write=True) as t:
        for i in range(2000):
            t.put(b"%05d" % i, b"v")
    txn = env.begin()
    it = iter(txn.cursor())
    for _ in range(30):  # far enough for the cffi backend to have read ahead
        next(it)

    def child():
        try:
            return f"no error: {next(it)!r}"
        except mdb.Error as e:
            return "fork" if "fork" in str(e) else str(e)

    assert _in_child(child) == "fork"
    assert next(it) == (b"00030", b"v")  # parent unaffected


def test_child_cursor_raises_after_reading(env):
    """A cursor whose record was just read (the cffi backend keeps it) raises in the
    child rather than answering from the parent's read."""
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    txn = env.begin()
    c = txn.cursor()
    assert c.first() and c.item() == (b"k", b"v") and c.key() == b"k"

    def child():
        out = []
        for fn in (c.key, c.value, c.item):
            try:
                out.append(f"no error: {fn()!r}")
            except mdb.Error as e:
                out.append("fork" if "fork" in str(e) else str(e))
        return ",".join(out)

    assert _in_child(child) == "fork,fork,fork"
    assert c.item() == (b"k", b"v")  # parent unaffected


def test_child_hot_calls_raise(env):
    """Every hot call of an inherited read or write transaction and cursor raises in the
    child (the cffi backend's fast paths check a state the fork handler marks) and leaves
    the parent's objects working."""
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    reader = env.begin()
    rc = reader.cursor()
    assert rc.first()
    writer = env.begin(write=True)
    wc = writer.cursor()

    def child():
        out = []
        for fn in (
            lambda: reader.get(b"k"),
            lambda: rc.next(),
            lambda: rc.key(),
            lambda: rc.get(b"k"),
            lambda: rc.set_range(b"a"),
            lambda: next(iter(rc)),
            lambda: writer.put(b"x", b"y"),
            lambda: writer.delete(b"k"),
            lambda: wc.put(b"x", b"y"),
            lambda: wc.putmulti([(b"x", b"y")]),
            lambda: next(iter(wc)),
        ):
            try:
                out.append(f"no error: {fn()!r}")
            except mdb.Error as e:
                out.append("fork" if "fork" in str(e) else str(e))
        return ",".join(out)

    assert _in_child(child) == ",".join(["fork"] * 11)
    assert reader.get(b"k") == b"v" and rc.item() == (b"k", b"v")  # parent unaffected
    assert writer.put(b"x", b"y") and wc.put(b"z", b"w") and writer.get(b"z") == b"w"
    writer.abort()
