"""plots.py -- one PNG per experiment from a results folder (matplotlib, Agg backend).

Summary values are medians over rounds with min..max whiskers; rate jobs also get their
per-interval time series (every round, warm-up intervals shaded); latencies are drawn on
a log axis.  Each figure's footer names the results file and the commit it came from.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from .results import load_rows  # noqa: E402
from .summary import ENGINE_ORDER, group, stats  # noqa: E402

COLORS = {"stock": "#7f7f7f", "mdb": "#d62728"}
Groups = dict[tuple, dict[str, dict[int, float]]]
RATE_EXPERIMENTS = ("table4", "table5", "table6")


Bar = str | tuple[str, str, tuple]  # a metric, or (label, metric, its own series)


def _bars(
    ax: Any, groups: Groups, exp: str, metrics: list[Bar], series: tuple = (), log: bool = False
) -> bool:
    """Grouped bars (one group per metric, one bar per engine), median with min..max."""
    drawn = False
    width = 0.38
    items = [(m, m, series) if isinstance(m, str) else m for m in metrics]
    for j, eng in enumerate(ENGINE_ORDER):
        xs, meds, los, his = [], [], [], []
        for i, (_label, m, ser) in enumerate(items):
            vals = groups.get((exp, m, ser), {}).get(eng)
            if not vals:
                continue
            med, lo, hi = stats(list(vals.values()))
            xs.append(i + (j - 0.5) * width)
            meds.append(med)
            los.append(med - lo)
            his.append(hi - med)
        if xs:
            ax.bar(xs, meds, width, yerr=[los, his], capsize=3, color=COLORS[eng], label=eng)
            drawn = True
    ax.set_xticks(range(len(items)), [i[0] for i in items], rotation=15, fontsize=8)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=8)
    return drawn


def _lines(
    ax: Any,
    groups: Groups,
    exp: str,
    metric: str,
    key: str,
    fixed: tuple = (),
    logx: bool = False,
    logy: bool = False,
    label: str = "",
) -> bool:
    """metric against the series field `key`, per engine: medians joined, min..max bars."""
    drawn = False
    pts: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
    for (e, m, series), per_engine in groups.items():
        sd = dict(series)
        if e != exp or m != metric or key not in sd:
            continue
        if any(sd.get(k) != v for k, v in fixed):
            continue
        for eng, vals in per_engine.items():
            med, lo, hi = stats(list(vals.values()))
            pts[eng].append((sd[key], med, med - lo, hi - med))
    for eng in ENGINE_ORDER:
        if not pts.get(eng):
            continue
        p = sorted(pts[eng])
        ax.errorbar(
            [x[0] for x in p],
            [x[1] for x in p],
            yerr=[[x[2] for x in p], [x[3] for x in p]],
            marker="o",
            capsize=3,
            color=COLORS[eng],
            label=f"{eng}{label}",
        )
        drawn = True
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(key)
    ax.set_ylabel(metric)
    ax.legend(fontsize=8)
    return drawn


def _timeseries(
    ax: Any, rows: list[dict[str, Any]], exp: str, metric: str, variant: str | None = None
) -> bool:
    """Per-interval ops/s of every round, one line each; warm-up intervals shaded.  Rows
    of rate jobs name their load client: the compiled one's lines are solid, the Python
    one's dashed."""
    runs: dict[tuple[str, int, str], list[tuple[int, float, bool]]] = defaultdict(list)
    for r in rows:
        if r["experiment"] == exp and r["metric"] == metric and "interval" in r:
            if variant is not None and r.get("variant") != variant:
                continue
            runs[(r["engine"], r["round"], r.get("client", ""))].append(
                (r["interval"], r["value"], r.get("warmup", False))
            )
    warm = 0
    for (eng, rnd, client), pts in sorted(runs.items()):
        pts.sort()
        warm = max(warm, sum(1 for p in pts if p[2]))
        ax.plot(
            [p[0] + 1 for p in pts],
            [p[1] for p in pts],
            color=COLORS.get(eng, "k"),
            alpha=0.8,
            lw=1.2,
            ls="--" if client == "lab" else "-",
            label=f"{eng} round {rnd + 1}" + (f" {client}" if client else ""),
        )
    if warm:
        ax.axvspan(0.5, warm + 0.5, color="#eeeeee", zorder=0, label="warm-up (not counted)")
    ax.set_xlabel("interval (s)")
    ax.set_ylabel(metric.replace("_", " "))
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=6, ncol=2)
    return bool(runs)


def _footer(fig: Any, rows: list[dict[str, Any]], src: str) -> None:
    meta = next((r for r in rows if "git_commit" in r), {})
    busy = sum(1 for r in rows if r.get("busy"))
    fig.text(
        0.01,
        0.005,
        f"{src} | commit {meta.get('git_commit', '?')} | {meta.get('size', '?')} "
        f"({meta.get('entries', 0):,} entries) | {meta.get('cores', '?')} cores | "
        f"rows measured on a busy machine: {busy}",
        fontsize=6,
        color="#555555",
    )


def _figure(name: str, title: str, ncols: int, width: float = 11) -> tuple[Any, list[Any]]:
    fig, axes = plt.subplots(1, ncols, figsize=(width, 4.2))
    axes = list(axes) if ncols > 1 else [axes]
    fig.suptitle(title, fontsize=11)
    return fig, axes


def plot_all(results: str, out: str) -> list[str]:
    rows = load_rows(results)
    for r in rows:
        if r["experiment"] in RATE_EXPERIMENTS and r["metric"] != "failure":
            r.setdefault("client", "lab")  # results from before lab/ldload had one client
    exp_rows = defaultdict(list)
    for r in rows:
        exp_rows[r["experiment"]].append(r)
    groups = group(rows)
    os.makedirs(out, exist_ok=True)
    src = os.path.join(os.path.basename(os.path.abspath(results)), "results.jsonl")
    written = []
    for exp, rs in sorted(exp_rows.items()):
        fig = _draw(exp, rs, groups)
        if fig is None:
            continue
        _footer(fig, rs, src)
        fig.tight_layout(rect=(0, 0.03, 1, 0.95))
        path = os.path.join(out, f"{exp}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def _draw(exp: str, rows: list[dict[str, Any]], g: Groups) -> Any:
    if exp == "table1":
        fig, ax = _figure(exp, "Table 1: slapadd -q (median, min..max)", 2)
        _bars(ax[0], g, exp, ["wall_s", "user_s", "sys_s"])
        ax[0].set_ylabel("seconds")
        _bars(ax[1], g, exp, ["db_used_mb"])
        ax[1].set_ylabel("MiB in use (pages x page size)")
    elif exp == "table2":
        fig, ax = _figure(exp, "Table 2: full-scan search after start, and reading the file", 2)
        _bars(ax[0], g, exp, ["scan_first_s", "scan_second_s", "file_read_s"])
        ax[0].set_ylabel("seconds")
        _bars(ax[1], g, exp, ["slapd_rss_mb", "db_used_mb"])
        ax[1].set_ylabel("MiB")
    elif exp == "table3":
        fig, ax = _figure(exp, "Table 3: concurrent full scans, average time per scan", 1, 7)
        _lines(ax[0], g, exp, "avg_scan_s", "concurrency", logx=True)
        ax[0].set_ylabel("seconds per scan")
    elif exp in ("table4", "table5", "table6"):
        return _draw_rate(exp, rows, g)
    elif exp == "crash":
        return _draw_crash(rows, g)
    elif exp == "mpr":
        return _draw_mpr(rows, g)
    elif exp == "refresh-under-load":
        return _draw_refresh(rows, g)
    elif exp == "seed001":
        fig, ax = _figure(exp, "Seed 001: read txn cost against open named databases", 2)
        _lines(ax[0], g, exp, "begin_us", "ndbs", logx=True, logy=True)
        ax[0].set_ylabel("us per begin+cursor+abort")
        _lines(ax[1], g, exp, "create_last_us", "ndbs", logx=True, logy=True)
        ax[1].set_ylabel("us to create the last database")
    elif exp == "seed002":
        fig, ax = _figure(exp, "Seed 002: sequential inserts by key encoding", 2, 12)
        for mode, style in (("be", "-"), ("le", "--"), ("intkey", ":"), ("append", "-.")):
            fixed = (("mode", mode),)
            for a, metric in zip(ax, ("seconds", "used_mb")):
                _lines(a, g, exp, metric, "n", fixed=fixed, logx=True, logy=True, label=f" {mode}")
            for a in ax:
                for line in a.get_lines()[-1:]:
                    line.set_linestyle(style)
        ax[0].legend(fontsize=6, ncol=2)
        ax[1].legend(fontsize=6, ncol=2)
    elif exp == "syncrepl":
        fig, ax = _figure(exp, "syncrepl: consumer refresh, and lag under ModRate", 3)
        _bars(ax[0], g, exp, ["refresh_s"])
        ax[0].set_ylabel("seconds")
        _bars(ax[1], g, exp, ["lag_p50_ms", "lag_p99_ms", "lag_max_ms"], log=True)
        ax[1].set_ylabel("ms (log), unpaced ModRate")
        _bars(ax[2], g, exp, ["lag_paced_p50_ms", "lag_paced_p99_ms", "lag_paced_max_ms"], log=True)
        ax[2].set_ylabel("ms (log), paced ModRate")
    else:
        return None
    return fig


CLIENTS = ("lab", "ldload")  # lab/load.py's Python client, lab/ldload's compiled one


def _per_client(metric: str, fixed: tuple = ()) -> list[Bar]:
    """One bar group per load client for metric (rate rows name their client)."""
    return [(f"{metric}\n{c}", metric, (*fixed, ("client", c))) for c in CLIENTS]


def _draw_rate(exp: str, rows: list[dict[str, Any]], g: Groups) -> Any:
    titles = {
        "table4": "Table 4: SearchRate",
        "table5": "Table 5: ModRate (dbnosync and durable)",
        "table6": "Table 6: SearchRate and ModRate at once",
    }
    fig, axes = plt.subplots(2, 3, figsize=(16, 7.5))
    fig.suptitle(
        titles[exp] + " -- Python client (lab, dashed) and compiled client (ldload, solid)",
        fontsize=11,
    )
    a = axes.flatten()
    if exp == "table5":
        nosync = (("variant", "nosync"),)
        _timeseries(a[0], rows, exp, "interval_ops_s", "nosync")
        a[0].set_title("dbnosync: ops/s per interval", fontsize=9)
        _timeseries(a[1], rows, exp, "interval_ops_s", "sync")
        a[1].set_title("durable: ops/s per interval", fontsize=9)
        sync = (("variant", "sync"),)
        rates = _per_client("ops_s", nosync) + _per_client("ops_s", sync)
        _bars(a[2], g, exp, [(f"{lab} {v}", m, ser) for (lab, m, ser), v in zip(rates, "nnss")])
        a[2].set_yscale("log")
        a[2].set_title("ops/s, dbnosync (n) and durable (s), log", fontsize=9)
        lat = [b for m in ("avg_ms", "p99_ms") for b in _per_client(m, nosync)]
        _bars(a[3], g, exp, lat, log=True)
        a[3].set_title("dbnosync latency (ms, log)", fontsize=9)
        _bars(a[4], g, exp, _per_client("slapd_cpu_us_per_op", nosync))
        a[4].set_ylabel("dbnosync: slapd CPU us per modify")
        _bars(a[5], g, exp, _per_client("client_cpu_share", nosync))
    elif exp == "table6":
        _timeseries(a[0], rows, exp, "search_interval_ops_s")
        a[0].set_title("searches per interval", fontsize=9)
        _timeseries(a[1], rows, exp, "modify_interval_ops_s")
        a[1].set_title("modifies per interval", fontsize=9)
        _bars(a[2], g, exp, _per_client("search_ops_s") + _per_client("modify_ops_s"))
        a[2].set_ylabel("ops/s")
        lat = [b for m in ("search_p99_ms", "modify_p99_ms") for b in _per_client(m)]
        _bars(a[3], g, exp, lat, log=True)
        a[3].set_ylabel("p99 ms (log)")
        _bars(a[4], g, exp, _per_client("slapd_cpu_us_per_op"))
        a[4].set_ylabel("slapd CPU us per operation")
        _bars(a[5], g, exp, _per_client("client_cpu_share"))
    else:
        _timeseries(a[0], rows, exp, "interval_ops_s")
        a[0].set_title("ops/s per interval", fontsize=9)
        _bars(a[1], g, exp, _per_client("ops_s"))
        a[1].set_ylabel("ops/s")
        lat = [b for m in ("avg_ms", "p50_ms", "p99_ms") for b in _per_client(m)]
        _bars(a[2], g, exp, lat, log=True)
        a[2].set_ylabel("ms (log)")
        _bars(a[3], g, exp, _per_client("slapd_cpu_us_per_op"))
        a[3].set_ylabel("slapd CPU us per operation")
        _bars(a[4], g, exp, _per_client("client_cpu_share"))
        a[5].axis("off")
    a[-1 if exp != "table4" else 4].axhline(0.15, color="k", ls=":", lw=0.8)
    a[-1 if exp != "table4" else 4].set_ylabel("client CPU share of the machine (limit 0.15)")
    return fig


def _failure_series(
    ax: Any, rows: list[dict[str, Any]], exp: str, eng: str, split: str, title: str
) -> None:
    """Per-interval rate of the first round of eng, one line per value of the field split
    (a variant, a provider), with every kill (red, dashed) and restart (green) marked."""
    rnd = min((r["round"] for r in rows if r["engine"] == eng), default=None)
    lines: dict[Any, list[tuple[float, float]]] = defaultdict(list)
    marks: list[tuple[str, float]] = []
    first = None
    for r in rows:
        if r["engine"] != eng or r["round"] != rnd:
            continue
        if r["metric"] == "interval_ops_s" and "interval" in r:
            if first is None:
                first = r.get(split)
            lines[r.get(split)].append((r["interval"] * r.get("interval_s", 1.0), r["value"]))
        elif r["metric"] in ("kill_at_s", "restart_at_s") and "event" in r:
            if split != "variant" or r.get("variant") == "durable":
                marks.append((r["metric"], r["value"]))
    styles = ["-", "--", ":"]
    for i, (key, pts) in enumerate(sorted(lines.items(), key=lambda kv: str(kv[0]))):
        if split == "variant" and key != "durable":
            continue
        pts.sort()
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            color=COLORS.get(eng, "k"),
            ls=styles[i % 3],
            lw=1.0,
            drawstyle="steps-post",
            label=f"{split} {key}",
        )
    for n, (what, at) in enumerate(sorted(marks, key=lambda m: m[1])):
        kill = what == "kill_at_s"
        ax.axvline(
            at,
            color="#d62728" if kill else "#2ca02c",
            ls="--" if kill else "-",
            lw=0.8,
            label=("kill -9" if kill else "restart answered") if n < 2 else None,
        )
    ax.set_title(f"{title}: {eng}, round {(rnd or 0) + 1}", fontsize=9)
    ax.set_xlabel("seconds")
    ax.set_ylabel("acknowledged modifies/s")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=6)


def _totals(rows: list[dict[str, Any]], exp: str, metrics: list[str], split: str) -> str:
    """Sums over rounds per engine (and split value), as lines of text."""
    tot: dict[tuple, float] = defaultdict(float)
    for r in rows:
        if r["experiment"] == exp and r["metric"] in metrics and "event" not in r:
            tot[(r["engine"], r.get(split, ""), r["metric"])] += r["value"]
    out = []
    for eng in ENGINE_ORDER:
        for key in sorted({k[1] for k in tot if k[0] == eng}):
            vals = ", ".join(f"{m} {tot.get((eng, key, m), 0):,.0f}" for m in metrics)
            out.append(f"{eng} {key}".strip() + f": {vals}")
    return "\n".join(out)


def _draw_crash(rows: list[dict[str, Any]], g: Groups) -> Any:
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    fig.suptitle(
        "crash: kill -9 of slapd under ModRate, restart on the same directory", fontsize=11
    )
    a = axes.flatten()
    for ax, eng in zip(a[:2], ENGINE_ORDER):
        _failure_series(ax, rows, "crash", eng, "variant", "durable commits")
    _bars(a[2], g, "crash", ["restart_p50_s", "restart_max_s"], (("variant", "durable"),))
    a[2].set_ylabel("seconds from restart to first answer")
    a[2].set_title("restart time, durable (median of rounds, min..max)", fontsize=9)
    text = _totals(
        rows,
        "crash",
        ["kills", "acked_modifies", "lost", "inflight_applied", "check_clean"],
        "variant",
    )
    a[3].axis("off")
    a[3].text(0, 1, "totals over rounds\n\n" + text, va="top", fontsize=8, family="monospace")
    return fig


def _draw_mpr(rows: list[dict[str, Any]], g: Groups) -> Any:
    fig, axes = plt.subplots(2, 2, figsize=(12, 7.5))
    fig.suptitle(
        "mpr: two providers and a consumer, provider 1 killed and restarted under ModRate",
        fontsize=11,
    )
    a = axes.flatten()
    for ax, eng in zip(a[:2], ENGINE_ORDER):
        _failure_series(ax, rows, "mpr", eng, "provider", "modifies per provider")
    _bars(
        a[2],
        g,
        "mpr",
        [f"lag_{ph}_{p}_ms" for ph in ("before", "during", "after") for p in ("p50", "p99")],
        log=True,
    )
    a[2].set_ylabel("replication lag, ms (log)")
    _bars(a[3], g, "mpr", ["converge_s", "restart_s"])
    a[3].set_ylabel("seconds")
    text = _totals(rows, "mpr", ["acked_modifies", "lost"], "")
    a[3].set_title(text.replace("\n", "; "), fontsize=7)
    return fig


def _draw_refresh(rows: list[dict[str, Any]], g: Groups) -> Any:
    exp = "refresh-under-load"
    fig, a = _figure(exp, "refresh-under-load: a new consumer joins a provider under load", 4, 18)
    for ax, kind, title in zip(a[:2], ("search", "modify"), ("searches", "modifies")):
        _timeseries(ax, rows, exp, f"{kind}_interval_ops_s")
        for r in rows:
            if r["metric"] in ("join_at_s", "refreshed_at_s") and r["round"] == 0:
                join = r["metric"] == "join_at_s"
                ax.axvline(
                    r["value"] + 1,  # intervals are drawn from 1
                    color=COLORS.get(r["engine"], "k"),
                    ls="--" if join else ":",
                    lw=0.8,
                )
        ax.set_title(f"{title} per interval; consumer joins (--), refreshed (:)", fontsize=8)
    kinds = ("search_without_ops_s", "search_during_ops_s")
    _bars(a[2], g, exp, [*kinds, "modify_without_ops_s", "modify_during_ops_s"])
    a[2].set_ylabel("provider ops/s")
    _bars(a[3], g, exp, ["refresh_s"])
    a[3].set_ylabel("seconds to refresh N entries")
    return fig
