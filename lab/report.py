"""report.py -- the headline results as a Markdown table: stock and mdb medians with
min..max over rounds, and the mdb/stock ratio of each round's pair."""

from __future__ import annotations

import os
from typing import Any

from .fastclient import CLIENT_SHARE_MAX
from .results import load_rows
from .summary import group, higher_is_better, ratio, stats

# counts that describe the run rather than score an engine (no `better` for them)
NEUTRAL = {"kills", "acked_modifies", "entries_checked", "inflight_applied", "check_clean"}

# the metrics worth a line in the report (others are in results.jsonl and the plots)
HEADLINE = {
    "table1": ("wall_s", "user_s", "sys_s", "db_used_mb"),
    "table2": ("scan_first_s", "scan_second_s", "slapd_rss_mb", "file_read_s"),
    "table3": ("avg_scan_s",),
    "table4": ("ops_s", "avg_ms", "p99_ms", "slapd_cpu_us_per_op", "client_cpu_share"),
    "table5": ("ops_s", "avg_ms", "p99_ms", "slapd_cpu_us_per_op", "client_cpu_share"),
    "table6": (
        "search_ops_s",
        "search_avg_ms",
        "modify_ops_s",
        "modify_avg_ms",
        "slapd_cpu_us_per_op",
        "client_cpu_share",
    ),
    "seed001": ("begin_us", "renew_us", "create_last_us"),
    "seed002": ("seconds", "used_mb"),
    "syncrepl": (
        "refresh_s",
        "lag_p50_ms",
        "lag_p99_ms",
        "provider_mod_ops_s",
        "lag_paced_p50_ms",
        "lag_paced_p99_ms",
        "provider_paced_mod_ops_s",
    ),
    "crash": (
        "kills",
        "acked_modifies",
        "lost",
        "inflight_applied",
        "check_clean",
        "restart_p50_s",
        "restart_max_s",
    ),
    "mpr": (
        "restart_s",
        "converge_s",
        "acked_modifies",
        "lost",
        "before_ops_s",
        "during_ops_s",
        "after_ops_s",
        "lag_before_p50_ms",
        "lag_before_p99_ms",
        "lag_after_p50_ms",
        "lag_after_p99_ms",
    ),
    "refresh-under-load": (
        "refresh_s",
        "refresh_entries_s",
        "search_without_ops_s",
        "search_during_ops_s",
        "modify_without_ops_s",
        "modify_during_ops_s",
        "search_after_ops_s",
        "modify_after_ops_s",
    ),
}


CHECKS = ("verify_checked", "verify_mismatches", "replica_entries", "replica_differences")


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def _ratio(v: float) -> str:
    """Two decimals, or three significant digits below 0.1 (a 500x gain is not 0.00)."""
    return f"{v:.2f}" if v >= 0.1 else f"{v:.2g}"


def _cell(vals: dict[int, float] | None) -> str:
    if not vals:
        return "-"
    med, lo, hi = stats(list(vals.values()))
    return f"{_fmt(med)} ({_fmt(lo)}..{_fmt(hi)})" if len(vals) > 1 else _fmt(med)


def markdown(results: str, reference: str = "stock") -> str:
    """The headline table; `reference` is the engine mdb is compared with (stock, or
    baseline: an older build of ours run in the same rounds with `run --baseline`)."""
    rows = load_rows(results)
    groups = group(rows)
    meta = next((r for r in rows if "git_commit" in r), {})
    lines = [
        f"# Lab report: {os.path.basename(os.path.abspath(results))}",
        "",
        f"Commit {meta.get('git_commit', '?')}, size {meta.get('size', '?')} "
        f"({meta.get('entries', 0):,} entries), {meta.get('cores', '?')} cores, kernel "
        f"{meta.get('kernel', '?')}.  Medians over rounds with min..max; the ratio is "
        f"mdb/{reference} per interleaved round pair, median (min..max).  `better` says which "
        "engine the median ratio favours (times, sizes and CPU per op: lower is better; "
        "rates: higher).",
        "",
        f"| experiment | metric | series | {reference} | mdb | mdb/{reference} | better |",
        "|---|---|---|---|---|---|---|",
    ]
    for (exp, metric, series), per_engine in sorted(groups.items(), key=_order):
        if metric not in HEADLINE.get(exp, ()):
            continue
        r = ratio(per_engine, reference)
        if r is None:
            rtxt, better = "-", "-"
        elif metric in NEUTRAL:
            rtxt, better = f"{_ratio(r[0])} ({_ratio(r[1])}..{_ratio(r[2])})", "-"
        else:
            rtxt = f"{_ratio(r[0])} ({_ratio(r[1])}..{_ratio(r[2])})"
            if abs(r[0] - 1) < 0.02:
                better = "even"
            else:
                better = "mdb" if (r[0] > 1) == higher_is_better(metric) else reference
        stxt = ", ".join(f"{k}={v}" for k, v in series) or ""
        lines.append(
            f"| {exp} | {metric} | {stxt} | {_cell(per_engine.get(reference))} | "
            f"{_cell(per_engine.get('mdb'))} | {rtxt} | {better} |"
        )
    failures = [r for r in rows if r["metric"] == "failure"]
    busy = sum(1 for r in rows if r.get("busy"))
    lines += [
        "",
        f"Rows: {len(rows)}; measured while the rest of the machine was busy: {busy}; "
        f"failed steps: {len(failures)}.",
    ]
    lines += _client_lines(rows)
    checks = {m: [r for r in rows if r["metric"] == m] for m in CHECKS}
    if any(checks.values()):
        tot = {m: sum(r["value"] for r in v) for m, v in checks.items()}
        lines.append(
            f"Read-back checks (ldap3, lab/verify.py): {len(checks['verify_checked'])} after "
            f"ModRate jobs, {tot['verify_checked']:,.0f} entries read back, "
            f"{tot['verify_mismatches']:,.0f} not holding their last acknowledged value; "
            f"{len(checks['replica_entries'])} provider/consumer comparisons, "
            f"{tot['replica_entries']:,.0f} entries compared, "
            f"{tot['replica_differences']:,.0f} differing."
        )
    for f in failures:
        lines.append(f"- FAILED: {f.get('message', '')}")
    return "\n".join(lines) + "\n"


def _client_lines(rows: list[dict[str, Any]]) -> list[str]:
    """Where rate rows name their load client (lab/fastclient.py): the client CPU bound,
    and how many rows were measured above it (the client may then have set the rate)."""
    rated = [r for r in rows if "client_cpu_share" in r and "interval" not in r]
    if not rated:
        return []
    out = [
        "",
        "Rate jobs (table4-6) run twice on the same server: `client=lab` is the lab's Python "
        "client, `client=ldload` the compiled one (lab/ldload). A job whose client used over "
        f"{CLIENT_SHARE_MAX:.0%} of the machine is flagged `client_bound`.",
    ]
    for client in sorted({r.get("client", "lab") for r in rated}):
        mine = [r for r in rated if r.get("client", "lab") == client]
        bound = sum(1 for r in mine if r.get("client_bound"))
        shares = [r["value"] for r in mine if r["metric"] == "client_cpu_share"]
        top = f"; highest client CPU share {max(shares):.1%}" if shares else ""
        out.append(f"- client {client}: {bound} of {len(mine)} rows client_bound{top}.")
    return out


def _order(item: tuple[tuple, Any]) -> tuple:
    (exp, metric, series), _ = item
    exps = list(HEADLINE)
    metrics = HEADLINE.get(exp, ())
    return (
        exps.index(exp) if exp in exps else 99,
        metrics.index(metric) if metric in metrics else 99,
        tuple(str(v).zfill(12) for _, v in series),
    )
