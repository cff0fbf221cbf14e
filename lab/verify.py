"""verify.py -- what a load left behind, read back with ldap3 (an independent LDAP client:
the load itself speaks our BER client, lab/ldapwire.py), never inside a timed window.

- check_modified: a random sample of the entries a ModRate job modified must each hold the
  value of the entry's last acknowledged modify.  That is decidable because a modify client
  never has two modifies of one entry in flight and the clients' entries are disjoint
  (lab/load.py), so the modifies of an entry form a sequence and the last acknowledged one
  is the last one that committed.
- compare_replicas: a provider and its consumer hold the same entries: the same number, the
  same DNs and, entry by entry, the same values of every user attribute and entryCSN.  Each
  side is read with one paged search and kept as a digest per entry (16 bytes), so a tree
  of a million entries fits; only the first differing entries are read again in full, for
  the message.

A mismatch raises LabError with a one-line cause, which fails the lab step.  The helpers
below (paged searches, digests, diffs) are shared with lab/failures.py's crash and mpr.
"""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import load
from .makeldif import ROOTDN, ROOTPW, SUFFIX
from .slapd import Engine, LabError

if TYPE_CHECKING:  # experiments.py imports this module
    from .experiments import Lab

BATCH = 500  # entries named in one (|(uid=...)...) read-back search
SHOW = 3  # differences quoted in a failure message
REPLICA_ATTRS = ("*", "entryCSN")


# ---------------------------------------------------------------- ldap3 reads


def _paged(
    port: int, base: str, flt: str, attrs: Sequence[str], scope: str = "SUBTREE"
) -> Iterator[tuple[str, dict]]:
    """(dn, {attribute (lower case): sorted raw values}) of every entry of a paged search
    (scope: ldap3's SUBTREE or BASE) as the rootdn, through ldap3; the dn as the server
    wrote it."""
    import ldap3  # type: ignore[import-untyped]

    server = ldap3.Server("127.0.0.1", port=port, get_info=ldap3.NONE)
    conn = ldap3.Connection(server, ROOTDN, ROOTPW, auto_bind=True, receive_timeout=120)
    try:
        for e in conn.extend.standard.paged_search(
            base,
            flt,
            getattr(ldap3, scope),
            attributes=list(attrs),
            paged_size=1000,
            generator=True,
        ):
            if e.get("type") != "searchResEntry":
                continue
            yield (
                e["dn"],
                {k.lower(): sorted(bytes(v) for v in vs) for k, vs in e["raw_attributes"].items()},
            )
        rc = conn.result.get("result", 0) if conn.result else 0
        if rc == 32 and scope == "BASE":  # noSuchObject: the entry is not there
            return
        if rc != 0:
            raise LabError(f"ldap3 paged search: {conn.result}")
    finally:
        conn.unbind()


def ldap3_entries(port: int, base: str, flt: str, attrs: list[str]) -> dict[str, dict]:
    """{dn (lower case): {attribute (lower case): sorted raw values}} of a paged subtree
    search as the rootdn, through ldap3."""
    return {dn.lower(): attrs_ for dn, attrs_ in _paged(port, base, flt, attrs)}


def _escape(value: str) -> str:
    from ldap3.utils.conv import escape_filter_chars  # type: ignore[import-untyped]

    return str(escape_filter_chars(value))


def read_entries(port: int, dns: Iterable[str], attrs: list[str]) -> dict[str, dict]:
    """The named entries (as ldap3_entries), read BATCH to a search by their RDN under
    their parent (indexed, so the cost follows the entries named, not the tree); an
    entry that does not exist is absent from the result."""
    by_parent: dict[str, list[tuple[str, str]]] = {}
    want: set[str] = set()
    for dn in dns:
        rdn, parent = dn.split(",", 1)
        a, v = rdn.split("=", 1)
        by_parent.setdefault(parent, []).append((a, v))
        want.add(dn.lower())
    out: dict[str, dict] = {}
    for parent, rdns in by_parent.items():
        for i in range(0, len(rdns), BATCH):
            flt = "(|" + "".join(f"({a}={_escape(v)})" for a, v in rdns[i : i + BATCH]) + ")"
            for dn, e in ldap3_entries(port, parent, flt, attrs).items():
                if dn in want:
                    out[dn] = e
    return out


def read_entry(port: int, dn: str, attrs: list[str]) -> dict[str, dict]:
    """{dn (lower case): its attributes} of one entry by its DN, {} if it does not exist."""
    return {d.lower(): e for d, e in _paged(port, dn, "(objectClass=*)", attrs, "BASE")}


def uid_of(dn: str) -> int | None:
    """N of uid=user.N,..., else None."""
    head = dn.split(",", 1)[0]
    if head.lower().startswith("uid=user."):
        return int(head[len("uid=user.") :])
    return None


# ---------------------------------------------------------------- digests and diffs


def tree_digest(entries: dict[str, dict]) -> str:
    h = hashlib.sha256()
    for dn in sorted(entries):
        h.update(dn.encode() + b"\0")
        for a in sorted(entries[dn]):
            h.update(a.encode() + b"\1" + b"\2".join(entries[dn][a]) + b"\3")
    return h.hexdigest()


def entry_digest(attrs: dict[str, list[bytes]]) -> bytes:
    """16 bytes that differ when any attribute or value of the entry differs."""
    h = hashlib.blake2b(digest_size=16)
    for a in sorted(attrs):
        h.update(a.encode() + b"\1" + b"\2".join(attrs[a]) + b"\3")
    return h.digest()


def tree_diff(trees: list[dict[str, dict]]) -> str:
    """The first few entries on which the servers' trees differ, for the failure message."""
    out = []
    for dn in sorted(set().union(*trees)):
        views = [t.get(dn) for t in trees]
        if all(v == views[0] for v in views):
            continue
        attrs = sorted({a for v in views if v for a in v})
        diffs = {
            a: [(v or {}).get(a, [b"-"])[0][:48] for v in views]
            for a in attrs
            if len({str((v or {}).get(a)) for v in views}) > 1
        }
        out.append(f"{dn}: {diffs}")
        if len(out) == SHOW:
            break
    return f"{sum(1 for _ in out)}+ entries differ: " + " | ".join(out) if out else "trees equal"


# ---------------------------------------------------------------- check_modified


@dataclass
class ModCheck:
    acked: int = 0  # entries with an acknowledged modify
    checked: int = 0  # of which read back
    mismatches: int = 0
    examples: list[str] = field(default_factory=list)

    def fail_if_bad(self, what: str) -> None:
        if self.mismatches:
            raise LabError(
                f"{what}: {self.mismatches} of {self.checked} entries read back do not hold "
                f"their last acknowledged value: {'; '.join(self.examples[:SHOW])}"
            )


def check_modified(
    port: int,
    acked: Mapping[str, str],
    sample: int,
    seed: int,
    *,
    attr: str = "description",
    strict: bool = True,
) -> ModCheck:
    """Read back min(sample, all) entries of acked, {dn: the value of its last acknowledged
    modify of attr}, chosen at random (seeded), and check that each holds exactly that
    value.  strict: raise LabError on a mismatch (else the caller looks at the result)."""
    r = random.Random(seed)
    dns = sorted(acked)
    pick = r.sample(dns, min(sample, len(dns)))
    got = read_entries(port, pick, [attr])
    res = ModCheck(acked=len(dns), checked=len(pick))
    for dn in pick:
        want = [acked[dn].encode()]
        e = got.get(dn.lower())
        have = None if e is None else e.get(attr.lower(), [])
        if have != want:
            res.mismatches += 1
            seen = "no such entry" if have is None else repr([v[:40] for v in have])
            res.examples.append(f"{dn} holds {seen}, last acknowledged {want[0][:40]!r}")
    if strict:
        res.fail_if_bad("check_modified")
    return res


# ---------------------------------------------------------------- compare_replicas


def entry_digests(port: int, base: str, attrs: Sequence[str]) -> dict[str, bytes]:
    """{dn (lower case): entry_digest} of every entry under base (one paged search)."""
    return {dn.lower(): entry_digest(e) for dn, e in _paged(port, base, "(objectClass=*)", attrs)}


def _digests_client(port: int, base: str, attrs: Sequence[str], conn: Any) -> None:
    with load.reporting(conn, f"ldap3 read of port {port}"):
        conn.send(("ok", entry_digests(port, base, attrs)))


@dataclass
class ReplicaCheck:
    provider_entries: int = 0
    consumer_entries: int = 0
    differences: int = 0  # entries missing on one side or differing
    examples: list[str] = field(default_factory=list)

    def fail_if_bad(self, what: str) -> None:
        if self.differences:
            raise LabError(
                f"{what}: provider {self.provider_entries} entries, consumer "
                f"{self.consumer_entries}, {self.differences} differ: "
                + "; ".join(self.examples[:SHOW])
            )


def compare_replicas(
    provider_port: int,
    consumer_port: int,
    base: str,
    *,
    attrs: Sequence[str] = REPLICA_ATTRS,
    timeout: float = 3600,
    strict: bool = True,
) -> ReplicaCheck:
    """Every entry under base on both servers, compared: count, DNs, and per entry the
    values of attrs (every user attribute and entryCSN).  The two reads run in two
    processes at once (ldap3 is CPU-bound); strict: raise LabError on a difference."""
    ctx = mp.get_context("fork")
    started = [
        load.start_client(ctx, _digests_client, (port, base, tuple(attrs)))
        for port in (provider_port, consumer_port)
    ]
    sides = []
    for p, pipe in started:
        status, payload = load.client_result(p, pipe, timeout, "an ldap3 read sent no result")
        if status != "ok":
            raise LabError(f"compare_replicas: {payload}")
        sides.append(payload)
    prov, cons = sides
    res = ReplicaCheck(len(prov), len(cons))
    differing = sorted(dn for dn in prov.keys() | cons.keys() if prov.get(dn) != cons.get(dn))
    res.differences = len(differing)
    for dn in differing[:SHOW]:
        if dn not in cons:
            res.examples.append(f"{dn} only on the provider")
        elif dn not in prov:
            res.examples.append(f"{dn} only on the consumer")
        else:
            views = [read_entry(port, dn, list(attrs)) for port in (provider_port, consumer_port)]
            res.examples.append(tree_diff(views).split(": ", 1)[-1])
    if strict:
        res.fail_if_bad("compare_replicas")
    return res


# ---------------------------------------------------------------- the lab's rows

SAMPLE = 500  # entries read back after a ModRate job


def modified_rows(
    lab: Lab,
    exp: str,
    eng: Engine,
    rnd: int,
    port: int,
    acked: Mapping[str, str],
    **extra: Any,
) -> ModCheck:
    """check_modified of a job's acknowledged modifies on port, after its timed window:
    rows verify_checked and verify_mismatches, then LabError if any entry is wrong."""
    res = check_modified(port, acked, SAMPLE, seed=rnd, strict=False)
    prov = {"acked_entries": res.acked, **extra}
    lab.rec.row(exp, eng, rnd, "verify_checked", res.checked, "count", **prov)
    lab.rec.row(
        exp, eng, rnd, "verify_mismatches", res.mismatches, "count",
        examples=res.examples[:SHOW], **prov,
    )  # fmt: skip
    res.fail_if_bad(f"{exp}: check_modified")
    return res


# ldap3 costs about 185 us of CPU per whole entry (0.37 s for the 2,002 of smoke; 10x less
# for description and entryCSN only): a whole-tree compare of 1,000,000 entries would take
# over 3 minutes even with both sides read at once on the 2 cores.  Above
# FULL_MAX entries only round 0's compare after the refresh reads every user attribute;
# the others read what the load changes and entryCSN (an entry's CSN is that of its last
# change, so equal CSNs on both sides mean the same last change was applied to the entry).
FULL_MAX = 200_000
CHANGED_ATTRS = ("description", "entryCSN")


def replica_rows(
    lab: Lab,
    exp: str,
    eng: Engine,
    rnd: int,
    provider_port: int,
    consumer_port: int,
    phase: str,
) -> ReplicaCheck:
    """compare_replicas of the whole tree (the lab's suffix): rows replica_entries and
    replica_differences, then LabError if the two differ."""
    full = lab.size.entries <= FULL_MAX or (rnd == 0 and phase == "refresh")
    attrs = REPLICA_ATTRS if full else CHANGED_ATTRS
    res = compare_replicas(provider_port, consumer_port, SUFFIX, attrs=attrs, strict=False)
    prov = {"consumer_entries": res.consumer_entries, "phase": phase, "attrs": ",".join(attrs)}
    lab.rec.row(exp, eng, rnd, "replica_entries", res.provider_entries, "count", **prov)
    lab.rec.row(
        exp, eng, rnd, "replica_differences", res.differences, "count",
        examples=res.examples[:SHOW], **prov,
    )  # fmt: skip
    res.fail_if_bad(f"{exp}: compare_replicas")
    return res
