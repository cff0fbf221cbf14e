"""failures.py -- servers that die mid-load: `crash` (kill -9 of a loaded slapd, restart on
the same directory, every acknowledged modify checked) and `mpr` (two providers in
multi-provider replication plus a consumer, one provider killed and restarted under load).

What makes "lost" decidable.  Each client keeps several modifies in flight, but never two
on the same entry, and the entries of different clients are disjoint (except mpr's shared
ones, below).  So the modifies of one entry form a sequence: each is sent only after the
previous one was answered.  After a crash an entry must hold its last acknowledged value,
or the value of the one modify that was in flight when the connection died (it may have
committed without its answer reaching us); anything else is a lost acknowledged modify.
Every acknowledged modify is covered: an earlier one is superseded by a later
acknowledged one, which is checked itself.  In mpr two providers also write the same
(shared) entries at once and replication keeps the newest change (by CSN, whose time
comes from the one clock of this machine): the final value V of an entry is wrong when
some acknowledged modify W of that entry was sent after V was acknowledged (W committed
after V, so its CSN is newer, so W must win).  For an entry of one client that is the
rule above.

The read-back checks use ldap3, an independent client (paged searches), off every timed
path; the load uses our BER client (lab/ldapwire.py).  Every process is stopped by its
pid; a failing step leaves its slapd logs and mdb-cli output in the results folder.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import statistics
import string
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import ldapwire, load
from .makeldif import PEOPLE, ROOTDN, ROOTPW, SUFFIX
from .slapd import Engine, Instance, LabError, free_port
from .verify import ldap3_entries, read_entries, tree_diff, tree_digest, uid_of

if TYPE_CHECKING:  # experiments.py imports this module to register its experiments
    from .experiments import Lab, Size

_CHARS = string.ascii_letters + string.digits
BUCKET_S = 0.25  # time-series resolution of the failure plots


@dataclass(frozen=True)
class Plan:
    """Per-size counts and times of the two experiments."""

    crash_kills: int  # kills per round with durable commits
    crash_kills_nosync: int  # kills per round with dbnosync
    crash_load_s: tuple[float, float]  # the kill comes uniformly in this window of load
    crash_clients: int
    mpr_before_s: float
    mpr_down_s: float
    mpr_after_s: float
    mpr_shared: int  # entries both providers write
    mpr_converge_s: float  # longest wait for the three servers to agree after the load
    mpr_rate: float  # modifies/s offered to the two providers together
    mpr_digest_attrs: tuple[str, ...] = ("*", "entryCSN", "modifyTimestamp")


PLANS = {
    "smoke": Plan(10, 3, (0.3, 1.2), 3, 3.0, 2.0, 4.0, 50, 60.0, 200.0),
    "100k": Plan(25, 5, (0.5, 3.0), 3, 10.0, 4.0, 15.0, 500, 300.0, 200.0),
    # at 1m, fewer kills, and the digest of description and entryCSN only (the load changes
    # nothing else, and equal entryCSNs mean the same last change): ldap3 parses about 3k
    # whole entries/s here, so 3 x 1m whole entries would take an hour per round
    "1m": Plan(
        8, 2, (0.5, 3.0), 3, 10.0, 4.0, 15.0, 500, 900.0, 200.0, ("description", "entryCSN")
    ),
}


def plan(size: Size) -> Plan:
    return PLANS[size.name]


# ---------------------------------------------------------------- the load clients


@dataclass
class ClientLog:
    """What one client saw: (entry, value, sent, acknowledged) per acknowledged modify,
    (entry, value, sent) per modify whose answer never came, errors, ack times."""

    acked: list[tuple[int, str, float, float]] = field(default_factory=list)
    unanswered: list[tuple[int, str, float]] = field(default_factory=list)
    errors: int = 0
    disconnects: int = 0


def _modify_client(
    port: int,
    own: list[int],
    shared: list[int],
    depth: int,
    tag: str,
    seed: int,
    t_start: float,
    t_stop: float,
    reconnect: bool,
    rate: float,
    conn: Any,
) -> None:
    """A ModRate client: replaces description of entries from own (or, one time in four,
    from shared) with `tag sSEQ` and random characters, depth in flight, never two on one
    entry, from t_start to t_stop, at most rate per second (0: no cap).  On a lost
    connection it records what was in flight and, when reconnect is set, connects again
    until t_stop; otherwise it ends there."""
    log = ClientLog()
    r = random.Random(seed)
    seq = 0
    with load.reporting(conn, "modify client"):
        c: ldapwire.Connection | None = ldapwire.Connection(port, timeout=10)
        c.bind(ROOTDN, ROOTPW)
        while time.monotonic() < t_start:
            time.sleep(min(0.005, max(0.0, t_start - time.monotonic())))
        pending: dict[int, tuple[int, str, float]] = {}
        owned = load.Owned(own, r, shared)
        next_at = t_start

        def send_one(cn: ldapwire.Connection) -> None:
            nonlocal seq
            x = owned.pick()
            if x is None:
                return
            seq += 1
            value = f"{tag} s{seq} " + "".join(r.choices(_CHARS, k=60))
            req = ldapwire.modify_replace(load.entry_dn(x), "description", value)
            pending[cn.send(req)] = (x, value, time.monotonic())

        while time.monotonic() < t_stop + 10:
            if c is None:
                if not reconnect or time.monotonic() >= t_stop:
                    break
                try:
                    c = ldapwire.Connection(port, timeout=10)
                    c.bind(ROOTDN, ROOTPW)
                except (OSError, ldapwire.LdapError):
                    c = None
                    time.sleep(0.05)
                    continue
            try:
                while len(pending) < depth and time.monotonic() < t_stop:
                    if rate:  # paced: one request per 1/rate s, no catching up after a gap
                        if time.monotonic() < next_at:
                            break
                        next_at = max(next_at + 1.0 / rate, time.monotonic())
                    send_one(c)
                if not pending:
                    if time.monotonic() >= t_stop:
                        break
                    time.sleep(max(0.0, min(0.01, next_at - time.monotonic())))
                    continue
                c.fill()
                now = time.monotonic()
                for mid, tag_, start, _end in ldapwire.split_messages(c.buf):
                    if tag_ != ldapwire.MODIFY_RESPONSE or mid not in pending:
                        continue
                    x, value, sent = pending.pop(mid)
                    owned.done(x)
                    if ldapwire.result_code(c.buf, start) == 0:
                        log.acked.append((x, value, sent, now))
                    else:
                        log.errors += 1
            except (OSError, ldapwire.LdapError):
                log.disconnects += 1
                log.unanswered += list(pending.values())
                pending.clear()
                owned.busy.clear()
                try:
                    c.sock.close()
                except OSError:
                    pass
                c = None
        if c is not None:
            log.unanswered += list(pending.values())
            c.close()
        conn.send(("ok", log))


class Clients:
    """A set of _modify_client processes (forked), started together, joined by pid."""

    def __init__(self) -> None:
        self.ctx = mp.get_context("fork")
        self.procs: list[Any] = []
        self.pipes: list[Any] = []
        self.labels: list[Any] = []

    def start(self, label: Any, *args: Any) -> None:
        p, parent = load.start_client(self.ctx, _modify_client, args)
        self.procs.append(p)
        self.pipes.append(parent)
        self.labels.append(label)

    def join(self, timeout: float) -> list[tuple[Any, ClientLog]]:
        out, failures = [], []
        deadline = time.monotonic() + timeout
        for p, pipe, label in zip(self.procs, self.pipes, self.labels):
            wait = max(0.1, deadline - time.monotonic())
            status, payload = load.client_result(p, pipe, wait, "a modify client sent no result")
            if status == "ok":
                out.append((label, payload))
            else:
                failures.append(payload)
        if failures:
            raise LabError("; ".join(failures[:3]))
        return out


def _partition(entries: range, parts: int) -> list[list[int]]:
    return [list(entries[i::parts]) for i in range(parts)]


@dataclass
class Verdict:
    acked: int = 0  # acknowledged modifies covered
    entries: int = 0  # entries checked
    lost: int = 0  # acknowledged modifies lost
    inflight: int = 0  # modifies unanswered when the connection died
    inflight_applied: int = 0  # of which the server holds the value (committed, no answer)
    foreign: int = 0  # entries holding a value nobody sent
    examples: list[str] = field(default_factory=list)


def judge(logs: list[ClientLog], final: dict[int, bytes | None]) -> Verdict:
    """Apply the module's rule: final maps every touched entry to its description on the
    server (None when it no longer carries a value of this run)."""
    v = Verdict()
    by_entry: dict[int, list[tuple[str, float, float]]] = {}
    for log in logs:
        v.acked += len(log.acked)
        v.inflight += len(log.unanswered)
        for x, value, sent, ack in log.acked:
            by_entry.setdefault(x, []).append((value, sent, ack))
        for x, value, sent in log.unanswered:
            by_entry.setdefault(x, []).append((value, sent, float("inf")))
    v.entries = len(by_entry)
    for x, mods in by_entry.items():
        got = final.get(x)
        have = got.decode() if got is not None else None
        match = [m for m in mods if m[0] == have]
        if have is not None and not match:
            v.foreign += 1
            v.examples.append(f"user.{x} holds {have[:40]!r}, which no client sent")
            continue
        acked_at = match[0][2] if match else float("-inf")
        if match and match[0][2] == float("inf"):
            v.inflight_applied += 1
        late = [m for m in mods if m[2] != float("inf") and m[1] > acked_at]
        if late:
            v.lost += len(late)
            v.examples.append(
                f"user.{x} holds {(have or '(an older value)')[:40]!r}; acknowledged and "
                f"sent later: {late[-1][0][:40]!r}"
            )
    return v


# ---------------------------------------------------------------- crash


def mdb_cli_check(db: str, log: str) -> bool:
    """`mdb-cli check DB` (our checker, read-only); True when it reports the file clean."""
    exe = os.path.join(os.path.dirname(sys.executable), "mdb-cli")
    cmd = [exe] if os.path.exists(exe) else [sys.executable, "-m", "mdb_cli.main"]
    with open(log, "a") as out:
        out.write(f"$ mdb-cli check {db}\n")
        out.flush()
        r = subprocess.run(
            [*cmd, "check", db], stdout=out, stderr=subprocess.STDOUT, timeout=600, check=False
        )
    return r.returncode == 0


def _buckets(times: list[float], t0: float, t1: float) -> list[float]:
    n = max(1, int((t1 - t0) / BUCKET_S) + 1)
    b = [0] * n
    for t in times:
        i = int((t - t0) / BUCKET_S)
        if 0 <= i < n:
            b[i] += 1
    return [c / BUCKET_S for c in b]


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))] if s else 0.0


def crash(lab: Lab, eng: Engine, rnd: int) -> None:
    """kill -9 of a slapd under ModRate, restarted on the same directory: every
    acknowledged modify checked on the restarted server (ldap3), `mdb-cli check` of the
    file after each kill, time from restart to first answer; durable commits (nothing may
    be lost) and dbnosync (reported as it is)."""
    pl = plan(lab.size)
    rng = random.Random(rnd * 7919 + (0 if eng.name == "stock" else 1))
    for variant, kills, nosync in (
        ("durable", pl.crash_kills, False),
        ("nosync", pl.crash_kills_nosync, True),
    ):
        tag = f"crash-{variant}-{eng.name}-r{rnd}"
        inst = lab.instance(eng, tag, nosync=nosync)
        checklog = os.path.join(inst.dir, "mdb-cli-check.log")
        with lab.measuring(inst, tag):
            _crash_variant(lab, eng, rnd, inst, variant, kills, rng, checklog)


def _crash_variant(
    lab: Lab,
    eng: Engine,
    rnd: int,
    inst: Instance,
    variant: str,
    kills: int,
    rng: random.Random,
    checklog: str,
) -> None:
    pl = plan(lab.size)
    n = lab.size.entries
    bound = time.monotonic() + lab.size.step_timeout
    inst.start()
    t_step = time.monotonic()
    acks: list[float] = []
    restarts: list[float] = []
    total = Verdict()
    clean = 0
    events: list[tuple[str, float]] = []
    for k in range(kills):
        if time.monotonic() > bound:
            raise LabError(f"crash {variant}: {k} of {kills} kills within the step's time bound")
        cycle = f"crash-{rnd}-{k}"
        clients = Clients()
        t_start = time.monotonic() + 0.3
        kill_at = t_start + rng.uniform(*pl.crash_load_s)
        parts = _partition(range(n), pl.crash_clients)
        for i, own in enumerate(parts):
            clients.start(
                i, inst.port, own, [], 2, f"{cycle}-c{i}", rng.randrange(1 << 30),
                t_start, kill_at + 10, False, 0.0,
            )  # fmt: skip
        time.sleep(max(0.0, kill_at - time.monotonic()))
        inst.kill()
        t_kill = time.monotonic()
        events.append(("kill", t_kill - t_step))
        logs = [log for _, log in clients.join(60)]
        for log in logs:
            if log.errors:
                raise LabError(f"crash {variant}: {log.errors} modifies answered with an error")
            acks += [a[3] for a in log.acked]
        if mdb_cli_check(inst.db, checklog):
            clean += 1
        else:
            raise LabError(f"crash {variant} kill {k + 1}: mdb-cli check found damage ({checklog})")
        t_spawn = time.monotonic()
        restart = inst.start(poll=0.005)
        restarts.append(restart)
        events.append(("restart", t_spawn + restart - t_step))
        # read back every entry this cycle touched (ldap3: an independent client), by uid
        # (indexed), so the cost follows the entries touched, not the size of the tree
        touched = sorted({m[0] for log in logs for m in (*log.acked, *log.unanswered)})
        final: dict[int, bytes | None] = {}
        dns = [f"uid=user.{x},{PEOPLE}" for x in touched]
        for dn, attrs in read_entries(inst.port, dns, ["description"]).items():
            x = uid_of(dn)
            value = attrs.get("description", [b""])[0]
            if x is not None and value.startswith(f"{cycle}-".encode()):
                final[x] = value
        v = judge(logs, final)
        for f in ("acked", "entries", "lost", "inflight", "inflight_applied", "foreign"):
            setattr(total, f, getattr(total, f) + getattr(v, f))
        total.examples += v.examples
    t_end = time.monotonic()
    inst.stop()
    prov = {"variant": variant}
    for i, rate in enumerate(_buckets(acks, t_step, t_end)):
        lab.rec.row(
            "crash", eng, rnd, "interval_ops_s", rate, "ops/s", interval=i,
            interval_s=BUCKET_S, **prov,
        )  # fmt: skip
    for i, (what, at) in enumerate(events):
        lab.rec.row("crash", eng, rnd, f"{what}_at_s", at, "s", event=i, **prov)
    rec = lab.rec.row
    rec("crash", eng, rnd, "kills", kills, "count", **prov)
    rec("crash", eng, rnd, "acked_modifies", total.acked, "count", **prov)
    rec("crash", eng, rnd, "entries_checked", total.entries, "count", **prov)
    rec("crash", eng, rnd, "lost", total.lost, "count", examples=total.examples[:5], **prov)
    rec("crash", eng, rnd, "foreign_values", total.foreign, "count", **prov)
    rec("crash", eng, rnd, "inflight_at_kill", total.inflight, "count", **prov)
    rec("crash", eng, rnd, "inflight_applied", total.inflight_applied, "count", **prov)
    rec("crash", eng, rnd, "check_clean", clean, "count", **prov)
    rec("crash", eng, rnd, "restart_p50_s", statistics.median(restarts), "s", **prov)
    rec("crash", eng, rnd, "restart_max_s", max(restarts), "s", **prov)
    if variant == "durable" and (total.lost or total.foreign):
        raise LabError(
            f"crash durable: {total.lost} acknowledged modifies lost, {total.foreign} foreign "
            f"values: {'; '.join(total.examples[:3])}"
        )
    if total.foreign:
        raise LabError(f"crash {variant}: values nobody wrote: {total.examples[:3]}")


# ---------------------------------------------------------------- mpr


def _read_attr(port: int, dn: str, attr: str) -> list[bytes]:
    c = ldapwire.Connection(port, timeout=10)
    try:
        return sorted(ldapwire.read_attr(c, dn, attr))
    finally:
        c.close()


def _syncprov_instance(lab: Lab, eng: Engine, name: str, own_load: bool = False) -> Instance:
    """A loaded instance that serves as a replication provider (the syncprov overlay);
    own_load: loaded by its own slapadd, not copied (Lab.instance)."""
    return lab.instance(
        eng,
        name,
        own_load=own_load,
        extra_global="moduleload syncprov\n",
        extra_db="overlay syncprov\nsyncprov-checkpoint 1000 1\n",
    )


def _syncrepl(rid: int, port: int) -> str:
    return (
        f"syncrepl rid={rid:03d} provider=ldap://127.0.0.1:{port}/ type=refreshAndPersist "
        f'searchbase="{SUFFIX}" bindmethod=simple binddn="{ROOTDN}" credentials={ROOTPW} '
        'retry="1 +" timeout=10\n'
    )


PROBE_ENTRIES = 16  # the last entries of ou=People, kept out of the load for the probes


class Prober(threading.Thread):
    """Replication lag probes: every PROBE_EVERY_S, write `probe I` into the description of
    one of PROBE_ENTRIES entries (in turn) on `writer`, and poll every reader until it holds
    that probe or a later one of the same entry (PROBE_WAIT_S at most).  Each lag is
    recorded under the phase set when the probe was sent; none is sent while phase is None
    or after done is set."""

    PROBE_EVERY_S = 0.1
    PROBE_WAIT_S = 30.0

    def __init__(self, writer: int, readers: list[int], n: int, deadline: float) -> None:
        super().__init__(daemon=True)
        self.writer, self.readers, self.deadline = writer, readers, deadline
        self.entries = [n - 1 - k for k in range(PROBE_ENTRIES)]
        self.phase: str | None = None
        self.lags: dict[str, list[float]] = {}
        self.timeouts: dict[str, int] = {}
        self.error = ""
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self._run()
        except Exception as e:
            self.error = f"{type(e).__name__}: {e}"

    def _run(self) -> None:
        w = ldapwire.Connection(self.writer, timeout=10)
        w.bind(ROOTDN, ROOTPW)
        pending: dict[int, tuple[int, float, str, set[int]]] = {}  # i: entry, sent, phase, left
        i = 0
        next_send = time.monotonic()
        while time.monotonic() < self.deadline:
            now = time.monotonic()
            phase = self.phase
            if not self.done.is_set() and phase is not None and now >= next_send:
                x = self.entries[i % PROBE_ENTRIES]
                dn = f"uid=user.{x},{PEOPLE}"
                if w.wait_result(
                    w.send(ldapwire.modify_replace(dn, "description", f"probe {i}")),
                    ldapwire.MODIFY_RESPONSE,
                ):
                    raise LabError("a lag probe's modify failed")
                pending[i] = (x, time.monotonic(), phase, set(self.readers))
                i += 1
                next_send = max(next_send + self.PROBE_EVERY_S, now)
            if self.done.is_set() and not pending:
                return
            for x in {p[0] for p in pending.values()}:
                for port in self.readers:
                    try:
                        vals = _read_attr(port, f"uid=user.{x},{PEOPLE}", "description")
                    except (OSError, ldapwire.LdapError):
                        continue
                    seen = max(
                        (int(v.split()[1]) for v in vals if v.startswith(b"probe ")), default=-1
                    )
                    for j, (xj, _s, _p, left) in pending.items():
                        if xj == x and j <= seen:
                            left.discard(port)
            now = time.monotonic()
            for j in list(pending):
                _x, sent, ph, left = pending[j]
                if not left:
                    self.lags.setdefault(ph, []).append((now - sent) * 1000)
                    del pending[j]
                elif now - sent > self.PROBE_WAIT_S:
                    self.timeouts[ph] = self.timeouts.get(ph, 0) + 1
                    del pending[j]
            time.sleep(0.003)


def _replication_flows(ports: list[int], n: int, rnd: int, bound: float) -> float:
    """Write a token on each provider (ports[0], ports[1]), each into its own probe entry,
    and wait until every other server holds it (polled every 50 ms, up to bound); the time
    when they all did.  The tokens start with neither "probe " nor "mpr-", so neither the
    Prober nor the judge of the load reads them as theirs."""
    left: dict[tuple[str, int], bytes] = {}  # (dn, reader port): the token it must show
    for k, port in enumerate(ports[:2]):
        dn = f"uid=user.{n - 1 - k},{PEOPLE}"
        token = f"ready {rnd} {k} {time.monotonic_ns()}"
        c = ldapwire.Connection(port, timeout=10)
        try:
            c.bind(ROOTDN, ROOTPW)
            msgid = c.send(ldapwire.modify_replace(dn, "description", token))
            if c.wait_result(msgid, ldapwire.MODIFY_RESPONSE):
                raise LabError(f"the readiness token's modify failed on port {port}")
        finally:
            c.close()
        left.update({(dn, p): token.encode() for p in ports if p != port})
    while True:
        for (dn, p), token in list(left.items()):
            try:
                if _read_attr(p, dn, "description") == [token]:
                    del left[(dn, p)]
            except (OSError, ldapwire.LdapError):
                pass
        if not left:
            return time.monotonic()
        if time.monotonic() > bound:
            raise LabError(f"replication did not flow before the load: {sorted(left)} missing")
        time.sleep(0.05)


def mpr(lab: Lab, eng: Engine, rnd: int) -> None:
    """Two providers in multi-provider replication (syncprov + syncrepl to each other)
    and a consumer of provider 2; ModRate on both providers, on their own and on shared
    entries; provider 1 SIGKILLed mid-load and restarted: rate per provider over time, time
    until all three agree (contextCSN and an ldap3 digest of the whole tree), acknowledged
    modifies lost, replication lag before and after."""
    pl = plan(lab.size)
    n = lab.size.entries
    ports = [free_port(), free_port(), free_port()]
    while len(set(ports)) < 3:
        ports = [free_port(), free_port(), free_port()]
    provs: list[Instance] = []
    for sid, other in ((1, ports[1]), (2, ports[0])):
        provs.append(
            lab.instance(
                eng,
                f"mpr-provider{sid}-{eng.name}-r{rnd}",
                nosync=False,
                extra_global=f"moduleload syncprov\nserverID {sid}\n",
                extra_db=_syncrepl(sid, other)
                + "multiprovider on\noverlay syncprov\nsyncprov-checkpoint 100 1\n",
            )
        )
    cons = lab.instance(eng, f"mpr-consumer-{eng.name}-r{rnd}", extra_db=_syncrepl(3, ports[1]))
    insts = [*provs, cons]
    try:
        _mpr(lab, eng, rnd, pl, n, ports, provs, cons)
    except Exception:
        for i in insts:
            lab.keep_logs(i.dir, os.path.basename(i.dir).split("-", 1)[1])
        raise
    finally:
        for i in insts:
            lab.discard(i)


def _mpr(
    lab: Lab,
    eng: Engine,
    rnd: int,
    pl: Plan,
    n: int,
    ports: list[int],
    provs: list[Instance],
    cons: Instance,
) -> None:
    bound = time.monotonic() + lab.size.step_timeout
    t_start = time.monotonic()
    for inst, port in zip([*provs, cons], ports):
        inst.start(port=port)
    # every server answers and the three agree before the load
    _converge([*provs, cons], bound)
    # and replication flows both ways: equal contextCSNs are not enough, for each syncrepl
    # first runs its own refresh of the copied tree (at 1m longer than the whole load)
    ready_s = _replication_flows(ports, n, rnd, bound) - t_start
    lab.rec.row("mpr", eng, rnd, "ready_s", ready_s, "s")
    rng = random.Random(rnd * 104729 + (0 if eng.name == "stock" else 1))
    shared = list(range(pl.mpr_shared))
    per = 2  # clients per provider
    own = _partition(range(pl.mpr_shared, n - PROBE_ENTRIES), 2 * per)
    clients = Clients()
    t0 = time.monotonic() + 0.5
    t_kill = t0 + pl.mpr_before_s
    t_restart_due = t_kill + pl.mpr_down_s
    t_stop = t_restart_due + pl.mpr_after_s
    for p in range(2):
        for j in range(per):
            clients.start(
                p, ports[p], own[p * per + j], shared, 2, f"mpr-p{p + 1}-c{j}",
                rng.randrange(1 << 30), t0, t_stop, True, pl.mpr_rate / (2 * per),
            )  # fmt: skip
    prober = Prober(ports[1], [ports[0], ports[2]], n, bound)
    prober.start()
    time.sleep(max(0.0, t0 - time.monotonic()))
    prober.phase = "before"
    time.sleep(max(0.0, t_kill - time.monotonic()))
    prober.phase = "during"
    provs[0].kill()
    killed = time.monotonic()
    time.sleep(max(0.0, t_restart_due - time.monotonic()))
    t_spawn = time.monotonic()
    restart_s = provs[0].start(port=ports[0], poll=0.005)
    restarted = t_spawn + restart_s  # the first answer (start() then checks the engine)
    prober.phase = "after"
    time.sleep(max(0.0, t_stop - time.monotonic()))
    prober.phase = None
    prober.done.set()
    logs = clients.join(60)
    converge_s, digests, final_tree = _converge(
        [*provs, cons],
        min(bound, time.monotonic() + pl.mpr_converge_s),
        pl.mpr_digest_attrs,
        t_stop,
    )
    prober.join(Prober.PROBE_WAIT_S + 15)
    if prober.error:
        raise LabError(f"lag prober: {prober.error}")
    # what the three now agree on, against what the clients were told
    final: dict[int, bytes | None] = {}
    for dn, attrs in final_tree.items():
        x = uid_of(dn)
        if x is not None:
            vals = attrs.get("description", [])
            final[x] = vals[0] if vals and vals[0].startswith(b"mpr-") else None
    v = judge([log for _, log in logs], final)
    errors = sum(log.errors for _, log in logs)
    # rows: the rate of each provider over time, with the kill and the restart
    rec = lab.rec.row
    phases = {"before": (t0, killed), "during": (killed, restarted), "after": (restarted, t_stop)}
    for p in range(2):
        times = [a[3] for label, log in logs if label == p for a in log.acked]
        for i, rate in enumerate(_buckets(times, t0, t_stop)):
            rec(
                "mpr", eng, rnd, "interval_ops_s", rate, "ops/s", interval=i,
                interval_s=BUCKET_S, provider=p + 1,
            )  # fmt: skip
        for ph, (a, b) in phases.items():
            rate = sum(1 for t in times if a <= t < b) / max(b - a, 1e-9)
            rec("mpr", eng, rnd, f"p{p + 1}_{ph}_ops_s", rate, "ops/s")
    for ph, (a, b) in phases.items():
        every = [a_[3] for _, log in logs for a_ in log.acked]
        rec("mpr", eng, rnd, f"{ph}_ops_s", sum(1 for t in every if a <= t < b) / (b - a), "ops/s")
    rec("mpr", eng, rnd, "kill_at_s", killed - t0, "s", event=0)
    rec("mpr", eng, rnd, "restart_at_s", restarted - t0, "s", event=1)
    rec("mpr", eng, rnd, "restart_s", restart_s, "s")
    rec("mpr", eng, rnd, "converge_s", converge_s, "s")
    rec("mpr", eng, rnd, "acked_modifies", v.acked, "count")
    rec("mpr", eng, rnd, "entries_checked", v.entries, "count", shared=len(shared))
    rec("mpr", eng, rnd, "lost", v.lost, "count", examples=v.examples[:5])
    rec("mpr", eng, rnd, "inflight_at_kill", v.inflight, "count")
    rec("mpr", eng, rnd, "inflight_applied", v.inflight_applied, "count")
    rec("mpr", eng, rnd, "errors", errors, "count")
    rec("mpr", eng, rnd, "tree_entries", len(final_tree), "count", digest=digests[0])
    for ph in ("before", "during", "after"):
        lags = prober.lags.get(ph, [])
        extra = {"probes": len(lags), "probe_timeouts": prober.timeouts.get(ph, 0)}
        rec("mpr", eng, rnd, f"lag_{ph}_p50_ms", _pct(lags, 0.5), "ms", **extra)
        rec("mpr", eng, rnd, f"lag_{ph}_p99_ms", _pct(lags, 0.99), "ms", **extra)
    if v.lost or v.foreign:
        raise LabError(
            f"mpr: {v.lost} acknowledged modifies lost, {v.foreign} foreign values: "
            + "; ".join(v.examples[:3])
        )
    if errors:
        raise LabError(f"mpr: {errors} modifies answered with an error")
    if not prober.lags.get("before") or not prober.lags.get("after"):
        raise LabError(f"mpr: lag probes missing: {prober.timeouts} timeouts")


def _converge(
    insts: list[Instance], bound: float, digest_attrs: tuple[str, ...] = (), since: float = 0.0
) -> tuple[float, list[str], dict[str, dict]]:
    """Wait until every server holds the same contextCSN values (polled every 20 ms) and,
    with digest_attrs, the same digest of those attributes of every entry of the tree
    (ldap3 paged searches, not timed themselves: the time reported is when the contextCSNs
    that then proved equal were seen).  Returns
    (seconds from since (or the call) to agreement, digests, the first server's tree)."""
    t0 = since or time.monotonic()
    diff = ""
    while True:
        csns = []
        for i in insts:
            try:
                csns.append(_read_attr(i.port, SUFFIX, "contextCSN"))
            except (OSError, ldapwire.LdapError):
                csns.append(None)
        if csns[0] and all(c == csns[0] for c in csns):
            agreed = time.monotonic() - t0
            if not digest_attrs:
                return agreed, [], {}
            attrs = list(digest_attrs)
            trees = [ldap3_entries(i.port, SUFFIX, "(objectClass=*)", attrs) for i in insts]
            digests = [tree_digest(t) for t in trees]
            if len(set(digests)) == 1:
                return agreed, digests, trees[0]
            diff = tree_diff(trees)
        if time.monotonic() > bound:
            raise LabError(f"the servers did not agree in time: contextCSN {csns}; {diff}")
        time.sleep(0.02)
