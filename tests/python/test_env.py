"""Environment: open keywords, introspection, close, copy, resize, dbs."""

from __future__ import annotations

import os

import pytest

import mdb


def test_open_creates_files(lm, tmp_path):
    p = tmp_path / "e"
    env = lm.open(str(p))
    assert (p / "data.mdb").exists() and (p / "lock.mdb").exists()
    assert env.path() == str(p)
    env.close()


def test_open_nosubdir(lm, tmp_path):
    p = tmp_path / "file.mdb"
    env = lm.open(str(p), subdir=False)
    assert p.exists() and (tmp_path / "file.mdb-lock").exists()
    assert env.flags()["subdir"] is False
    env.close()


def test_create_false_missing_dir(lm, tmp_path):
    with pytest.raises(mdb.Error):
        lm.open(str(tmp_path / "missing"), create=False)


def test_flags_reflect_keywords(lm, tmp_path):
    env = lm.open(
        str(tmp_path / "e"),
        sync=False,
        metasync=False,
        readahead=False,
        writemap=True,
        meminit=False,
        map_async=True,
    )
    f = env.flags()
    assert f == {
        "subdir": True,
        "readonly": False,
        "metasync": False,
        "sync": False,
        "map_async": True,
        "readahead": False,
        "writemap": True,
        "meminit": False,
        "lock": True,
    }
    env.close()


def test_stat_info(env):
    with env.begin(write=True) as t:
        for i in range(100):
            t.put(b"%04d" % i, b"v")
    st = env.stat()
    assert st["entries"] == 100 and st["psize"] >= 4096
    info = env.info()
    assert info["map_size"] == 64 << 20 and info["last_txnid"] >= 1
    assert env.max_readers() == 126
    assert env.max_key_size() == 511


def test_readonly_env(lm, tmp_path):
    p = str(tmp_path / "e")
    e = lm.open(p)
    with e.begin(write=True) as t:
        t.put(b"a", b"b")
    e.close()
    ro = lm.open(p, readonly=True)
    assert ro.begin().get(b"a") == b"b"
    with pytest.raises(mdb.ReadonlyError):
        ro.begin(write=True)
    ro.close()


def test_duplicate_open_refused(lm, env, tmp_path):
    with pytest.raises(mdb.Error, match="already open"):
        lm.open(str(tmp_path / "db"))


def test_reopen_after_close(lm, tmp_path):
    p = str(tmp_path / "e")
    e = lm.open(p)
    e.close()
    e2 = lm.open(p)
    e2.close()


def test_close_idempotent_and_errors(env):
    txn = env.begin(write=True)
    cur = txn.cursor()
    env.close()
    env.close()
    for fn in (env.stat, env.info, env.flags, lambda: txn.get(b"a"), txn.commit, cur.first):
        with pytest.raises(mdb.Error) as ei:
            fn()
        assert str(ei.value) == "Attempt to operate on closed/deleted/dropped object."
        assert ei.value.code == 0
    txn.abort()  # idempotent, never raises on a dead txn


def test_context_manager_closes(lm, tmp_path):
    with lm.open(str(tmp_path / "e")) as e:
        e.stat()
    with pytest.raises(mdb.Error):
        e.stat()


def test_open_db_and_dbs(env):
    a = env.open_db(b"a")
    b = env.open_db(b"b", dupsort=True)
    assert env.open_db(b"a") is a
    assert b.flags()["dupsort"] and not a.flags()["dupsort"]
    assert sorted(env.dbs()) == [b"a", b"b"]
    with pytest.raises(TypeError):
        env.open_db("str-name")
    with pytest.raises(ValueError):
        env.open_db(None, dupsort=True)


def test_open_db_flags(env):
    d = env.open_db(b"i", integerdup=True)
    assert d.flags() == {
        "reverse_key": False,
        "dupsort": True,
        "integerkey": False,
        "integerdup": True,
        "dupfixed": True,
    }


def test_dbs_full(lm, tmp_path):
    e = lm.open(str(tmp_path / "e"), max_dbs=1)
    e.open_db(b"one")
    with pytest.raises(mdb.DbsFullError, match="max_dbs"):
        e.open_db(b"two")
    e.close()


def test_copy_and_copyfd(env, lm, tmp_path):
    with env.begin(write=True) as t:
        t.put(b"k", b"v")
    dst = tmp_path / "copy"
    dst.mkdir()
    env.copy(str(dst), compact=True)
    c = lm.open(str(dst))
    assert c.begin().get(b"k") == b"v"
    c.close()
    with open(tmp_path / "fdcopy", "wb") as f:
        env.copyfd(f.fileno())
    assert os.path.getsize(tmp_path / "fdcopy") > 0
    with pytest.raises(TypeError):
        env.copy(str(dst), txn=env.begin())


def test_set_mapsize_grows(lm, tmp_path):
    e = lm.open(str(tmp_path / "e"), map_size=1 << 20)
    with pytest.raises(mdb.MapFullError):
        with e.begin(write=True) as t:
            for i in range(20000):
                t.put(b"%08d" % i, b"x" * 100)
    e.set_mapsize(64 << 20)
    with e.begin(write=True) as t:
        for i in range(20000):
            t.put(b"%08d" % i, b"x" * 100)
    assert e.stat()["entries"] == 20000
    e.close()


def test_set_mapsize_refused_with_write_txn(env):
    t = env.begin(write=True)
    with pytest.raises(mdb.Error):
        env.set_mapsize(128 << 20)
    t.abort()


def test_set_mapsize_invalidates_readers(env):
    r = env.begin()
    env.set_mapsize(128 << 20)
    with pytest.raises(mdb.Error):
        r.get(b"x")


def test_sync_readers(env):
    env.sync(True)
    txn = env.begin()
    assert "pid" in env.readers()
    assert env.reader_check() == 0
    txn.abort()


def test_check_feature_flag(lm, env):
    if lm.backend_features["check"]:
        with env.begin(write=True) as t:
            for i in range(2000):
                t.put(b"%06d" % i, b"x" * 50)
        report = env.check()
        assert report["ok"] is True and report["problems"] == []
        main = [d for d in report["dbs"] if d["name"] == "@main"][0]
        assert main["entries"] == 2000 and report["leaked_pages"] == 0
        assert "snapshot" in report["text"]
    else:
        with pytest.raises(mdb.Error, match="mdb core"):
            env.check()


def test_version():
    v = mdb.version()
    assert len(v) == 3 and v[0] == 0 and v[1] == 9
    assert len(mdb.version(subpatch=True)) == 4
    with pytest.raises(mdb.Error):
        mdb.version(lib_version=1)


def test_txn_of_another_env_rejected(lm, env, tmp_path):
    other = lm.open(str(tmp_path / "other"), max_dbs=2)
    t = other.begin(write=True)
    with pytest.raises(mdb.InvalidParameterError):
        env.open_db(b"x", txn=t)
    with pytest.raises(mdb.InvalidParameterError):
        env.dbs(txn=t)
    with pytest.raises(mdb.InvalidParameterError):
        env.begin(write=True, parent=t)
    db = env.open_db(b"mine")
    with pytest.raises(mdb.InvalidParameterError):
        t.get(b"k", db=db)
    t.abort()
    other.close()
