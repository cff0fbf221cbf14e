"""Interop (issue 2, a): files written by the library under test are LMDB files, and
files written by real LMDB read back identically through the library under test.

The content is dataset.expected(seed) (20,000+ keys: the main DB and 4 named DBs, values
0 bytes .. 4 MiB, INTEGERKEY, REVERSEKEY and DUPSORT among them).  The expected key order
comes from our own model of the comparators (dataset.ordered), not from any engine, so an
engine that stores the right pairs in the wrong order fails here.

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


@pytest.fixture(scope="module")
def expected_listing():
    return dataset.expected_listing(SEED)


@pytest.fixture(scope="module")
def written_by(tmp_path_factory, mdb_test_lib):
    """Lazily written environments, one per writer implementation: {impl: path}."""
    cache = {}

    def get(impl, run_worker):
        if impl not in cache:
            d = tmp_path_factory.mktemp(f"shape-{impl}") / "env"
            res = run_worker(impl, "write-shape", d, SEED)
            assert res["ops"] > 20000
            cache[impl] = str(d)
        return cache[impl]

    return get


def check_listing(got, expected_listing):
    assert got["get_errors"] == [], "mdb_get disagrees with the written content"
    assert sorted(got["named_in_main"]) == sorted(dataset.NAMED), \
        "named databases must be F_SUBDATA records (48-byte values) in the main DB"
    for name, want in expected_listing.items():
        diff = dataset.first_difference(got["listing"][name], want)
        assert diff is None, f"database {name or '(main)'}: {diff}"
    for name in dataset.NAMED:
        assert got["flags"][name] == dataset.DB_FLAGS[name], f"flags of {name}"


@pytest.mark.parametrize("reader", ["wheel", "lib"])
def test_ours_written_read_by(reader, written_by, run_worker, expected_listing, tmp_path):
    """Our file, read by real LMDB (wheel) and by ourselves: identical content and order."""
    d = written_by("lib", run_worker)
    out = tmp_path / "listing.json"
    run_worker(reader, "read-all", d, out, SEED)
    check_listing(json.loads(out.read_text()), expected_listing)


def test_wheel_written_read_by_ours(written_by, run_worker, expected_listing, tmp_path):
    """Real LMDB's file (written by the wheel), read through the library under test."""
    d = written_by("wheel", run_worker)
    out = tmp_path / "listing.json"
    run_worker("lib", "read-all", d, out, SEED)
    check_listing(json.loads(out.read_text()), expected_listing)


@pytest.mark.skipif(not oracle.have_tools(), reason="mdb_dump/mdb_stat (lmdb-utils) missing")
@pytest.mark.parametrize("writer", ["lib", "wheel"])
def test_mdb_dump_reads(writer, written_by, run_worker, expected_listing):
    """Debian's mdb_dump (-a for the named DBs, plain for main) returns the same content."""
    d = written_by(writer, run_worker)
    rc, dbs, err = oracle.dump_all(d)
    assert rc == 0, err.decode(errors="replace")
    assert sorted(dbs) == sorted(dataset.NAMED)
    rc, main, err = oracle.dump(d)
    assert rc == 0, err.decode(errors="replace")
    dbs[""] = main[""]
    dbs[""]["pairs"] = [(k, v) for k, v in dbs[""]["pairs"]
                        if k.decode("latin-1") not in dataset.NAMED]
    for name, want in expected_listing.items():
        got = dataset.fingerprint_pairs(dbs[name]["pairs"])
        diff = dataset.first_difference(got, want)
        assert diff is None, f"mdb_dump of {name or '(main)'}: {diff}"
    assert dbs["intkey"]["header"].get("integerkey") == "1"
    assert dbs["revkey"]["header"].get("reversekey") == "1"
    assert dbs["dups"]["header"].get("dupsort") == "1"
    assert "integerkey" not in dbs["plain"]["header"]


@pytest.mark.skipif(not oracle.have_tools(), reason="mdb_dump/mdb_stat (lmdb-utils) missing")
@pytest.mark.parametrize("writer", ["lib", "wheel"])
def test_mdb_stat_accepts(writer, written_by, run_worker, expected_listing):
    """mdb_stat -efa walks the file (free list included) and counts the same entries."""
    d = written_by(writer, run_worker)
    rc, so, se = oracle.run(["mdb_stat", "-efa", d])
    assert rc == 0, se.decode(errors="replace")
    entries = oracle.stat_entries(so)
    for name in dataset.NAMED:
        assert entries.get(name) == len(expected_listing[name]), f"entries of {name}"
    # The main DB's entries count its plain keys plus one record per named DB.
    assert entries.get("Main DB") == len(expected_listing[""]) + len(dataset.NAMED)
    assert "Freelist" in entries
