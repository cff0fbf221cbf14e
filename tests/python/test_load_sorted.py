"""Transaction.load_sorted: bulk loading an empty database, both backends.

The database built bottom-up must hold exactly what a put loop stores, pass the structural
checker, read back identically through Debian's real mdb_dump, and use no more pages than
MDB_APPEND does.  Bad input (out of order, repeated keys, wrong item shapes, bad sizes,
an iterable that raises or that uses the transaction) raises a specific exception and
leaves the database empty, the transaction usable.
"""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
from typing import Any, Iterator

import pytest

import mdb
import mdb.errors as errors

pytestmark = pytest.mark.skipif(
    not mdb.backend_features.get("check"), reason="load_sorted needs the mdb core"
)


def records(n: int, seed: int, big_every: int = 0) -> list[tuple[bytes, bytes]]:
    r = random.Random(seed)
    keys = sorted({r.randbytes(r.randint(1, 40)) for _ in range(n)})
    out = []
    for i, k in enumerate(keys):
        size = r.randint(0, 300)
        if big_every and i % big_every == 0:
            size = r.randint(3000, 20000)  # overflow pages
        out.append((k, r.randbytes(size)))
    return out


def open_env(lm: Any, path: Any) -> Any:
    return lm.open(str(path), max_dbs=4, map_size=256 << 20)


def build(lm: Any, path: Any, recs: list[tuple[bytes, bytes]], how: str, **dbflags: Any) -> Any:
    env = open_env(lm, path)
    db = env.open_db(b"t", **dbflags)
    with env.begin(write=True, db=db) as txn:
        if how == "load":
            assert txn.load_sorted(iter(recs)) == len(recs)
        elif how == "append":
            for k, v in recs:
                assert txn.put(k, v, append=True)
        else:
            shuffled = recs[:]
            random.Random(7).shuffle(shuffled)
            for k, v in shuffled:
                assert txn.put(k, v)
    return env, db


def content(env: Any, db: Any) -> list[tuple[bytes, bytes]]:
    with env.begin(db=db) as txn:
        return [(bytes(k), bytes(v)) for k, v in txn.cursor()]


@pytest.mark.parametrize("big_every", [0, 7])
def test_same_content_as_a_put_loop_and_as_full_as_append(lm, tmp_path, big_every):
    recs = records(20_000, seed=big_every + 1, big_every=big_every)
    loaded, ldb = build(lm, tmp_path / "load", recs, "load")
    putloop, pdb = build(lm, tmp_path / "put", recs, "put")
    appended, adb = build(lm, tmp_path / "append", recs, "append")
    assert content(loaded, ldb) == recs == content(putloop, pdb)
    with loaded.begin(db=ldb) as t1, appended.begin(db=adb) as t2:
        s1, s2 = t1.stat(), t2.stat()
    assert s1["entries"] == len(recs)
    assert s1["leaf_pages"] <= s2["leaf_pages"], (s1, s2)
    assert s1["overflow_pages"] == s2["overflow_pages"]
    report = loaded.check()
    assert report["ok"], report["text"]
    for e in (loaded, putloop, appended):
        e.close()
    # reopened from disk: the same records
    again = open_env(lm, tmp_path / "load")
    assert content(again, again.open_db(b"t")) == recs
    again.close()


@pytest.mark.skipif(shutil.which("mdb_dump") is None, reason="Debian's lmdb-utils not installed")
def test_real_mdb_dump_reads_it_as_it_reads_a_put_loop(lm, tmp_path):
    recs = records(5_000, seed=3, big_every=50)
    for how in ("load", "put"):
        env, _db = build(lm, tmp_path / how, recs, how)
        env.close()
    dumps = [
        subprocess.run(
            ["mdb_dump", "-s", "t", str(tmp_path / how)], capture_output=True, check=True
        ).stdout
        for how in ("load", "put")
    ]
    assert dumps[0] == dumps[1]
    assert dumps[0].count(b"\n") > len(recs)


def test_integerkey_order_is_the_databases(lm, tmp_path):
    env = open_env(lm, tmp_path / "int")
    db = env.open_db(b"i", integerkey=True)
    nums = list(range(0, 300_000, 3))
    recs = [(struct.pack("=Q", n), b"%d" % n) for n in nums]  # ascending as integers
    with env.begin(write=True, db=db) as txn:
        assert txn.load_sorted(recs) == len(nums)
    with env.begin(db=db) as txn:
        assert txn.get(struct.pack("=Q", 299_997)) == b"299997"
        assert [struct.unpack("=Q", k)[0] for k in txn.cursor().iternext(values=False)] == nums
    # bytewise order is not this database's order: refused, nothing loaded
    db2 = env.open_db(b"j", integerkey=True)
    bytewise = sorted(recs)
    with env.begin(write=True, db=db2) as txn:
        with pytest.raises(errors.KeyExistsError):
            txn.load_sorted(bytewise)
        assert txn.stat(db2)["entries"] == 0
    env.close()


def test_buffer_inputs_and_lists(lm, tmp_path):
    env = open_env(lm, tmp_path / "buf")
    items: list[Any] = [
        (bytearray(b"a"), memoryview(b"1")),
        [b"b", bytearray(b"22")],
        (memoryview(b"c"), b""),
    ]
    with env.begin(write=True) as txn:
        assert txn.load_sorted(items) == 3
    with env.begin() as txn:
        assert list(txn.cursor()) == [(b"a", b"1"), (b"b", b"22"), (b"c", b"")]
    env.close()


def expect_empty_and_usable(env: Any, db: Any, txn: Any) -> None:
    assert txn.stat(db)["entries"] == 0
    assert txn.get(b"a", db=db) is None
    assert txn.put(b"after", b"ok", db=db)


BAD_INPUTS: list[tuple[str, Any, type[BaseException]]] = [
    ("out of order", [(b"b", b"1"), (b"a", b"2")], errors.KeyExistsError),
    ("repeated key", [(b"a", b"1"), (b"b", b"1"), (b"b", b"2")], errors.KeyExistsError),
    ("empty key", [(b"", b"x")], errors.BadValsizeError),
    ("key too long", [(b"k" * 512, b"x")], errors.BadValsizeError),
    ("not a pair", [(b"a",)], TypeError),
    ("not a tuple", [b"ab"], TypeError),
    ("str key", [("a", b"x")], TypeError),
    ("None value", [(b"a", None)], TypeError),
]


@pytest.mark.parametrize("name,items,exc", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_raises_and_loads_nothing(lm, tmp_path, name, items, exc):
    env = open_env(lm, tmp_path / "bad")
    db = env.open_db(b"t")
    good = [(b"%05d" % i, b"v" * 50) for i in range(3000)]
    with env.begin(write=True, db=db) as txn:
        # the bad record comes after thousands of good ones (several leaves built)
        with pytest.raises(exc):
            txn.load_sorted(good + [(b"99999", b"x")] + items if exc is TypeError else good + items)
        expect_empty_and_usable(env, db, txn)
    with env.begin(db=db) as txn:
        assert list(txn.cursor()) == [(b"after", b"ok")]
    env.close()


def test_iterable_that_raises(lm, tmp_path):
    env = open_env(lm, tmp_path / "raise")
    db = env.open_db(b"t")

    def gen() -> Iterator[tuple[bytes, bytes]]:
        for i in range(5000):
            yield b"%06d" % i, b"x" * 30
        raise RuntimeError("the source failed")

    with env.begin(write=True, db=db) as txn:
        with pytest.raises(RuntimeError, match="the source failed"):
            txn.load_sorted(gen())
        expect_empty_and_usable(env, db, txn)
    env.close()


def test_iterable_may_not_use_the_transaction(lm, tmp_path):
    env = open_env(lm, tmp_path / "meddle")
    db = env.open_db(b"t")
    other = env.open_db(b"o")
    with env.begin(write=True, db=db) as txn:

        def gen() -> Iterator[tuple[bytes, bytes]]:
            yield b"a", b"1"
            txn.put(b"x", b"y", db=other)
            yield b"b", b"2"

        with pytest.raises(errors.BadTxnError):
            txn.load_sorted(gen())
        expect_empty_and_usable(env, db, txn)
        assert txn.get(b"x", db=other) is None
    env.close()


def test_target_must_be_empty_and_not_dupsort(lm, tmp_path):
    env = open_env(lm, tmp_path / "refuse")
    db = env.open_db(b"t")
    dups = env.open_db(b"d", dupsort=True)
    with env.begin(write=True) as txn:
        txn.put(b"k", b"v", db=db)
        with pytest.raises(errors.InvalidParameterError, match="must be empty"):
            txn.load_sorted([(b"a", b"1")], db=db)
        with pytest.raises(errors.IncompatibleError, match="DUPSORT"):
            txn.load_sorted([(b"a", b"1")], db=dups)
        assert txn.get(b"k", db=db) == b"v"
    with env.begin() as txn:
        with pytest.raises(errors.Error):
            txn.load_sorted([(b"a", b"1")], db=db)
    env.close()


def test_abort_discards_and_nested_commit_keeps(lm, tmp_path):
    env = open_env(lm, tmp_path / "txns")
    db = env.open_db(b"t")
    recs = [(b"%06d" % i, b"v") for i in range(10_000)]
    txn = env.begin(write=True, db=db)
    txn.load_sorted(recs)
    txn.abort()
    with env.begin(db=db) as txn:
        assert txn.stat()["entries"] == 0
    with env.begin(write=True, db=db) as parent:
        with env.begin(write=True, db=db, parent=parent) as child:
            child.load_sorted(recs)
        assert parent.stat()["entries"] == len(recs)
    with env.begin(db=db) as txn:
        assert txn.get(b"009999") == b"v"
    env.close()
