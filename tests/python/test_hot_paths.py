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


def test_cffi_bytes_args_are_read_by_their_own_length(tmp_path):
    """bytes_arg.h: the cffi fast paths pass a bytes key or value without its length and
    C reads the length from the object.  The import-time probe must have agreed (else the
    slower length-passing calls are in use: this fails so that it is seen), the probe must
    refuse a wrong length, a later offset must not replace the one in use, and the direct
    calls must store and delete exactly what the length-passing ones do, at every size."""
    from mdb import _cffi
    from mdb._cffi import _ffi

    lib = _ffi.lib
    assert _ffi._BYTES_ARG and _ffi._lib_tput_b is lib.mdbpy_tput_b
    for n in (0, 1, 15, 16, 17, 255, 256, 4095, 70000):
        b = bytes(range(256)) * (n // 256) + bytes(n % 256)
        assert lib.mdbpy_bytes_probe(b, id(b), len(b)) == _ffi._BYTES_OFFSET
        assert lib.mdbpy_bytes_probe(b, id(b), len(b) + 1) == -1
    assert lib.mdbpy_bytes_use(_ffi._BYTES_OFFSET + 8) == _ffi._BYTES_OFFSET

    env = _cffi.Environment(str(tmp_path / "db"), map_size=1 << 24)
    try:
        keys = [b"k%d" % n + bytes(n) for n in (0, 1, 7, 8, 100, env.max_key_size() - 8)]
        vals = [bytes([n % 251]) * n for n in (0, 1, 100, 2047, 2049, 70000)]
        with env.begin(write=True) as t:
            for k, v in zip(keys, vals):
                assert lib.mdbpy_tput_b(t._st, k, v) == 0
                assert _ffi._tput_len(t._st, k + b"/", v) == 0
            got = {k: t.get(k) for k in keys}
            assert got == dict(zip(keys, vals))
            assert [t.get(k + b"/") for k in keys] == vals
            assert lib.mdbpy_tdel_b(t._st, keys[0]) == 0 and t.get(keys[0]) is None
            assert lib.mdbpy_tdel_b(t._st, keys[0]) == lib.MDB_NOTFOUND
            assert lib.mdbpy_tget_b(t._st, keys[2]) == len(vals[2])
            assert _ffi._tget_len(t._st, keys[2]) == len(vals[2])
            assert _ffi._tdel_len(t._st, keys[1]) == 0 and t.get(keys[1]) is None
            c = t.cursor()
            assert lib.mdbpy_cput_b(c._cst, b"c" * 9, b"v" * 33, 0) == 0
            assert _ffi._cput_len(c._cst, b"d" * 9, b"w" * 34, 0) == 0
            assert t.get(b"c" * 9) == b"v" * 33 and t.get(b"d" * 9) == b"w" * 34
            too_long = b"x" * (env.max_key_size() + 1)
            for bad in (b"", too_long):
                assert lib.mdbpy_tput_b(t._st, bad, b"v") == lib.MDBPY_BADKEY
                assert _ffi._tput_len(t._st, bad, b"v") == lib.MDBPY_BADKEY
    finally:
        env.close()


@pytest.mark.parametrize("kind", [bytearray, memoryview, "subclass"])
def test_keys_that_are_not_exactly_bytes_take_the_slow_path(env, kind):
    """Only exact bytes objects reach the length-reading calls; anything else with the
    buffer protocol (and a bytes subclass) still stores and reads the right record."""

    class B(bytes):
        pass

    wrap = B if kind == "subclass" else kind
    with env.begin(write=True) as t:
        assert t.put(wrap(b"key-1"), wrap(b"value-1"))
        assert t.get(wrap(b"key-1")) == b"value-1"
        assert t.get(b"key-1") == b"value-1"
        c = t.cursor()
        assert c.put(wrap(b"key-2"), wrap(b"v2")) and c.key() == b"key-2"
        assert t.delete(wrap(b"key-1")) and t.get(b"key-1") is None
