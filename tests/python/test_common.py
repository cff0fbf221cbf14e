"""mdb._common: the cold code both backends share.

Both backends build their flags/stat/info/readers dicts, map Environment()'s keywords to
open flags, check their arguments and find the map through mdb._common; these tests pin
that the two answer alike and that the shared pieces do what they say.
"""

from __future__ import annotations

import os

import pytest

import mdb
from mdb import _common

FLAG_KEYWORDS = ("metasync", "sync", "map_async", "readahead", "writemap", "meminit")


def test_flag_values_are_checked_against_the_backend():
    good = {n: getattr(_common, n) for n in _common.CONSTANTS}
    _common.check_constants("test", good)
    bad = dict(good, MDB_DUPSORT=good["MDB_DUPSORT"] << 1)
    with pytest.raises(ImportError, match="MDB_DUPSORT"):
        _common.check_constants("test", bad)
    with pytest.raises(ImportError, match="MDB_NOLOCK"):
        _common.check_constants("test", {k: v for k, v in good.items() if k != "MDB_NOLOCK"})


def test_cffi_flag_values_match(lm):
    if lm.backend != "cffi":
        pytest.skip("the cffi backend's lib exposes its constants")
    from mdb._cffi._ffi import lib

    for name in _common.CONSTANTS:
        assert getattr(lib, name) == getattr(_common, name), name


@pytest.mark.parametrize("off", [None, *FLAG_KEYWORDS])
def test_open_keywords_come_back_from_flags(lm, tmp_path, off):
    kw = {k: (k in ("metasync", "sync", "readahead", "meminit")) for k in FLAG_KEYWORDS}
    if off is not None:
        kw[off] = not kw[off]
    env = lm.open(str(tmp_path / "db"), **kw)
    try:
        f = env.flags()
        assert {k: f[k] for k in FLAG_KEYWORDS} == kw
        assert f["subdir"] and f["lock"] and not f["readonly"]
        assert f == _common.env_flags_dict(_common.open_flags(True, False, lock=True, **kw))
    finally:
        env.close()


def test_open_flags_are_inverse_of_flags_dict():
    names = ("subdir", "readonly", "metasync", "sync", "map_async") + (
        "readahead",
        "writemap",
        "meminit",
        "lock",
    )
    for i in range(1 << len(names)):
        kw = {n: bool(i >> b & 1) for b, n in enumerate(names)}
        f = _common.open_flags(**kw)
        assert f & _common.MDB_NOTLS
        assert _common.env_flags_dict(f) == kw


def test_db_flags(lm, env):
    cases = {
        b"plain": {},
        b"rev": {"reverse_key": True},
        b"dup": {"dupsort": True},
        b"int": {"integerkey": True},
        b"idup": {"integerdup": True},
        b"fixed": {"dupfixed": True},
    }
    for name, kw in cases.items():
        got = env.open_db(name, **kw).flags()
        want = {k: kw.get(k, False) for k in got}
        if kw.get("integerdup") or kw.get("dupfixed"):  # imply dupsort (and dupfixed)
            want["dupsort"] = want["dupfixed"] = True
        assert got == want, name
        assert got == _common.db_flags_dict(
            _common.db_open_flags(**{k: kw.get(k, False) for k in got})
        )


def test_reports_have_the_same_keys_in_both_backends(tmp_path):
    shapes = {}
    for name in mdb.BACKENDS:
        try:
            b = mdb.get_backend(name)
        except ImportError:
            pytest.skip(f"backend {name} not built")
        env = b.open(str(tmp_path / name), max_dbs=2)
        try:
            with env.begin(write=True) as t:
                t.put(b"k", b"v")
                tstat = t.stat()
            with env.begin():
                readers = env.readers(detail=True) if b.backend_features["check"] else []
                info = env.info()
            shapes[name] = (
                list(env.stat()),
                list(tstat),
                list(info),
                list(env.flags()),
                [list(r) for r in readers],
                [type(v) for v in info.values()],
            )
            assert tstat["entries"] == 1 and info["num_readers"] >= 1
        finally:
            env.close()
    assert shapes["cext"] == shapes["cffi"]


def test_reader_dict_maps_unknown_fields_to_none():
    ones = (1 << 64) - 1
    row = _common.reader_dict(7, 8, ones, 0, ones)
    assert row == {"pid": 7, "thread": 8, "txnid": None, "age": 0, "pages_held": None}
    assert _common.reader_dict(7, 8, 9, 3, 2)["pages_held"] == 2


@pytest.mark.parametrize(
    "bad, exc",
    [
        ({"map_size": -1}, OverflowError),
        ({"map_size": 1 << 64}, OverflowError),
        ({"map_size": "big"}, TypeError),
        ({"max_readers": 1 << 32}, OverflowError),
        ({"max_dbs": -2}, OverflowError),
        ({"max_dbs": 1.5}, TypeError),
        ({"lib_version": 1}, mdb.Error),
        ({"lib_version": -1}, OverflowError),
        ({"lib_version": "0"}, TypeError),
    ],
)
def test_environment_argument_checks(lm, tmp_path, bad, exc):
    with pytest.raises(exc) as info:
        lm.open(str(tmp_path / "db"), **bad)
    assert str(info.value).startswith(next(iter(bad)))  # the checks of mdb._common
    assert not os.path.exists(tmp_path / "db" / "data.mdb")


def test_version_checks_lib_version_as_environment_does():
    assert mdb.version(lib_version=0) == mdb.version()
    with pytest.raises(mdb.Error, match="LMDB 0.9"):
        mdb.version(lib_version=1)
    with pytest.raises(OverflowError):
        mdb.version(lib_version=-1)
    with pytest.raises(TypeError):  # as py-lmdb's
        mdb.version(lib_version="1")


def test_set_mapsize_argument_check(lm, env):
    with pytest.raises(OverflowError, match="map_size"):
        env.set_mapsize(-1)
    with pytest.raises(TypeError, match="map_size"):
        env.set_mapsize("1")


def test_map_range_finds_the_data_file(lm, env, tmp_path):
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    fd = os.open(tmp_path / "db" / "data.mdb", os.O_RDONLY)
    try:
        lo, hi = _common.map_range(fd)
        if not os.path.exists("/proc/self/maps"):
            assert (lo, hi) == (0, 0)
            return
        assert lo and hi - lo >= 64 << 20  # the whole map_size is mapped
    finally:
        os.close(fd)
    other = os.open(__file__, os.O_RDONLY)  # a file nobody mapped
    try:
        assert _common.map_range(other) == (0, 0)
    finally:
        os.close(other)
