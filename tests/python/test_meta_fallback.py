"""A damaged newer meta page (src/mdbcore/meta.c): the open falls back to the older one.

The newer meta's magic is broken (what a torn write or a flipped block can leave): both
backends open the older snapshot, read exactly its records, and report it in
``Environment.info()["meta"]`` (fallback, damaged page, why); the structural checker
passes; a read-only environment leaves the file as it was; the next commit rewrites the
damaged page and a fresh open finds both pages sound. Both pages damaged: InvalidError.
The byte-level cases (every tear boundary, random damage, failed meta writes) are in
tests/c/core/test_meta_torn.c.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mdb


@pytest.fixture(autouse=True)
def _needs_core() -> None:
    if not mdb.backend_features["check"]:
        pytest.skip("info()['meta'] needs the mdb core")


def _build(lm: Any, path: Path) -> tuple[list[dict[bytes, bytes]], int, int]:
    """Five commits; returns the records after each, the newest txnid and the page size."""
    env = lm.open(str(path), map_size=16 << 20)
    states = []
    for r in range(5):
        with env.begin(write=True) as txn:
            for i in range(40):
                txn.put(b"k%03d" % ((r * 17 + i) % 90), b"v%d" % r)
            if r % 2:
                txn.delete(b"k%03d" % r)
        with env.begin() as txn:
            states.append(dict(txn.cursor()))
    last = env.info()["last_txnid"]
    psize = env.stat()["psize"]
    env.close()
    return states, last, psize


def _records(env: Any) -> dict[bytes, bytes]:
    with env.begin() as txn:
        return dict(txn.cursor())


def test_newer_meta_damaged_opens_older_and_heals(lm: Any, tmp_path: Path) -> None:
    path = tmp_path / "db"
    states, last, psize = _build(lm, path)
    data = path / "data.mdb"
    raw = bytearray(data.read_bytes())
    slot = last & 1
    raw[slot * psize + 16] ^= 0x5A  # the magic of the newer meta
    data.write_bytes(bytes(raw))
    (path / "lock.mdb").unlink()

    env = lm.open(str(path), readonly=True)
    meta = env.info()["meta"]
    assert meta["fallback"] and meta["damaged"] and not meta["healed"]
    assert meta["damaged_page"] == slot and meta["page"] == 1 - slot
    assert meta["txnid"] == last - 1 == env.info()["last_txnid"]
    assert meta["reason"] == "bad magic"
    assert _records(env) == states[-2]
    assert env.stat()["entries"] == len(states[-2])
    assert env.check()["ok"]
    env.close()
    assert data.read_bytes() == bytes(raw)  # read-only: nothing written

    env = lm.open(str(path))
    with env.begin(write=True) as txn:
        txn.put(b"new", b"1")
    meta = env.info()["meta"]
    assert meta["healed"] and not meta["damaged"] and not meta["fallback"]
    assert meta["txnid"] == last
    env.close()
    env = lm.open(str(path), readonly=True)
    meta = env.info()["meta"]
    assert meta["flags"] == 0 and meta["damaged_page"] is None
    assert _records(env) == {**states[-2], b"new": b"1"}
    assert env.check()["ok"]
    env.close()


def test_both_metas_damaged_is_invalid(lm: Any, tmp_path: Path) -> None:
    path = tmp_path / "db"
    _, _, psize = _build(lm, path)
    data = path / "data.mdb"
    raw = bytearray(data.read_bytes())
    raw[16] ^= 0x5A
    raw[psize + 16] ^= 0x5A
    data.write_bytes(bytes(raw))
    with pytest.raises(mdb.InvalidError):
        lm.open(str(path), readonly=True)


def test_sound_file_reports_nothing(lm: Any, tmp_path: Path) -> None:
    path = tmp_path / "db"
    _, last, _ = _build(lm, path)
    env = lm.open(str(path), readonly=True)
    meta = env.info()["meta"]
    assert meta == {
        "flags": 0,
        "damaged": False,
        "fallback": False,
        "healed": False,
        "page": last & 1,
        "txnid": last,
        "damaged_page": None,
        "damaged_txnid": None,
        "reason": None,
    }
    env.close()
