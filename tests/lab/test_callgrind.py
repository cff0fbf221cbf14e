"""lab/callgrind.py's reader of callgrind output: self costs by object and function, and
back-mdb's calls into the engine, from a small hand-written profile."""

from __future__ import annotations

import os

from lab import callgrind, slapd

ENGINE = "/opt/engine/liblmdb.so"

PROFILE = f"""# callgrind format
version: 1
positions: line
events: Ir

ob=(1) {slapd.BACK_MDB}
fl=(1) ???
fn=(1) mdb_dn2id
0 100
cob=(2) {ENGINE}
cfi=(2) ???
cfn=(2) mdb_cursor_get
calls=3 0
0 900
+2 7
cfn=(3) mdb_idl_helper
calls=1 0
0 50

ob=(2)
fl=(2)
fn=(2)
0 600
cob=(3) /usr/lib/x86_64-linux-gnu/libc.so.6
cfn=(4) malloc
calls=2 0
0 300
fn=(5) mdb_cursor_put
* 40
"""


def test_self_costs_and_call_sites(tmp_path) -> None:
    path = tmp_path / "callgrind.out"
    path.write_text(PROFILE)
    costs, sites = callgrind.parse(str(path), ENGINE)
    back = slapd.BACK_MDB
    # a call's line is the callee's inclusive cost, never the caller's own
    assert costs[(back, "mdb_dn2id")] == 107
    # names given once by number are reused: ob=(2) and fn=(2) are the engine's
    assert costs[(ENGINE, "mdb_cursor_get")] == 600
    assert costs[(ENGINE, "mdb_cursor_put")] == 40
    # only back_mdb -> engine calls are call sites; the call after it, with no cob=,
    # stays inside back_mdb (the callee object resets to the caller's)
    assert sites == {("mdb_dn2id", "mdb_cursor_get"): [3, 900]}
    eng = slapd.Engine("lmdb-src", ENGINE, "test")
    split = callgrind.split(str(path), eng)
    assert split["by"]["engine"] == 640 and split["by"]["back_mdb"] == 107
    assert split["by"]["total"] == 747
    assert split["funcs"] == {"mdb_cursor_get": 600, "mdb_cursor_put": 40}


def test_per_entry_is_the_difference_of_two_loads() -> None:
    small = {"by": {"total": 1000}, "funcs": {"f": 100}, "sites": {"a -> b": [10, 500]}}
    big = {"by": {"total": 5000}, "funcs": {"f": 300}, "sites": {"a -> b": [50, 2500]}}
    got = callgrind.per(small, big, 40)
    assert got == {"by": {"total": 100.0}, "funcs": {"f": 5.0}, "sites": {"a -> b": [1.0, 50.0]}}
    assert callgrind.per(big, None, 10)["sites"] == {"a -> b": [5.0, 250.0]}


def test_the_engine_bucket_is_the_preloaded_library_only() -> None:
    assert callgrind._bucket(ENGINE, ENGINE) == "engine"
    assert callgrind._bucket(os.path.realpath(slapd.BACK_MDB), ENGINE) == "back_mdb"
    assert callgrind._bucket("/usr/sbin/slapd", ENGINE) == "slapd"
    assert callgrind._bucket("/usr/lib/x86_64-linux-gnu/libc.so.6", ENGINE) == "libc"
    assert callgrind._bucket("/usr/lib/x86_64-linux-gnu/liblber-2.5.so.0", None) == "other"


def test_the_profiled_requests_are_the_labs_searchrate_and_modrate() -> None:
    import random

    from lab import ldapwire

    r = random.Random(1)
    search, tag = callgrind._op("search", 10, r)
    assert tag == ldapwire.SEARCH_DONE and b"uid" in search and b"user." in search
    modify, tag = callgrind._op("modify", 10, r)
    assert tag == ldapwire.MODIFY_RESPONSE
    assert b"ou=People" in modify and b"description" in modify


CACHE_PROFILE = f"""# callgrind format
version: 1
positions: line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw

ob=(1) {slapd.BACK_MDB}
fl=(1) ???
fn=(1) mdb_id2entry
0 100 40 10 1 7 2 1 3 1
cob=(2) {ENGINE}
cfn=(2) mdb_get
calls=1 0
0 500 200 0 5 50 0 5 20 0
ob=(2)
fn=(2)
0 400 150 20 2 30 4 2 12 2
+1 9 3
"""


def test_cache_sim_misses_by_object_and_engine_function(tmp_path) -> None:
    """--cache-sim profiles carry the misses after Ir: D1 = D1mr + D1mw and LL = DLmr +
    DLmw, self costs only (a call's inclusive line is not the caller's), short lines
    count their missing events as zero."""
    path = tmp_path / "callgrind.out"
    path.write_text(CACHE_PROFILE)
    misses: dict = {}
    costs, _ = callgrind.parse(str(path), ENGINE, misses)
    assert costs[(ENGINE, "mdb_get")] == 409
    assert misses[(slapd.BACK_MDB, "mdb_id2entry")] == [9, 4]
    assert misses[(ENGINE, "mdb_get")] == [34, 14]
    split = callgrind.split(str(path), slapd.Engine("lmdb-src", ENGINE, "test"))
    assert split["ll"] == {"back_mdb": 4, "engine": 14, "total": 18}
    assert split["d1"]["engine"] == 34 and split["funcs_ll"] == {"mdb_get": 14}
    assert callgrind.per(split, None, 2)["ll"]["engine"] == 7.0
    # a profile without the simulation has no miss figures
    plain = tmp_path / "plain.out"
    plain.write_text(PROFILE)
    assert "ll" not in callgrind.split(str(plain), slapd.Engine("lmdb-src", ENGINE, "test"))
