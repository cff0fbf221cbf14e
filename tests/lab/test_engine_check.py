"""The lab refuses to measure an engine it cannot prove: every LMDB function back-mdb calls
must bind to the engine under test (lab/slapd.py)."""

from __future__ import annotations

import glob
import os
import subprocess

import pytest

from lab import lmdb_src, slapd
from lab.makeldif import write as write_ldif

_MISSING = [p for p in (slapd.BACK_MDB, "/usr/sbin/slaptest") if not os.path.exists(p)]
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=f"slapd not installed: {_MISSING}")


def test_a_library_without_lmdb_is_caught(tmp_path) -> None:
    # a preload that exports none of LMDB: back-mdb's calls bind to its own copy, which
    # the check must report, naming the functions
    libz = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libz.so.1*"))
    if not libz:
        pytest.skip("no libz to stand in for a wrong engine")
    fake = slapd.Engine("mdb", libz[0], "not an LMDB", slapd.back_mdb_calls())
    inst = slapd.Instance(str(tmp_path), fake)
    with pytest.raises(slapd.LabError, match="did not bind to .*libz"):
        inst.slaptest()


@pytest.fixture(scope="module")
def lmdb_src_built() -> str:
    # built at test time from py-lmdb 1.2.1's sdist (pip download, SHA-256 checked)
    return lmdb_src.build()


@pytest.mark.skipif(not os.path.exists(slapd.OUR_LIB), reason="build/libmdbcore.so not built")
@pytest.mark.parametrize("name", slapd.ALL_ENGINES)
def test_each_engine_passes_its_own_check(tmp_path, name, request) -> None:
    if name.startswith("lmdb-src"):
        request.getfixturevalue("lmdb_src_built")
    eng = slapd.make_engine(name)
    assert len(eng.called) >= 30  # back-mdb 2.5 calls 35-37 LMDB functions
    slapd.Instance(str(tmp_path), eng).slaptest()  # raises unless all bound to it


def test_the_checker_reads_the_dynamic_linkers_bindings(tmp_path) -> None:
    prefix = str(tmp_path / "bind-x")
    with open(prefix + ".123", "w") as f:
        f.write(
            "     123:\tbinding file /usr/lib/ldap/back_mdb.so [0] to /opt/ours.so [0]: "
            "normal symbol `mdb_put'\n"
            "     123:\tbinding file /usr/lib/ldap/back_mdb.so [0] to "
            "/usr/lib/ldap/back_mdb.so [0]: normal symbol `mdb_get'\n"
        )
    eng = slapd.Engine("mdb", "/opt/ours.so", "test", ["mdb_get", "mdb_put"])
    with pytest.raises(slapd.LabError, match="1 of 2 .*mdb_get"):
        eng.check_bindings(prefix, "test")


def test_lmdb_src_is_upstream_0929_and_loads_a_directory(tmp_path, lmdb_src_built) -> None:
    eng = slapd.make_engine("lmdb-src")
    assert eng.version.startswith("LMDB 0.9.29:"), eng.version
    assert lmdb_src.header_version(os.path.join(lmdb_src.OUT_DIR, "src", "lmdb.h")) == (0, 9, 29)
    # its functions carry names (the point of this engine): a profile can attribute them
    assert (
        "mdb_page_search"
        in subprocess.run(["nm", lmdb_src_built], capture_output=True, text=True, check=True).stdout
    )
    ldif = tmp_path / "people.ldif"
    with open(ldif, "w") as f:
        write_ldif(f, 50, seed=1)
    inst = slapd.Instance(str(tmp_path / "inst"), eng)
    inst.slapadd(str(ldif))  # raises unless slapadd's back-mdb bound to lmdb-src
    assert slapd.used_bytes(inst.db) > 0


def test_the_lmdb_src_check_refuses_a_library_it_cannot_prove(tmp_path, monkeypatch) -> None:
    # make_engine must refuse a library that lacks back-mdb's LMDB calls, not measure it
    libz = sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libz.so.1*"))
    if not libz:
        pytest.skip("no libz to stand in for a wrong engine")
    monkeypatch.setattr(lmdb_src, "LIB", libz[0])
    with pytest.raises(slapd.LabError, match="does not export .*mdb_"):
        slapd.make_engine("lmdb-src")


@pytest.mark.skipif(not os.path.exists(slapd.OUR_LIB), reason="build/libmdbcore.so not built")
def test_a_baseline_build_runs_beside_ours(tmp_path) -> None:
    # `run --baseline PATH`: another build of our library, checked like every engine
    copy = tmp_path / "libmdbcore-old.so"
    copy.write_bytes(open(slapd.OUR_LIB, "rb").read())
    eng = slapd.make_baseline(str(copy))
    assert eng.name == slapd.BASELINE and eng.expected_target == os.path.realpath(copy)
    assert len(eng.called) >= 30
    slapd.Instance(str(tmp_path / "inst"), eng).slaptest()
    with pytest.raises(slapd.LabError, match="library under test itself"):
        slapd.make_baseline(slapd.OUR_LIB)
    with pytest.raises(slapd.LabError, match="is missing"):
        slapd.make_baseline(str(tmp_path / "nothing.so"))


def _data_map_flags(pid: int) -> list[str]:
    """The kernel's VmFlags of each mapping of data.mdb in process pid."""
    flags, in_data = [], False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
                in_data = line.rstrip().endswith("/data.mdb")
            elif in_data and line.startswith("VmFlags:"):
                flags.append(line.split(":", 1)[1].strip())
    return flags


@pytest.mark.skipif(not os.path.exists(slapd.OUR_LIB), reason="build/libmdbcore.so not built")
@pytest.mark.parametrize(
    ("name", "random_read"),
    [
        ("stock", False),
        (slapd.NORDAHEAD, True),
        ("mdb", True),
        ("lmdb-src", False),
        (slapd.SRC_NORDAHEAD, True),
    ],
)
def test_which_engines_map_the_file_without_read_ahead(
    tmp_path, name, random_read, request
) -> None:
    # the -nordahead engines exist to show the page-cache effect apart from the engine's:
    # their slapd must really map data.mdb with MDB_NORDAHEAD (MADV_RANDOM: VmFlags "rr"),
    # stock and lmdb-src must not, and ours does for a writable environment (d3b9194)
    if name.startswith("lmdb-src"):
        request.getfixturevalue("lmdb_src_built")
    eng = slapd.make_engine(name)
    ldif = tmp_path / "people.ldif"
    with open(ldif, "w") as f:
        write_ldif(f, 50, seed=1)
    with slapd.Instance(str(tmp_path / "inst"), eng) as inst:
        assert ("envflags nordahead" in open(inst.conf).read()) == name.endswith("nordahead")
        inst.slapadd(str(ldif))
        inst.start()
        flags = _data_map_flags(inst.pid)
        assert flags, f"slapd {inst.pid} has no mapping of data.mdb"
        assert all(("rr" in f.split()) == random_read for f in flags), flags
