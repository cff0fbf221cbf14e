"""lab/verify.py's read-back checks against a real slapd (stock engine, 300 entries, on
127.0.0.1): they pass on what a ModRate job really left, and fail when an entry was changed
behind the load's back, when the load's record is wrong, and when a consumer misses an
entry or holds another value.  No speed is asserted."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from lab import fastclient, load, slapd, verify
from lab.makeldif import PEOPLE, ROOTDN, ROOTPW, SUFFIX
from lab.makeldif import write as write_ldif

N = 300
_MISSING = [p for p in (slapd.BACK_MDB, "/usr/sbin/slapd") if not os.path.exists(p)]
pytestmark = pytest.mark.skipif(bool(_MISSING), reason=f"slapd not installed: {_MISSING}")


@pytest.fixture(scope="module")
def stock() -> slapd.Engine:
    return slapd.make_engine("stock")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, stock: slapd.Engine) -> str:
    """A database of N people loaded once by slapadd; each server runs on a copy."""
    d = tmp_path_factory.mktemp("verify-template")
    ldif = d / "people.ldif"
    with open(ldif, "w") as f:
        write_ldif(f, N, seed=1)
    inst = slapd.Instance(str(d / "inst"), stock, maxsize=1 << 30)
    inst.slapadd(str(ldif), timeout=120)
    return inst.db


@contextmanager
def serving(where, template: str, eng: slapd.Engine) -> Iterator[slapd.Instance]:
    inst = slapd.Instance(str(where), eng, maxsize=1 << 30)
    shutil.copy(os.path.join(template, "data.mdb"), inst.db)
    try:
        inst.start(timeout=30)
        yield inst
    finally:
        inst.stop()


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, template, stock) -> Iterator[tuple[slapd.Instance, load.Acked]]:
    """A server after one ModRate job of two clients, and what the job was told."""
    with serving(tmp_path_factory.mktemp("verify-modrate"), template, stock) as inst:
        res = load.run_job(
            inst.port, inst.pid, N, [load.JobSpec("modify", 2, 2)], load.Timing(0.2, 1.0, 0.5)
        )
        assert res["kinds"]["modify"].errors == 0
        assert isinstance(res["acked"], load.Acked)
        yield inst, res["acked"]


def test_a_paced_modrate_offers_its_rate_and_no_more(tmp_path, template, stock) -> None:
    """A paced job (syncrepl's like-for-like lag phase) sends about rate requests a
    second whatever the server could take: the same server answers several times more
    unpaced.  The acknowledged values of both read back as any job's."""
    tm = load.Timing(0.2, 1.5, 0.5)
    with serving(tmp_path, template, stock) as inst:
        paced = load.run_job(inst.port, inst.pid, N, [load.JobSpec("modify", 1, 2, 40.0)], tm, 5)
        mods = paced["kinds"]["modify"]
        assert mods.errors == 0
        assert 40.0 * 1.5 * 0.8 <= mods.ops <= 40.0 * 1.5 * 1.1 + 2, mods.ops
        res = verify.check_modified(inst.port, paced["acked"], 50, seed=1, strict=False)
        assert res.mismatches == 0 and res.checked > 0
        fast = load.run_job(inst.port, inst.pid, N, [load.JobSpec("modify", 1, 2)], tm, 6)
        assert fast["kinds"]["modify"].ops > 3 * mods.ops
        res = verify.check_modified(inst.port, fast["acked"], 50, seed=1, strict=False)
        assert res.mismatches == 0 and res.checked > 0


def test_ldload_refuses_a_paced_job() -> None:
    with pytest.raises(ValueError, match="unpaced"):
        fastclient.command(
            1, 10, [load.JobSpec("modify", 1, 2, 10.0)], load.Timing(0, 1, 1), 1, None
        )


@pytest.fixture
def pair(tmp_path, template, stock) -> Iterator[tuple[slapd.Instance, slapd.Instance]]:
    """Two servers on copies of one database: the same entries, the same entryCSNs."""
    with (
        serving(tmp_path / "a", template, stock) as a,
        serving(tmp_path / "b", template, stock) as b,
    ):
        yield a, b


def _ldap3(port: int):  # type: ignore[no-untyped-def]
    import ldap3  # type: ignore[import-untyped]

    server = ldap3.Server("127.0.0.1", port=port, get_info=ldap3.NONE)
    return ldap3.Connection(server, ROOTDN, ROOTPW, auto_bind=True, receive_timeout=30)


def _replace(port: int, dn: str, value: str) -> None:
    import ldap3

    c = _ldap3(port)
    try:
        assert c.modify(dn, {"description": [(ldap3.MODIFY_REPLACE, [value])]}), c.result
    finally:
        c.unbind()


def _delete(port: int, dn: str) -> None:
    c = _ldap3(port)
    try:
        assert c.delete(dn), c.result
    finally:
        c.unbind()


def test_a_modrate_job_s_acknowledged_values_are_what_the_server_holds(loaded) -> None:
    inst, acked = loaded
    # two clients, each on its own entries (x % 2), nearly every entry written at this size
    residues = [{x % 2 for x in last} for _seed, last in acked.parts]
    assert sorted(map(sorted, residues)) == [[0], [1]]
    assert len(acked) > N // 2
    res = verify.check_modified(inst.port, acked, len(acked), seed=1)
    assert (res.acked, res.checked, res.mismatches) == (len(acked), len(acked), 0)
    small = verify.check_modified(inst.port, acked, 25, seed=2)
    assert small.checked == 25 and small.mismatches == 0


def test_an_entry_changed_behind_the_load_s_back_fails_the_check(loaded) -> None:
    inst, acked = loaded
    dn = sorted(acked)[len(acked) // 2]
    _replace(inst.port, dn, "written by someone else")
    try:
        with pytest.raises(slapd.LabError, match=rf"1 of {len(acked)} entries.*{dn}.*someone"):
            verify.check_modified(inst.port, acked, len(acked), seed=1)
    finally:
        _replace(inst.port, dn, acked[dn])  # as the load left it, for the other tests


def test_a_wrong_acknowledged_value_or_a_missing_entry_fails_the_check(loaded) -> None:
    inst, acked = loaded
    some = dict(list(acked.items())[:40])
    dn = sorted(some)[-1]
    some[dn] = some[dn][::-1]  # what the server holds is not this
    with pytest.raises(slapd.LabError, match=f"1 of 40 entries .*{dn}"):
        verify.check_modified(inst.port, some, 40, seed=3)
    gone = {f"uid=user.{N + 5},{PEOPLE}": "x", **dict(list(acked.items())[:9])}
    res = verify.check_modified(inst.port, gone, 10, seed=3, strict=False)
    assert (res.checked, res.mismatches) == (10, 1) and "no such entry" in res.examples[0]


def test_the_acked_mapping_names_only_the_load_s_entries() -> None:
    a = load.Acked([(7, {3: 2}), (8, {4: 1})])
    assert dict(a) == {
        f"uid=user.3,{PEOPLE}": load.modify_value(7, 2),
        f"uid=user.4,{PEOPLE}": load.modify_value(8, 1),
    }
    assert len(load.modify_value(7, 2)) == 80 and load.modify_value(7, 2) != load.modify_value(7, 3)
    for dn in (f"uid=user.5,{PEOPLE}", f"uid=user.3,{SUFFIX}", f"cn=x,{PEOPLE}"):
        with pytest.raises(KeyError):
            a[dn]


def test_equal_replicas_pass_entry_by_entry(pair) -> None:
    a, b = pair
    res = verify.compare_replicas(a.port, b.port, SUFFIX)
    assert (res.provider_entries, res.consumer_entries, res.differences) == (N + 2, N + 2, 0)


def test_a_consumer_with_another_value_fails(pair) -> None:
    a, b = pair
    dn = f"uid=user.17,{PEOPLE}"
    _replace(b.port, dn, "only on the consumer")
    with pytest.raises(slapd.LabError, match=r"1 differ: uid=user\.17,.*only on the consumer"):
        verify.compare_replicas(a.port, b.port, SUFFIX)


def test_a_consumer_missing_an_entry_or_with_an_extra_one_fails(pair) -> None:
    a, b = pair
    _delete(b.port, f"uid=user.{N - 1},{PEOPLE}")
    res = verify.compare_replicas(a.port, b.port, SUFFIX, strict=False)
    assert (res.provider_entries, res.consumer_entries, res.differences) == (N + 2, N + 1, 1)
    assert res.examples == [f"uid=user.{N - 1},{PEOPLE}".lower() + " only on the provider"]
    with pytest.raises(slapd.LabError, match="only on the provider"):
        res.fail_if_bad("compare")
    _delete(a.port, f"uid=user.3,{PEOPLE}")
    res = verify.compare_replicas(a.port, b.port, SUFFIX, strict=False)
    # the same count on both sides now, but not the same entries
    assert (res.provider_entries, res.consumer_entries, res.differences) == (N + 1, N + 1, 2)
    assert res.examples[1] == f"uid=user.3,{PEOPLE}".lower() + " only on the consumer"
