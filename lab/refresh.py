"""refresh.py -- `refresh-under-load`: a new, empty consumer joins a loaded provider that is
serving SearchRate and ModRate at once; how long its refresh takes, and what it costs the
provider's clients.

One rate job (load.run_job: one SearchRate client with 4 in flight and one ModRate client
with 2, dbnosync as in table6) runs for warm-up + `baseline` + `budget` seconds.  The
consumer starts when the baseline window ends.  Its refresh is over when its contextCSN
reaches the provider's contextCSN as read at its start (the consumer writes contextCSN
only when the refresh phase ends).  The provider's rates "without" come from the baseline
window's 1-second intervals, "during" from the intervals that overlap the refresh (at
smoke size that is one or two intervals, partly without a consumer), "after" from the
whole intervals after it (the consumer replicating in persist mode) when the job lasts
longer than the refresh.  When the refresh
outlasts the job, the wait goes on without load (bounded by the step's timeout) and the
row says so (`outlasted_load`).
Afterwards the consumer must hold every entry, and a sample of the entries the ModRate
client modified must hold their last acknowledged values on the provider (lab/verify.py).
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import TYPE_CHECKING, Any

from . import ldapwire, load, verify
from .failures import _read_attr, _syncprov_instance, _syncrepl
from .makeldif import SUFFIX
from .slapd import Engine, Instance, LabError

if TYPE_CHECKING:  # experiments.py imports this module to register the experiment
    from .experiments import Lab

# (baseline, budget) seconds per size: the window without a consumer, and how long the
# load goes on after the consumer starts
WINDOWS = {"smoke": (2.0, 3.0), "100k": (5.0, 30.0), "1m": (10.0, 300.0)}


def refresh_under_load(lab: Lab, eng: Engine, rnd: int) -> None:
    """A new consumer joins a provider serving SearchRate and ModRate: the refresh time of
    N entries, and the provider's search and modify rates during the refresh against
    without a consumer."""
    baseline, budget = WINDOWS[lab.size.name]
    tag = f"refresh-under-load-{eng.name}-r{rnd}"
    prov = _syncprov_instance(lab, eng, f"{tag}-provider")
    with lab.measuring(prov, f"{tag}-provider"):
        prov.start()
        cons = lab.instance(eng, f"{tag}-consumer", loaded=False, extra_db=_syncrepl(1, prov.port))
        with lab.measuring(cons, f"{tag}-consumer"):
            _run(lab, eng, rnd, prov, cons, baseline, budget)


def _run(
    lab: Lab,
    eng: Engine,
    rnd: int,
    prov: Instance,
    cons: Instance,
    baseline: float,
    budget: float,
) -> None:
    warm = lab.size.warmup
    tm = load.Timing(warm, baseline + budget, 1.0)
    specs = [load.JobSpec("search", 1, 4), load.JobSpec("modify", 1, 2)]
    job: dict[str, Any] = {}
    err: list[str] = []

    def run() -> None:
        try:
            job.update(load.run_job(prov.port, prov.pid, lab.size.entries, specs, tm, rnd + 11))
        except Exception as e:  # the step fails below with this
            err.append(f"{type(e).__name__}: {e}")

    t0 = time.monotonic() + 1.0  # run_job's common start (it allows 1 s to connect)
    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    time.sleep(max(0.0, t0 + warm + baseline - time.monotonic()))
    csn = _read_attr(prov.port, SUFFIX, "contextCSN")
    if not csn:
        raise LabError("the provider's suffix has no contextCSN")
    target = max(csn)
    t_join = time.monotonic()
    cons.start()
    deadline = t_join + lab.size.step_timeout
    while True:
        try:
            got = _read_attr(cons.port, SUFFIX, "contextCSN")
        except (OSError, ldapwire.LdapError):
            got = []
        if got and max(got) >= target:
            break
        if time.monotonic() > deadline:
            raise LabError("the consumer did not finish its refresh in time")
        time.sleep(0.05)
    t_done = time.monotonic()
    refresh = t_done - t_join
    runner.join(tm.warmup + tm.duration + load.GRACE_S + 30)
    if err or not job:
        raise LabError(f"the rate job failed: {err[0] if err else 'no result'}")
    c = ldapwire.Connection(cons.port, timeout=600)
    rc, count, _ = c.search(SUFFIX, ldapwire.present("objectClass"), ["1.1"])
    c.close()
    if rc != 0 or count != lab.size.entries + 2:
        raise LabError(f"the consumer holds {count} entries after its refresh (rc {rc})")
    verify.modified_rows(lab, "refresh-under-load", eng, rnd, prov.port, job["acked"])
    # rates from the 1-second intervals: without (baseline) and during the refresh
    i_join = int(t_join - t0)  # the intervals that overlap the refresh
    i_done = int(t_done - t0) + 1
    outlasted = t_done > t0 + warm + baseline + budget
    rows = {"refresh_s": (refresh, "s"), "refresh_entries_s": (count / refresh, "entries/s")}
    for kind in ("search", "modify"):
        iv = job["kinds"][kind].intervals
        base = iv[int(warm) : int(warm + baseline)]
        during = iv[i_join : min(i_done, len(iv))]
        rows[f"{kind}_without_ops_s"] = (statistics.fmean(base) if base else 0.0, "ops/s")
        if during:
            rows[f"{kind}_during_ops_s"] = (statistics.fmean(during), "ops/s")
        after = iv[i_done + 1 :]  # the consumer in persist mode, when the load outlasts it
        if after:
            rows[f"{kind}_after_ops_s"] = (statistics.fmean(after), "ops/s")
        for i, v in enumerate(iv):
            lab.rec.row(
                "refresh-under-load", eng, rnd, f"{kind}_interval_ops_s", v, "ops/s",
                interval=i, interval_s=1.0, warmup=i < int(warm),
            )  # fmt: skip
    u, s = cons.cpu()
    extra = {"outlasted_load": outlasted, "consumer_user_s": u, "consumer_sys_s": s}
    for metric, (value, unit) in rows.items():
        lab.rec.row("refresh-under-load", eng, rnd, metric, value, unit, **extra)
    for i, (what, at) in enumerate((("join", t_join), ("refreshed", t_done))):
        lab.rec.row("refresh-under-load", eng, rnd, f"{what}_at_s", at - t0, "s", event=i)
