"""Readers opened plainly follow a map that another process grew, on both backends.

A reader process opened with ``mdb.open(path, readonly=True)`` (no ``max_map_size``)
takes snapshots in two threads while a writer process grows an 8 MiB map to 512 MiB:
ours with ``max_map_size`` (the map grows by itself), ours and py-lmdb (real LMDB
0.9.36) the LMDB way (on MapFullError, ``set_mapsize`` with twice the size).  Every
snapshot is checked (the record count, the hot records rewritten by every txn, the last
txn's values against the crc32 it stored, sampled older values), and the reader must
never see MapResizedError.  Zero-copy values read before the growth stay valid: those
of a txn kept open keep their bytes, and one from a txn that ended can still be read
(the map is never unmapped under them, so the interpreter does not crash).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import mdb

MIB = 1 << 20
TARGET = 512 * MIB

# The data model, shared by the writers and the reader (follow_data.h's, in Python):
# txn t puts BATCH records of VLEN bytes whose content follows from their number,
# rewrites HOT records with t, and puts "state" = "<records> <t> <crc32 of the batch>".
COMMON = textwrap.dedent("""
    import zlib
    BATCH, VLEN, HOT = 64, 16000, 16

    def value(n):
        return (b"%08d" % n) * (VLEN // 8)

    def put_txn(txn, t):
        crc = 0
        for n in range(t * BATCH, (t + 1) * BATCH):
            v = value(n)
            crc = zlib.crc32(v, crc)
            txn.put(b"r%08d" % n, v)
        for j in range(HOT):
            txn.put(b"h%02d" % j, b"hot %d" % t)
        txn.put(b"state", b"%d %d %d" % ((t + 1) * BATCH, t, crc))
""")

WRITER = COMMON + textwrap.dedent("""
    import sys
    kind, backend, path, target = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if kind == "lmdb":
        import lmdb as lm
        full = lm.MapFullError
        env = lm.open(path, map_size=8 << 20, sync=False)
    else:
        import mdb
        lm = mdb.get_backend(backend)
        full = mdb.errors.MapFullError
        bound = 1 << 30 if kind == "bound" else None
        env = lm.open(path, map_size=8 << 20, max_map_size=bound, sync=False)
    t = 0
    while True:
        try:
            with env.begin(write=True) as txn:
                put_txn(txn, t)
        except full:
            if kind == "bound":
                raise
            env.set_mapsize(env.info()["map_size"] * 2)
            continue
        t += 1
        if env.info()["map_size"] >= target:
            break
    print(t, env.info()["map_size"])
    env.close()
""")

READER = COMMON + textwrap.dedent("""
    import json, os, random, sys, threading, time
    import mdb
    lm = mdb.get_backend(sys.argv[1])
    path, stop = sys.argv[2], sys.argv[3]
    env = lm.open(path, readonly=True)
    first_map = env.info()["map_size"]

    def snapshot(rng, stats):
        with env.begin() as txn:
            state = txn.get(b"state")
            n, t, crc = map(int, state.split())
            assert n == (t + 1) * BATCH, state
            entries = txn.stat()["entries"]
            assert entries == n + HOT + 1, (t, entries)
            for j in range(HOT):
                assert txn.get(b"h%02d" % j) == b"hot %d" % t, (t, j)
            got = 0
            for i in range(t * BATCH, n):
                got = zlib.crc32(txn.get(b"r%08d" % i), got)
            assert got == crc, t
            for i in rng.sample(range(n), 4):
                assert txn.get(b"r%08d" % i) == value(i), (t, i)
        stats["snaps"] += 1
        stats["map"] = max(stats["map"], env.info()["map_size"])

    # zero-copy values from before the growth: one of a txn that ended, and some of a
    # txn kept open to the end
    with env.begin(buffers=True) as txn:
        stale = txn.get(b"r00000000")
    held_txn = env.begin(buffers=True)
    held = [held_txn.get(b"r%08d" % i) for i in range(4)]
    copies = [bytes(v) for v in held]
    print("ready", flush=True)

    errors = []
    def run(seed, stats):
        rng = random.Random(seed)
        try:
            until = time.time() + 150
            while not os.path.exists(stop) and time.time() < until:
                snapshot(rng, stats)
            snapshot(rng, stats)  # after the writer finished
        except BaseException as exc:
            errors.append(repr(exc))
    stats = [{"snaps": 0, "map": 0} for _ in range(2)]
    threads = [threading.Thread(target=run, args=(i, stats[i])) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    same = [bytes(v) == c for v, c in zip(held, copies)]
    held_txn.abort()
    stale_len = len(bytes(stale))  # still mapped: reading it must not crash
    print(json.dumps({
        "errors": errors, "snaps": [s["snaps"] for s in stats],
        "map": max(s["map"] for s in stats), "first_map": first_map,
        "held_same": same, "stale_len": stale_len,
        "held_types": sorted({type(v).__name__ for v in held}),
    }))
""")


def make_env(lm, path: str) -> None:
    ns: dict = {}
    exec(COMMON, ns)
    env = lm.open(path, map_size=8 * MIB, sync=False)
    with env.begin(write=True) as txn:
        ns["put_txn"](txn, 0)
    env.close()


@pytest.mark.parametrize("writer", ["bound", "set_mapsize", "lmdb"])
def test_plain_reader_follows_a_map_grown_to_512mib(lm, tmp_path, writer):
    if writer == "lmdb":
        pytest.importorskip("lmdb")
    if writer == "bound" and not mdb.backend_features.get("check"):
        pytest.skip("max_map_size needs the mdb core")
    path, stop = str(tmp_path / "env"), str(tmp_path / "stop")
    make_env(lm, path)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, lm.backend, path, stop],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "ready", reader.stderr
        w = subprocess.run(
            [sys.executable, "-c", WRITER, writer, lm.backend, path, str(TARGET)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert w.returncode == 0, w.stderr
        txns, grown = map(int, w.stdout.split())
    finally:
        open(stop, "w").close()
        out, err = reader.communicate(timeout=200)
    assert reader.returncode == 0, err  # a crash (SIGSEGV) is a negative returncode
    report = json.loads(out)
    assert report["errors"] == [], report["errors"]
    assert report["first_map"] <= 10 * MIB  # map_size defaults to 10 MiB, as in py-lmdb
    assert grown >= TARGET
    assert report["map"] == grown  # the last snapshot saw the whole grown map
    assert min(report["snaps"]) >= 5
    assert report["held_same"] == [True] * 4
    assert report["held_types"] == ["memoryview"]
    assert report["stale_len"] == 16000
    print(f"{writer} writer: {txns} txns to {grown // MIB} MiB; reader: {report['snaps']}")


def test_zero_copy_values_come_from_the_reserved_map(lm, tmp_path):
    """Values in the part of the map grown to follow the file are still zero-copy."""
    if not mdb.backend_features.get("check"):
        pytest.skip("the reservation is the mdb core's")
    path = str(tmp_path / "zc")
    make_env(lm, path)
    reader = lm.open(path, readonly=True)
    assert reader.info()["map_size"] == 10 * MIB
    w = subprocess.run(
        [sys.executable, "-c", WRITER, "bound", lm.backend, path, str(32 * MIB)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert w.returncode == 0, w.stderr
    with reader.begin(buffers=True) as txn:
        n = int(bytes(txn.get(b"state")).split()[0])
        v = txn.get(b"r%08d" % (n - 1))  # written last: past the first 10 MiB
        assert bytes(v) == (b"%08d" % (n - 1)) * 2000
        assert not isinstance(v.obj, bytes)  # a view of the map, not a copy
    assert reader.info()["map_size"] >= 32 * MIB
    reader.close()


def test_lmdb_behaviour_for_real_lmdb_readers(lm, tmp_path):
    """Real LMDB processes keep LMDB's behaviour: MapResizedError, then set_mapsize(0)."""
    lmdb = pytest.importorskip("lmdb")
    path = str(tmp_path / "real")
    make_env(lm, path)
    other = lmdb.open(path, readonly=True, lock=True, map_size=0)
    writer = lm.open(path, map_size=8 * MIB, sync=False)
    ns: dict = {}
    exec(COMMON, ns)
    for t in range(1, 20):
        while True:
            try:
                with writer.begin(write=True) as txn:
                    ns["put_txn"](txn, t)
                break
            except mdb.errors.MapFullError:
                writer.set_mapsize(writer.info()["map_size"] * 2)
    with pytest.raises(lmdb.MapResizedError):
        other.begin()
    other.set_mapsize(0)
    with other.begin() as txn:
        assert txn.get(b"state").split()[1] == b"19"
    other.close()
    writer.close()
