"""slapd (Debian's OpenLDAP 2.5, back-mdb embedding LMDB 0.9.29) on stock LMDB and, by
LD_PRELOAD, on our library.  See slapdlab.py for the scenario.

* stock run (must pass now): slapadd -q of 10,000 generated entries with eq indexes on
  objectClass, uid, cn, entryCSN, entryUUID; slapd on 127.0.0.1:<free port>; searches
  return what the generator put there; ldapmodify's modifies/deletes/adds/modrdns are
  visible in later searches and in slapcat; the DB files pass mdb_stat -efa and mdbcheck.
* symbols (runs now): every LMDB API function back_mdb calls through its PLT is exported
  by our library, and none of back-mdb's own mdb_* names collides with ours; with
  LD_PRELOAD, slaptest loads back_mdb (its mdb_version() gate accepts ours) and the
  dynamic linker binds every one of those calls to libmdbcore.so (LD_DEBUG=bindings).
* ours run: the same scenario with LD_PRELOAD; searches, modify output and normalised
  slapcat must equal the stock run's.  back-mdb needs DUPSORT (dn2i, id2v and every
  index), so this is skipped, naming the feature, while our library reports it lacks it
  (MDB_COMPAT_STRICT=1, as in `make test-compat`, runs it anyway).
"""

import os
import shutil
import tempfile

import pytest

import compatlib
import gen_ldif
import slapdlab

N = int(os.environ.get("MDB_SLAPD_ENTRIES", "10000"))
SEED = 1

missing = slapdlab.missing_tools()
pytestmark = pytest.mark.skipif(
    bool(missing) and not compatlib.strict(),
    reason="slapd not installed (DEBIAN_FRONTEND=noninteractive apt-get "
    "install -y slapd ldap-utils): missing " + ", ".join(missing),
)


def need_ours():
    why = compatlib.ours_available()
    if why:
        pytest.skip(why)


@pytest.fixture(scope="module")
def stock():
    return slapdlab.run_scenario("stock", n=N, seed=SEED)


def test_ldif_generator_is_seeded(tmp_path):
    outs = []
    for seed in (1, 1, 2):
        p = tmp_path / f"s{seed}-{len(outs)}.ldif"
        with open(p, "w") as f:
            gen_ldif.write(f, 50, seed)
        outs.append(p.read_text())
    assert outs[0] == outs[1] and outs[0] != outs[2]
    assert outs[0].count("\ndn: ") + outs[0].startswith("dn: ") == 52


def check_scenario(res):
    """Assertions about one run on its own (so the stock run can fail too)."""
    assert res["slapadd_rc"] == 0, res.get("slapadd_err")
    assert res["slapd_ready"], res.get("slapd_log")
    people = gen_ldif.people(N, SEED)
    exp = res["expect"]
    for name, flt, rc, out in res["search_before"]:
        assert rc == 0, (flt, out)
        if name == "uid":
            uid = flt[len("(uid=") : -1]
            assert f"\ncn: {people[uid]['cn']}\n" in out and out.count("dn: ") == 1, flt
        elif name in ("cn", "and"):
            cn = flt.split("(cn=")[1].split(")")[0]
            want = sorted(u for u, p in people.items() if p["cn"] == cn)
            got = sorted(ln[5:] for ln in out.splitlines() if ln.startswith("uid: "))
            if name == "and":
                want = [flt.split("(uid=")[1].split(")")[0]]
            assert got == want, flt
        elif name == "uuid":
            assert out.count("dn: ") == 1, flt
        elif name == "count":
            assert out.count("dn: ") == N
        elif name == "renamed":
            assert out == ""
    assert res["modify_rc"] == 0, res["modify_out"][-2000:]
    after = {flt: out for (_, flt, _, out) in res["search_after"]}
    count = after["(objectClass=inetOrgPerson)"].count("dn: ")
    assert count == N - len(exp["deleted"]) + len(exp["added"])
    renamed = after["(|(uid=moved.*)(uid=new.*))"]
    assert renamed.count("dn: ") == len(exp["renamed"]) + len(exp["added"])
    for new in exp["renamed"].values():
        assert f"dn: uid={new},{gen_ldif.PEOPLE}" in renamed
    assert res["slapd_exit"] == 0
    assert res["slapcat_rc"] == 0
    cat = res["slapcat_raw"]
    assert cat.count("\ndn: ") + cat.startswith("dn: ") == count + 2
    for uid, desc in exp["description"].items():
        if uid not in exp["deleted"] and uid not in exp["renamed"]:
            assert f"dn: uid={uid},{gen_ldif.PEOPLE}\n" in cat
            assert f"\ndescription: {desc}\n" in cat
    for uid in exp["deleted"]:
        assert f"dn: uid={uid},{gen_ldif.PEOPLE}\n" not in cat
    assert res["file_problems"] == []
    for prog, problems in res["binding_problems"].items():
        assert problems == [], (prog, problems[:10])


def test_stock_slapd(stock):
    check_scenario(stock)
    print("stock run times:", {k: round(v, 2) for k, v in stock["times"].items()})


def test_backmdb_api_calls_are_all_exported_by_ours():
    need_ours()
    rep = slapdlab.symbol_report(compatlib.OUR_LIB)
    print(
        f"back_mdb calls {len(rep['called_api'])} LMDB API functions through its PLT: "
        f"{rep['called_api']}"
    )
    assert len(rep["api"]) == 56
    assert rep["called_api"], "no LMDB API call found in back_mdb's PLT"
    assert rep["not_exported_by_ours"] == []
    assert rep["ours_non_api"] == []
    assert rep["collisions"] == []


def test_backmdb_binds_to_ours_and_accepts_its_version():
    need_ours()
    info = compatlib.lib_version(compatlib.OUR_LIB)
    assert info["version"] == [0, 9, 29], info
    d = tempfile.mkdtemp(prefix="slaptest-ours-")
    try:
        conf = slapdlab.write_conf(d)
        env = dict(
            os.environ,
            LD_PRELOAD=os.path.realpath(compatlib.OUR_LIB),
            LD_DEBUG="bindings",
            LD_DEBUG_OUTPUT=os.path.join(d, "bind"),
        )
        # -u: dry run, no database opened: loads back_mdb (bindings are made at load time,
        # back_mdb is BIND_NOW) and runs its initialisation, where the version gate is.
        r = compatlib.run([slapdlab.tool("slaptest"), "-u", "-f", conf], env=env, timeout=60)
        assert r.returncode == 0, r.stderr[-2000:]
        called = slapdlab.symbol_report(compatlib.OUR_LIB)["called_api"]
        b = slapdlab.read_bindings(os.path.join(d, "bind"))
        assert slapdlab.check_bindings(b, called, compatlib.OUR_LIB) == []
        # and back-mdb's own functions stay its own
        own = [n for n, t in b.items() if n.startswith("mdb_") and n not in called]
        assert own and all(
            t == {os.path.realpath(slapdlab.BACK_MDB)} for n, t in b.items() if n in own
        )
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_ours_slapd_matches_stock(stock):
    need_ours()
    ours = slapdlab.run_scenario("ours", n=N, seed=SEED)
    print("ours run times:", {k: round(v, 2) for k, v in ours["times"].items()})
    check_scenario(ours)
    assert ours["search_before"] == stock["search_before"]
    assert ours["modify_out"] == stock["modify_out"]
    assert ours["search_after"] == stock["search_after"]
    assert ours["slapcat"] == stock["slapcat"]
