"""buffers=True: zero-copy views that stay memory-safe after txn end / env close."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import mdb


def _fill(env, n=10, size=100):
    with env.begin(write=True) as t:
        for i in range(n):
            t.put(b"%04d" % i, bytes([65 + i % 26]) * size)


def test_buffers_return_memoryview(env):
    _fill(env)
    with env.begin(buffers=True) as t:
        v = t.get(b"0001")
        assert isinstance(v, memoryview) and v.readonly and bytes(v) == b"B" * 100
        k, val = next(iter(t.cursor()))
        assert isinstance(k, memoryview) and bytes(k) == b"0000"
    with env.begin() as t:
        assert type(t.get(b"0001")) is bytes


def test_view_after_txn_end_is_safe(env):
    _fill(env)
    t = env.begin(buffers=True)
    v = t.get(b"0003")
    t.abort()
    for _ in range(5):
        with env.begin(write=True) as w:
            w.put(b"0003", b"Z" * 100)
    assert len(bytes(v)) == 100  # stale but readable


def test_view_after_env_close_is_safe(lm, tmp_path):
    env = lm.open(str(tmp_path / "e"))
    _fill(env)
    t = env.begin(buffers=True)
    v = t.get(b"0002")
    env.close()
    assert bytes(v) == b"C" * 100
    with pytest.raises(mdb.Error):
        t.get(b"0002")
    # the map (and the duplicate-open guard) lives until the view goes
    with pytest.raises(mdb.Error, match="already open"):
        lm.open(str(tmp_path / "e"))
    del v, t
    lm.open(str(tmp_path / "e")).close()


def test_view_after_close_in_subprocess(lm, tmp_path):
    """The crash py-lmdb has (SIGSEGV after close) must not happen: run it isolated."""
    code = textwrap.dedent(f"""
        import mdb, gc
        lm = mdb.get_backend({lm.backend!r})
        env = lm.open({str(tmp_path / "e")!r}, map_size=1 << 24)
        with env.begin(write=True) as t:
            t.put(b'k', b'x' * 50000)
        t = env.begin(buffers=True)
        v = t.get(b'k')
        env.close(); del env, t; gc.collect()
        print(bytes(v[:3]).decode(), len(v))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["xxx", "50000"]


def test_set_mapsize_refused_with_live_views(env):
    _fill(env)
    t = env.begin(buffers=True)
    v = t.get(b"0001")
    t.abort()
    with pytest.raises(mdb.Error, match="buffers=True"):
        env.set_mapsize(128 << 20)
    v.release()
    del v
    import gc

    gc.collect()
    env.set_mapsize(128 << 20)


def test_write_txn_dirty_values_copied(env):
    with env.begin(write=True, buffers=True) as t:
        t.put(b"k", b"v" * 300000)  # dirty overflow pages live on the heap
        v = t.get(b"k")
    assert bytes(v[:2]) == b"vv" and len(v) == 300000
