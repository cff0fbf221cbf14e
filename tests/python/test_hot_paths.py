"""The hot calls with records of every size around the cffi backend's copy buffers.

The cffi backend copies a record into a per-transaction (per-cursor) buffer when it fits
and reads bigger ones again its slow way; both backends must answer alike, at the edges
of those buffers too (transaction get, cursor moves, seeks and reads, iteration in read
and write transactions, put and putmulti).
"""

from __future__ import annotations

import pytest

# Around 2048 (the buffers' size) for the value alone and for key + value.
SIZES = [0, 1, 100, 2000, 2031, 2032, 2033, 2047, 2048, 2049, 4096, 70000]


def _records(maxkey: int) -> list[tuple[bytes, bytes]]:
    out = []
    for i, n in enumerate(SIZES):
        for klen in (16, maxkey):
            key = (b"%03d-%d-" % (i, klen)).ljust(klen, b"k")
            out.append((key, bytes((i + j) % 251 for j in range(n))))
    return sorted(out)


@pytest.mark.parametrize("write", [False, True])
def test_sizes_around_the_buffers(env, write):
    recs = _records(env.max_key_size())
    with env.begin(write=True) as t:
        c = t.cursor()
        assert c.putmulti(recs[::2]) == (len(recs[::2]), len(recs[::2]))
        for k, v in recs[1::2]:
            assert t.put(k, v)
    txn = env.begin(write=write)
    for k, v in recs:
        assert txn.get(k) == v
    assert txn.get(b"absent", b"dflt") == b"dflt"
    c = txn.cursor()
    assert list(c) == recs
    assert list(c.iterprev()) == recs[::-1]
    assert c.first()
    for k, v in recs:
        assert c.item() == (k, v) and c.key() == k and c.value() == v
        c.next()
    assert not c.next() and c.item() == (b"", b"")
    for k, v in recs:
        assert c.get(k) == v and c.item() == (k, v)
        assert c.set_key(k) and c.value() == v
        assert c.set_range(k[:-1]) and c.key() <= k
    assert c.get(b"absent") is None and not c.set_key(b"absent")
    if write:
        for k, v in recs:
            assert c.put(k, v + b"!") and c.item() == (k, v + b"!")
            assert txn.get(k) == v + b"!"
        assert not c.put(recs[0][0], b"x", overwrite=False)
        assert c.item() == (recs[0][0], recs[0][1] + b"!")
        for k, _v in recs[::3]:
            assert txn.delete(k) and not txn.delete(k)
        assert [k for k, _v in c] == sorted(set(k for k, _ in recs) - set(k for k, _ in recs[::3]))
    txn.abort()


def test_cffi_hot_calls_keep_the_gil():
    """keep_gil.h: cffi's wrappers of the guarded single-record calls and of a read txn's
    begin and end keep the GIL (as mdb._cext does), every other call releases it.  Fails
    if cffi's generated wrappers stop using the two macros keep_gil.h redefines, or if
    the test folds the wrong way."""
    try:
        from mdb._cffi._ffi import lib
    except ImportError as exc:  # (the cffi module is part of every build; say why not)
        pytest.fail(f"mdb._cffi cannot be imported: {exc}")
    assert lib.mdbpy_keeps_gil() == 1
    assert lib.mdbpy_gil_held() == 0


def test_cffi_write_begin_waits_without_the_gil(tmp_path):
    """A write txn's begin still releases the GIL while it waits for the writer lock: the
    thread holding the lock can run Python and commit (else this would hang)."""
    import threading
    import time

    from mdb import _cffi

    env = _cffi.Environment(str(tmp_path / "db"), map_size=1 << 20)
    try:
        first = env.begin(write=True)
        started = threading.Event()
        done: list[bytes | None] = []

        def second() -> None:
            started.set()
            with env.begin(write=True) as t:  # waits for `first`
                done.append(t.get(b"k"))

        th = threading.Thread(target=second)
        th.start()
        assert started.wait(10)
        time.sleep(0.2)  # (let it reach the writer lock)
        first.put(b"k", b"v")  # Python runs while `second` waits in the engine
        first.commit()
        th.join(10)
        assert not th.is_alive() and done == [b"v"]
    finally:
        env.close()
