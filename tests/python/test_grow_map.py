"""A map that grows by itself (issue 13 part 1), on both backends.

``mdb.open(path, map_size=8 MiB, max_map_size=1 GiB)`` takes 300 MiB of puts with no
MapFullError while reader processes of ours read consistent snapshots throughout; the new
size is in the meta page (a later open without a bound maps it, real mdb_dump reads every
record); py-lmdb (real LMDB 0.9.36) with the environment open meanwhile sees the enlarged
map as LMDB always does (MapResizedError, then set_mapsize(0)).  Without a bound the same
load raises MapFullError.  Zero-copy values from the grown part of the map are served
from the map.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import mdb
import mdb.errors as errors

pytestmark = pytest.mark.skipif(
    not mdb.backend_features.get("check"), reason="max_map_size needs the mdb core"
)

MIB = 1 << 20
VALUE = 1024
PER_TXN = 100


def load(env, first: int, txns: int) -> None:
    for t in range(first, first + txns):
        with env.begin(write=True) as txn:
            for i in range(PER_TXN):
                n = t * PER_TXN + i
                txn.put(b"k%08d" % n, bytes([97 + n % 26]) * VALUE)
            txn.put(b"count", b"%d" % ((t + 1) * PER_TXN))


READER = textwrap.dedent("""
    import os, sys, time
    import mdb
    lm = mdb.get_backend(sys.argv[1])
    path, stop, bound = sys.argv[2], sys.argv[3], int(sys.argv[4])
    env = lm.open(path, readonly=True, max_map_size=bound or None, map_size=0)
    snaps = biggest = 0
    until = time.time() + 120
    while not os.path.exists(stop) and time.time() < until:
        with env.begin() as txn:
            c = txn.get(b"count")
            if c is not None:
                n = int(c)
                assert txn.stat()["entries"] == n + 1, (n, txn.stat())
                v = txn.get(b"k%08d" % (n - 1))
                assert v == bytes([97 + (n - 1) % 26]) * 1024
        biggest = max(biggest, env.info()["map_size"])
        snaps += 1
    print(snaps, biggest)
""")


def test_8mib_map_takes_300mib_with_readers_throughout(lm, tmp_path):
    path = str(tmp_path / "grow")
    env = lm.open(path, map_size=8 * MIB, max_map_size=1024 * MIB, sync=False)
    load(env, 0, 1)
    stop = str(tmp_path / "stop")
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, lm.backend, path, stop, str(1024 * MIB)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        load(env, 1, 3099)  # 3,100 txns of 100 KiB: 302 MiB of values
        grown = env.info()["map_size"]
    finally:
        open(stop, "w").close()
        outs = [r.communicate(timeout=180) for r in readers]
    for r, (out, err) in zip(readers, outs):
        assert r.returncode == 0, err
        snaps, biggest = map(int, out.split())
        assert snaps >= 20
        assert biggest > 8 * MIB  # followed the growth, with no error
    assert 300 * MIB <= grown <= 1024 * MIB
    with env.begin() as txn:
        assert txn.stat()["entries"] == 310_001
    env.close()
    # the size is in the meta page: an open without a bound maps it all
    again = lm.open(path, readonly=True, map_size=0)
    assert again.info()["map_size"] == grown
    with again.begin() as txn:
        assert txn.get(b"k00309999") == bytes([97 + 309_999 % 26]) * VALUE
    again.close()
    if shutil.which("mdb_dump"):
        out = subprocess.run(["mdb_dump", path], capture_output=True, check=True).stdout
        body = out.split(b"HEADER=END\n", 1)[1]
        assert sum(1 for line in body.split(b"\n") if line.startswith(b" ")) == 2 * 310_001


def test_without_a_bound_the_map_fills(lm, tmp_path):
    env = lm.open(str(tmp_path / "full"), map_size=8 * MIB, sync=False)
    with pytest.raises(errors.MapFullError):
        load(env, 0, 200)
    env.close()


def test_the_bound_is_a_bound(lm, tmp_path):
    env = lm.open(str(tmp_path / "b"), map_size=1 * MIB, max_map_size=16 * MIB, sync=False)
    with pytest.raises(errors.MapFullError):
        load(env, 0, 200)  # 20 MiB of values
    assert env.info()["map_size"] <= 16 * MIB
    with env.begin() as txn:  # what committed is there
        n = int(txn.get(b"count"))
        assert n >= 100 and txn.stat()["entries"] == n + 1
    env.close()


def test_writemap_grows_the_file_with_the_map(lm, tmp_path):
    path = tmp_path / "wm"
    env = lm.open(str(path), map_size=1 * MIB, max_map_size=256 * MIB, writemap=True, sync=False)
    load(env, 0, 300)  # 30 MiB
    size = env.info()["map_size"]
    assert size >= 30 * MIB
    assert os.path.getsize(path / "data.mdb") >= size
    with env.begin() as txn:
        assert txn.stat()["entries"] == 30_001
    env.close()


def test_values_in_the_grown_map_are_zero_copy(lm, tmp_path):
    env = lm.open(str(tmp_path / "zc"), map_size=1 * MIB, max_map_size=128 * MIB, sync=False)
    load(env, 0, 50)  # 5 MiB: most of it beyond the first map
    with env.begin(buffers=True) as txn:
        v = txn.get(b"k00004999")
        assert isinstance(v, memoryview)
        assert bytes(v) == bytes([97 + 4999 % 26]) * VALUE
        assert v.readonly
    env.close()


def test_real_lmdb_sees_the_enlarged_map_as_it_always_does(lm, tmp_path):
    lmdb = pytest.importorskip("lmdb")
    path = str(tmp_path / "shared")
    env = lm.open(path, map_size=4 * MIB, max_map_size=256 * MIB, sync=False)
    load(env, 0, 1)
    other = lmdb.open(path, map_size=0, readonly=True, lock=True)
    assert other.info()["map_size"] == 4 * MIB
    load(env, 1, 199)  # 20 MiB: the map grows past what LMDB mapped
    try:
        with other.begin() as txn:
            txn.get(b"count")
        resized = False
    except lmdb.MapResizedError:
        resized = True
    if resized:
        other.set_mapsize(0)
    with other.begin() as txn:
        assert int(txn.get(b"count")) == 20_000
        assert txn.stat()["entries"] == 20_001
    assert other.info()["map_size"] == env.info()["map_size"]
    other.close()
    env.close()


def test_bad_values(lm, tmp_path):
    for bad, exc in ((-1, OverflowError), (1 << 64, OverflowError), ("1G", TypeError)):
        with pytest.raises(exc):
            lm.open(str(tmp_path / "x"), max_map_size=bad)
    with pytest.raises(errors.Error):
        lm.open(str(tmp_path / "y"), max_map_size=1 << 50)  # past 64 TiB: EINVAL
