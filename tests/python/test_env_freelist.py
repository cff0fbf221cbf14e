"""Environment.freelist() (mdbcore_freelist_env) on both backends.

The oracle is Debian's LMDB: its mdb_stat -fff prints the same free list (record header,
per-transaction page counts, the pages as runs), read by LMDB's own code. Files written
by real LMDB (py-lmdb) are read too. A damaged free DB raises CorruptedError.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import lmdb
import pytest

import mdb

MDB_STAT = shutil.which("mdb_stat")
_HEADER = {
    "Tree depth": "depth",
    "Branch pages": "branch_pages",
    "Leaf pages": "leaf_pages",
    "Overflow pages": "overflow_pages",
    "Entries": "entries",
}


@pytest.fixture
def core(lm):
    if not lm.backend_features["check"]:
        pytest.skip("freelist() needs the mdb core (this build links the system liblmdb)")
    return lm


def churn(env, rounds=5, n=400):
    """Commits that overwrite and delete, and one that drops a database of big values."""
    big = env.open_db(b"big")
    with env.begin(write=True) as t:
        for i in range(300):
            t.put(b"b%05d" % i, b"B" * 5000, db=big)
    for r in range(rounds):
        with env.begin(write=True) as t:
            for i in range(n):
                t.put(b"k%05d" % i, b"%d" % r * 60)
            for i in range(0, n, 3 + r):
                t.delete(b"k%05d" % i)
    with env.begin(write=True) as t:
        t.drop(big, delete=True)
    with env.begin(write=True) as t:
        t.put(b"after", b"drop")


def lmdb_view(path):
    """mdb_stat -fff's free list: the header numbers, [(txnid, npages, pages)], total."""
    text = subprocess.run(
        [MDB_STAT, "-fff", str(path)], capture_output=True, text=True, check=True
    ).stdout
    section = text.split("Freelist Status", 1)[1].split("Status of", 1)[0]
    head: dict[str, int] = {}
    txns: list[tuple[int, int, list[int]]] = []
    total = None
    for line in section.splitlines():
        m = re.match(r"\s+(" + "|".join(_HEADER) + r"): (\d+)$", line)
        if m:
            head[_HEADER[m.group(1)]] = int(m.group(2))
            continue
        m = re.match(r"\s+Transaction (\d+), (\d+) pages", line)
        if m:
            txns.append((int(m.group(1)), int(m.group(2)), []))
            continue
        m = re.match(r"\s+(\d+)(?:\[(\d+)\])?$", line)
        if m:
            first, n = int(m.group(1)), int(m.group(2) or 1)
            txns[-1][2].extend(range(first, first + n))
            continue
        m = re.match(r"\s+Free pages: (\d+)$", line)
        if m:
            total = int(m.group(1))
    return head, txns, total


@pytest.mark.skipif(MDB_STAT is None, reason="needs Debian's mdb_stat (lmdb-utils)")
def test_matches_real_lmdb_mdb_stat(core, tmp_path):
    path = tmp_path / "env"
    env = core.open(str(path), map_size=1 << 26, max_dbs=4)
    churn(env)
    fl = env.freelist()
    env.close()
    head, txns, total = lmdb_view(path)
    assert {k: fl[k] for k in _HEADER.values()} == head
    assert fl["free_pages"] == total == sum(len(t["pages"]) for t in fl["txns"])
    assert [(t["txnid"], len(t["pages"])) for t in fl["txns"]] == [(t, n) for t, n, _ in txns]
    assert [sorted(t["pages"]) for t in fl["txns"]] == [sorted(p) for _t, _n, p in txns]
    # pages as stored: descending; the drop made a record on overflow pages
    assert all(t["pages"] == sorted(t["pages"], reverse=True) for t in fl["txns"])
    assert fl["overflow_pages"] > 0 and fl["entries"] == len(fl["txns"]) >= 2


@pytest.mark.skipif(MDB_STAT is None, reason="needs Debian's mdb_stat (lmdb-utils)")
def test_reads_a_file_written_by_real_lmdb(core, tmp_path):
    path = tmp_path / "real"
    real = lmdb.open(str(path), map_size=1 << 26, max_dbs=4)
    churn(real)
    real.close()
    env = core.open(str(path), readonly=True, max_dbs=4)
    fl = env.freelist()
    env.close()
    head, txns, total = lmdb_view(path)
    assert {k: fl[k] for k in _HEADER.values()} == head
    assert fl["free_pages"] == total > 0
    assert [(t["txnid"], sorted(t["pages"])) for t in fl["txns"]] == [
        (t, sorted(p)) for t, _n, p in txns
    ]


def test_empty_and_no_reader_left(core, tmp_path):
    env = core.open(str(tmp_path / "e"), map_size=1 << 22)
    assert env.freelist() == {
        "depth": 0,
        "branch_pages": 0,
        "leaf_pages": 0,
        "overflow_pages": 0,
        "entries": 0,
        "free_pages": 0,
        "txns": [],
    }
    with env.begin(write=True) as t:
        t.put(b"a", b"1")
    with env.begin(write=True) as t:
        t.put(b"a", b"2")
    fl = env.freelist()
    assert fl["free_pages"] > 0 and [t["txnid"] for t in fl["txns"]] == [2]
    # the read txn it took is gone: no slot holds a snapshot
    assert all(r["txnid"] is None for r in env.readers(detail=True))
    env.close()
    with pytest.raises(mdb.Error):
        env.freelist()


def _free_root(data: bytes) -> tuple[int, int]:
    """(page size, free DB root) of the newest meta (format.h's meta layout)."""
    psize = struct.unpack_from("=I", data, 40)[0]
    metas = []
    for off in (0, psize):
        root = struct.unpack_from("=Q", data, off + 80)[0]
        txnid = struct.unpack_from("=Q", data, off + 144)[0]
        metas.append((txnid, root))
    return psize, max(metas)[1]


def _three_commits(core, tmp_path):
    """A file of three commits over the same 200 keys (so its free DB holds records): its
    path, data file, bytes, page size and the free DB's root page number."""
    path = tmp_path / "d"
    env = core.open(str(path), map_size=1 << 22)
    for r in range(3):
        with env.begin(write=True) as t:
            for i in range(200):
                t.put(b"k%04d" % i, b"%d" % r * 40)
    env.close()
    data_file = path / "data.mdb"
    raw = bytearray(data_file.read_bytes())
    psize, root = _free_root(bytes(raw))
    return path, data_file, raw, psize, root


def test_damaged_free_db_raises(core, tmp_path):
    path, data_file, raw, psize, root = _three_commits(core, tmp_path)
    assert root != (1 << 64) - 1
    sound = bytes(raw)
    struct.pack_into("=H", raw, root * psize + 16, psize + 2)  # a node offset past the page
    data_file.write_bytes(bytes(raw))
    env = core.open(str(path), readonly=True)
    with pytest.raises(mdb.CorruptedError, match=rf"does not hold up: page {root}: "):
        env.freelist()
    env.close()
    # a broken root page header is found when the metas are judged at open: the older
    # meta, whose free DB is another page, is used
    raw = bytearray(sound)
    struct.pack_into("=H", raw, root * psize + 12, psize + 2)  # lower past the page
    data_file.write_bytes(bytes(raw))
    env = core.open(str(path), readonly=True)
    assert env.info()["meta"]["fallback"]
    assert isinstance(env.freelist(), dict)
    env.close()


def test_a_free_record_counting_past_its_room_is_reported(core, tmp_path):
    """The record's count says more pages than its value holds: the free-list reader
    refuses it, the checker reports it, both in the same words."""
    path, data_file, raw, psize, root = _three_commits(core, tmp_path)
    assert struct.unpack_from("=H", raw, root * psize + 10)[0] & 0x02  # a leaf
    node = root * psize + struct.unpack_from("=H", raw, root * psize + 16)[0]
    dsize, flags, ksize = struct.unpack_from("=IHH", raw, node)
    assert flags == 0 and ksize == 8 and dsize >= 16  # in place: [count, pgno...]
    txnid = struct.unpack_from("=Q", raw, node + 8)[0]
    struct.pack_into("=Q", raw, node + 8 + ksize, 1000)
    data_file.write_bytes(bytes(raw))
    said = f"free record {txnid}: count 1000 but room for {dsize // 8 - 1}"
    env = core.open(str(path), readonly=True)
    with pytest.raises(mdb.CorruptedError, match=re.escape(said)):
        env.freelist()
    rep = env.check()
    assert not rep["ok"] and said in [p["msg"] for p in rep["problems"]], rep["problems"]
    env.close()


def test_without_the_core_raises(lm, env):
    if lm.backend_features["check"]:
        assert isinstance(env.freelist(), dict)
    else:
        with pytest.raises(mdb.Error, match="mdb core"):
            env.freelist()
