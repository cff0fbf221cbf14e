"""Interop: files written by the library under test are LMDB files, and
files written by real LMDB read back identically through the library under test.

The content is dataset.expected(seed, shape):
  shape "base"     the main DB and 4 named DBs (plain, INTEGERKEY, REVERSEKEY, big values),
                   21,000+ keys, values 0 bytes .. 4 MiB -- the interop shape;
  shape "dupsort"  the same plus a DUPSORT DB (sub-pages and sub-databases), kept as a
                   separate case so that DUPSORT support is reported on its own.
The expected key order comes from our own model of the comparators (dataset.ordered), not
from any engine, so an engine that stores the right pairs in the wrong order fails here.

Readers of a file written by the library under test:
  * the `lmdb` wheel (real LMDB 0.9.36) in a subprocess,
  * Debian's mdb_dump (real LMDB 0.9.24, statically linked), and mdb_stat -efa,
  * the library under test itself (round trip).
"""

import json
import os

import pytest

from support import dataset, oracle

SEED = int(os.environ.get("MDB_INTEROP_SEED", "20260521"))
SHAPES = ["base", "dupsort"]


@pytest.fixture(scope="module")
def written_by(tmp_path_factory, mdb_test_lib):
    """Lazily written environments, one per (writer implementation, shape)."""
    cache = {}

    def get(impl, shape, run_worker):
        if (impl, shape) not in cache:
            d = tmp_path_factory.mktemp(f"{shape}-{impl}") / "env"
            res = run_worker(impl, "write-shape", d, shape, SEED)
            assert res["ops"] > 20000
            cache[impl, shape] = str(d)
        return cache[impl, shape]

    return get


_LISTING_CACHE = {}


def expected_listing(shape):
    if shape not in _LISTING_CACHE:
        _LISTING_CACHE[shape] = dataset.expected_listing(SEED, shape)
    return _LISTING_CACHE[shape]


def check_listing(got, shape):
    want_all = expected_listing(shape)
    named = dataset.SHAPES[shape]
    assert got["get_errors"] == [], "mdb_get disagrees with the written content"
    assert sorted(got["named_in_main"]) == sorted(named), (
        "named databases must be F_SUBDATA records (48-byte values) in the main DB"
    )
    for name, want in want_all.items():
        diff = dataset.first_difference(got["listing"][name], want)
        assert diff is None, f"database {name or '(main)'}: {diff}"
    for name in named:
        assert got["flags"][name] == dataset.DB_FLAGS[name], f"flags of {name}"


def test_shape_is_big_enough():
    """The base shape: 20,000+ keys, values up to 4 MiB."""
    content = dataset.expected(SEED, "base")
    assert sum(len(c) for c in content.values()) >= 20000
    assert len(dataset.SHAPES["base"]) == 4
    sizes = [len(v) for c in content.values() for v in c.values()]
    assert min(sizes) == 0 and max(sizes) == 4 << 20
    assert dataset.DB_FLAGS["intkey"] and dataset.DB_FLAGS["revkey"]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reader", ["wheel", "lib"])
def test_ours_written_read_by(reader, shape, written_by, run_worker, tmp_path):
    """Our file, read by real LMDB (wheel) and by ourselves: identical content and order."""
    d = written_by("lib", shape, run_worker)
    out = tmp_path / "listing.json"
    run_worker(reader, "read-all", d, out, shape, SEED)
    check_listing(json.loads(out.read_text()), shape)


@pytest.mark.parametrize("shape", SHAPES)
def test_wheel_written_read_by_ours(shape, written_by, run_worker, tmp_path):
    """Real LMDB's file (written by the wheel), read through the library under test."""
    d = written_by("wheel", shape, run_worker)
    out = tmp_path / "listing.json"
    run_worker("lib", "read-all", d, out, shape, SEED)
    check_listing(json.loads(out.read_text()), shape)


needs_tools = pytest.mark.skipif(
    not oracle.have_tools(), reason="mdb_dump/mdb_stat (lmdb-utils) missing"
)


def on_every_file(test):
    """Runs `test` (which takes the `written` fixture) where Debian's tools are, once per
    shape and writer."""
    test = pytest.mark.parametrize("writer", ["lib", "wheel"])(test)
    return needs_tools(pytest.mark.parametrize("shape", SHAPES)(test))


@pytest.fixture
def written(writer, shape, written_by, run_worker):
    """The environment `writer` wrote in `shape` (both parametrized), and its named DBs."""
    return written_by(writer, shape, run_worker), dataset.SHAPES[shape]


@on_every_file
def test_mdb_dump_reads(written, shape):
    """Debian's mdb_dump (-a for the named DBs, plain for main) returns the same content."""
    d, named = written
    rc, dbs, err = oracle.dump_all(d)
    assert rc == 0, err.decode(errors="replace")
    assert sorted(dbs) == sorted(named)
    rc, main, err = oracle.dump(d)
    assert rc == 0, err.decode(errors="replace")
    dbs[""] = main[""]
    dbs[""]["pairs"] = [(k, v) for k, v in dbs[""]["pairs"] if k.decode("latin-1") not in named]
    for name, want in expected_listing(shape).items():
        got = dataset.fingerprint_pairs(dbs[name]["pairs"])
        diff = dataset.first_difference(got, want)
        assert diff is None, f"mdb_dump of {name or '(main)'}: {diff}"
    assert dbs["intkey"]["header"].get("integerkey") == "1"
    assert dbs["revkey"]["header"].get("reversekey") == "1"
    assert "integerkey" not in dbs["plain"]["header"]
    if "dups" in named:
        assert dbs["dups"]["header"].get("dupsort") == "1"


@on_every_file
def test_mdb_stat_accepts(written, shape):
    """mdb_stat -efa walks the file (free list included) and counts the same entries."""
    d, named = written
    rc, so, se = oracle.run(["mdb_stat", "-efa", d])
    assert rc == 0, se.decode(errors="replace")
    entries = oracle.stat_entries(so)
    want = expected_listing(shape)
    for name in named:
        assert entries.get(name) == len(want[name]), f"entries of {name}"
    # The main DB's entries count its plain keys plus one record per named DB.
    assert entries.get("Main DB") == len(want[""]) + len(named)
    assert "Freelist" in entries
