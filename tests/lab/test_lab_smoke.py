"""The whole lab at --size smoke on both engines, end to end: real slapd, slapadd and LDAP
traffic on 127.0.0.1.  Checked without timing (no speed is asserted): every experiment has
rows for both engines, no step failed and no LDAP operation erred, both engines returned the
same entries, the lag probes all arrived, and `plot` and `report` render every experiment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest

from lab import experiments, slapd

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROUNDS = 2

needs = [p for p in (slapd.BACK_MDB, "/usr/sbin/slapd", slapd.OUR_LIB) if not os.path.exists(p)]
pytestmark = pytest.mark.skipif(bool(needs), reason=f"missing {needs}")

# metrics every experiment must report, per engine and round
EXPECTED = {
    "table1": {"wall_s", "user_s", "sys_s", "db_used_mb"},
    "table2": {"scan_first_s", "scan_second_s", "slapd_rss_mb", "file_read_s", "db_used_mb"},
    "table3": {"avg_scan_s"},
    "table4": {
        "ops_s",
        "avg_ms",
        "p50_ms",
        "p99_ms",
        "errors",
        "slapd_cpu_us_per_op",
        "interval_ops_s",
    },
    "table5": {
        "ops_s",
        "avg_ms",
        "p99_ms",
        "errors",
        "slapd_cpu_us_per_op",
        "interval_ops_s",
        "verify_checked",
        "verify_mismatches",
    },
    "table6": {
        "search_ops_s",
        "modify_ops_s",
        "search_errors",
        "modify_errors",
        "slapd_cpu_us_per_op",
        "verify_checked",
        "verify_mismatches",
    },
    "seed001": {"begin_us", "renew_us", "create_last_us", "reopen_last_us"},
    "seed002": {"seconds", "used_mb", "leaf_pages"},
    "syncrepl": {
        "refresh_s",
        "lag_p50_ms",
        "lag_p99_ms",
        "provider_mod_ops_s",
        "lag_paced_p50_ms",
        "lag_paced_p99_ms",
        "provider_paced_mod_ops_s",
        "replica_entries",
        "replica_differences",
        "verify_checked",
        "verify_mismatches",
    },
    "crash": {
        "kills",
        "acked_modifies",
        "entries_checked",
        "lost",
        "inflight_at_kill",
        "check_clean",
        "restart_p50_s",
        "interval_ops_s",
        "kill_at_s",
        "restart_at_s",
    },
    "mpr": {
        "restart_s",
        "converge_s",
        "acked_modifies",
        "lost",
        "before_ops_s",
        "during_ops_s",
        "after_ops_s",
        "lag_before_p99_ms",
        "lag_after_p99_ms",
        "interval_ops_s",
        "kill_at_s",
        "restart_at_s",
        "tree_entries",
    },
    "refresh-under-load": {
        "refresh_s",
        "refresh_entries_s",
        "search_without_ops_s",
        "search_during_ops_s",
        "modify_without_ops_s",
        "modify_during_ops_s",
        "search_interval_ops_s",
        "join_at_s",
        "refreshed_at_s",
        "verify_checked",
        "verify_mismatches",
    },
}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("lab-smoke")
    work = tmp_path_factory.mktemp("lab-work")
    cmd = [
        sys.executable,
        "-m",
        "lab",
        "run",
        "all",
        "--size",
        "smoke",
        "--engine",
        "both",
        "--rounds",
        str(ROUNDS),
        "--out",
        str(out),
        "--work",
        str(work),
    ]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    rows = []
    if (out / "results.jsonl").exists():
        rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return r, rows, out


def test_the_run_succeeds(smoke) -> None:
    r, rows, _ = smoke
    assert r.returncode == 0, r.stderr[-3000:]
    assert not [x for x in rows if x["metric"] == "failure"]


def test_every_experiment_has_rows_for_both_engines(smoke) -> None:
    _, rows, _ = smoke
    assert set(EXPECTED) == set(experiments.EXPERIMENTS)
    got: dict[tuple, set] = defaultdict(set)
    for x in rows:
        got[(x["experiment"], x["engine"], x["round"])].add(x["metric"])
    for exp, metrics in EXPECTED.items():
        for eng in slapd.ENGINES:
            for rnd in range(ROUNDS):
                missing = metrics - got[(exp, eng, rnd)]
                assert not missing, f"{exp} {eng} round {rnd}: no {sorted(missing)}"


def test_rows_carry_their_provenance(smoke) -> None:
    _, rows, _ = smoke
    for x in rows:
        for field in (
            "experiment",
            "engine",
            "round",
            "metric",
            "value",
            "unit",
            "size",
            "git_commit",
            "engine_version",
            "date",
            "cores",
            "kernel",
        ):
            assert field in x, (field, x)
        assert x["engine_verified"] is True
    mdb_versions = {x["engine_version"] for x in rows if x["engine"] == "mdb"}
    stock_versions = {x["engine_version"] for x in rows if x["engine"] == "stock"}
    assert mdb_versions and stock_versions and not (mdb_versions & stock_versions)
    assert all("other_cpu_share" in x and "busy" in x for x in rows)
    slapd_exps = {"table2", "table3", "table4", "table5", "table6", "syncrepl"}
    for x in rows:
        if x["experiment"] in slapd_exps | {"table1"}:
            for field in ("slapd_user_s", "slapd_sys_s", "slapd_peak_rss_kb", "db_used_bytes"):
                assert field in x, (field, x["experiment"], x["metric"])
    assert any(x.get("db_used_bytes", 0) > 0 for x in rows if x["experiment"] == "table1")
    assert any(x.get("slapd_user_s", -1) >= 0 for x in rows if x["experiment"] == "table4")


def test_both_engines_return_the_same_entries(smoke) -> None:
    _, rows, _ = smoke
    scans = {x["engine"]: x for x in rows if x["metric"] == "entries"}
    assert set(scans) == set(slapd.ENGINES)
    n = experiments.SIZES["smoke"].entries + 2  # the people, ou=People and the suffix
    assert {x["value"] for x in scans.values()} == {n}
    assert scans["stock"]["digest"] == scans["mdb"]["digest"] != ""


def test_no_ldap_errors_and_rate_jobs_did_work(smoke) -> None:
    _, rows, _ = smoke
    errors = [x for x in rows if x["metric"].endswith("errors") and x["value"] != 0]
    assert not errors
    rates = [x for x in rows if x["metric"].endswith("ops_s") and "interval" not in x]
    # (mpr's killed provider has no rate while it is down)
    rates = [x for x in rates if not (x["experiment"] == "mpr" and "during" in x["metric"])]
    assert rates and all(x["value"] > 0 for x in rates)


def test_rate_jobs_ran_both_clients_and_name_their_cpu_share(smoke) -> None:
    """table4-6: every engine and round has rows from the Python client and from ldload
    (lab/fastclient.py), each row naming its client and that client's CPU share (the
    read-back rows after a job name its client too, but measure no rate)."""
    _, rows, _ = smoke
    rate = [
        x
        for x in rows
        if x["experiment"] in ("table4", "table5", "table6")
        and not x["metric"].startswith("verify_")
    ]
    checks = [x for x in rows if x["metric"] == "verify_checked" and x["experiment"] != "syncrepl"]
    assert {x.get("client") for x in checks if x["experiment"] in ("table5", "table6")} == {
        "lab",
        "ldload",
    }
    for x in rate:
        assert x["client"] in ("lab", "ldload"), x
        assert 0 <= x["client_cpu_share"] <= 1
        assert x["client_bound"] == (x["client_cpu_share"] > 0.15)
    for exp in ("table4", "table5", "table6"):
        for eng in slapd.ENGINES:
            for rnd in range(ROUNDS):
                got = {
                    (x["client"], x.get("variant"))
                    for x in rate
                    if (x["experiment"], x["engine"], x["round"]) == (exp, eng, rnd)
                    and x["metric"].endswith("ops_s")
                    and "interval" not in x
                }
                variants = ("nosync", "sync") if exp == "table5" else (None,)
                assert got == {(c, v) for c in ("lab", "ldload") for v in variants}, (exp, eng)


def test_the_read_back_checks_ran_and_found_every_value(smoke) -> None:
    """After every ModRate job (table5's two variants, table6, refresh-under-load, and on
    syncrepl's consumer) a sample of the modified entries was read back with ldap3 and
    held its last acknowledged value; provider and consumer held the same tree after the
    refresh and after the load."""
    _, rows, _ = smoke
    n = experiments.SIZES["smoke"].entries + 2
    for eng in slapd.ENGINES:
        for rnd in range(ROUNDS):
            got = [x for x in rows if (x["engine"], x["round"]) == (eng, rnd)]
            checked = [x for x in got if x["metric"] == "verify_checked"]
            where = {(x["experiment"], x.get("variant", x.get("on", ""))) for x in checked}
            assert where >= {
                ("refresh-under-load", ""),
                ("syncrepl", "consumer"),
                ("table5", "nosync"),
                ("table5", "sync"),
                ("table6", ""),
            }, (eng, rnd)
            assert all(x["value"] == min(500, x["acked_entries"]) > 0 for x in checked)
            assert not [x for x in got if x["metric"] == "verify_mismatches" and x["value"]]
            compared = [x for x in got if x["metric"] == "replica_entries"]
            assert sorted(x["phase"] for x in compared) == ["lag", "refresh"]
            assert {(x["value"], x["consumer_entries"]) for x in compared} == {(n, n)}
            assert not [x for x in got if x["metric"] == "replica_differences" and x["value"]]


def _sum(rows, exp: str, eng: str, metric: str, **where) -> float:
    return sum(
        x["value"]
        for x in rows
        if (x["experiment"], x["engine"], x["metric"]) == (exp, eng, metric)
        and all(x.get(k) == v for k, v in where.items())
    )


def test_crash_loses_no_acknowledged_modify_and_every_file_checks_clean(smoke) -> None:
    """At least 20 kills per engine with durable commits (10 per round), every
    acknowledged modify found on the restarted server, mdb-cli check clean after every
    kill; with dbnosync too (a process kill leaves the page cache, so nothing is lost)."""
    _, rows, _ = smoke
    for eng in slapd.ENGINES:
        kills = _sum(rows, "crash", eng, "kills", variant="durable")
        assert kills >= 20, (eng, kills)
        assert _sum(rows, "crash", eng, "acked_modifies", variant="durable") > kills
        for variant in ("durable", "nosync"):
            assert _sum(rows, "crash", eng, "lost", variant=variant) == 0, (eng, variant)
            assert _sum(rows, "crash", eng, "foreign_values", variant=variant) == 0
            assert _sum(rows, "crash", eng, "check_clean", variant=variant) == _sum(
                rows, "crash", eng, "kills", variant=variant
            )
        kill_at = [x for x in rows if x["experiment"] == "crash" and x["metric"] == "kill_at_s"]
        assert len([x for x in kill_at if x["engine"] == eng]) == _sum(
            rows, "crash", eng, "kills", variant="durable"
        ) + _sum(rows, "crash", eng, "kills", variant="nosync")


def test_mpr_converges_and_loses_nothing(smoke) -> None:
    """Every round on both engines: the three servers agreed (a converge_s row is written
    only then), hold every entry, and no acknowledged modify was lost."""
    _, rows, _ = smoke
    n = experiments.SIZES["smoke"].entries + 2
    for eng in slapd.ENGINES:
        got = [x for x in rows if (x["experiment"], x["engine"]) == ("mpr", eng)]
        assert len([x for x in got if x["metric"] == "converge_s"]) == ROUNDS
        assert {x["value"] for x in got if x["metric"] == "tree_entries"} == {n}
        assert _sum(rows, "mpr", eng, "lost") == 0
        assert _sum(rows, "mpr", eng, "acked_modifies") > 0
        providers = {x["provider"] for x in got if x["metric"] == "interval_ops_s"}
        assert providers == {1, 2}


def lab_cli(*args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    """`python -m lab ARGS` from the repository root, which must succeed."""
    r = subprocess.run(
        [sys.executable, "-m", "lab", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode == 0, r.stderr
    return r


def test_plot_and_report_render_every_experiment(smoke, tmp_path) -> None:
    _, _, out = smoke
    r = lab_cli("plot", "--results", str(out), "--out", str(tmp_path), timeout=300)
    for exp in EXPECTED:
        png = tmp_path / f"{exp}.png"
        assert png.exists(), exp
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    r = lab_cli("report", "--results", str(out), timeout=120)
    for exp in EXPECTED:
        assert f"| {exp} |" in r.stdout, exp
    assert "failed steps: 0" in r.stdout


def test_the_cli_lists_and_refuses_unknown_experiments() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "lab", "list"], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0 and all(name in r.stdout for name in EXPECTED)
    r = subprocess.run(
        [sys.executable, "-m", "lab", "run", "table9"], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 2 and "unknown experiment" in r.stderr


def test_the_paced_lag_phase_offers_both_engines_the_same_load(smoke) -> None:
    """syncrepl's second lag phase paces its ModRate: each engine's provider answered about
    the offered modifies a second (the unpaced phase's rate differs by engine)."""
    _, rows, _ = smoke
    paced = [
        x
        for x in rows
        if x["experiment"] == "syncrepl" and x["metric"] == "provider_paced_mod_ops_s"
    ]
    assert {x["engine"] for x in paced} == set(slapd.ENGINES)
    for x in paced:
        offered = experiments.SIZES["smoke"].lag_paced_rate
        assert x["offered_ops_s"] == offered
        assert 0.8 * offered <= x["value"] <= 1.1 * offered, x
