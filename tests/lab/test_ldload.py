"""lab/ldload (the compiled load client, built here by lab/fastclient.py) against fake LDAP
servers that answer, refuse, fail or stay silent, and against a real slapd: what it
counts, what it prints, and the --acked file of its modifies.  The fake servers decode
every request with lab/ldapwire.py, an independent BER reader.  No speed is asserted."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from lab import fastclient, ldapwire, slapd
from lab.makeldif import PEOPLE, ROOTDN, ROOTPW
from lab.makeldif import write as write_ldif

SHORT = ["--warmup", "0.2", "--duration", "0.8", "--interval", "0.2", "--grace", "1"]


@pytest.fixture(scope="module")
def exe() -> str:
    return fastclient.build()


def run(exe: str, port: int, *args: str, timeout: float = 60) -> tuple[int, dict[str, Any]]:
    """ldload's exit status and its JSON lines by kind."""
    r = subprocess.run(
        [exe, "--port", str(port), *args], capture_output=True, text=True, timeout=timeout
    )
    out = {}
    for line in r.stdout.splitlines():
        obj = json.loads(line)
        out[obj["kind"]] = obj
    return r.returncode, out


def _result(tag: int, rc: int) -> bytes:
    return ldapwire.tlv(tag, ldapwire.integer(rc, 0x0A) + ldapwire.octets("") + ldapwire.octets(""))


class FakeServer:
    """An LDAP server on 127.0.0.1 that decodes each request and answers by `mode`: "ok"
    (one entry per search, success), "error" (every search and modify fails), "silent"
    (binds, then answers nothing), "badbind" (refuses the bind).  It records the modifies
    it acknowledged, in order, and any moment two modifies of one entry were in flight."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.lock = threading.Lock()
        self.inflight: set[bytes] = set()
        self.overlaps: list[bytes] = []
        self.acked: dict[str, str] = {}
        self.modifies = 0
        self.searches: list[bytes] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                c, _ = self.sock.accept()
            except TimeoutError:
                continue
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, c: socket.socket) -> None:
        c.settimeout(0.2)
        buf = bytearray()
        with c:
            while not self.stop.is_set():
                try:
                    data = c.recv(65536)
                except TimeoutError:
                    continue
                if not data:
                    return
                buf += data
                reqs = [(m, t, bytes(buf[s:e])) for m, t, s, e in ldapwire.split_messages(buf)]
                c.sendall(self._answer(reqs))

    def _answer(self, reqs: list[tuple[int, int, bytes]]) -> bytes:
        out = []
        mods = []
        for msgid, tag, body in reqs:
            if tag == ldapwire.BIND_REQUEST:
                rc = 49 if self.mode == "badbind" else 0
                out.append(ldapwire.message(msgid, _result(ldapwire.BIND_RESPONSE, rc)))
            elif self.mode == "silent":
                continue
            elif tag == ldapwire.SEARCH_REQUEST:
                parts = list(ldapwire._tlvs(body))
                assert parts[0][1] == PEOPLE.encode() and parts[6][0] == 0xA3
                uid = list(ldapwire._tlvs(parts[6][1]))[1][1]
                self.searches.append(uid)
                if self.mode == "ok":
                    dn = ldapwire.octets(b"uid=" + uid + b"," + PEOPLE.encode())
                    entry = ldapwire.tlv(ldapwire.SEARCH_ENTRY, dn + ldapwire.tlv(0x30, b""))
                    out.append(ldapwire.message(msgid, entry))
                rc = 0 if self.mode == "ok" else 32
                out.append(ldapwire.message(msgid, _result(ldapwire.SEARCH_DONE, rc)))
            elif tag == ldapwire.MODIFY_REQUEST:
                dn, changes = [v for _, v in ldapwire._tlvs(body)]
                (change,) = [v for _, v in ldapwire._tlvs(changes)]
                op, attr = list(ldapwire._tlvs(change))
                assert op == (0x0A, b"\x02")  # replace
                name, vals = [v for _, v in ldapwire._tlvs(attr[1])]
                ((_, value),) = list(ldapwire._tlvs(vals))
                assert name == b"description" and len(value) == 80
                with self.lock:
                    if dn in self.inflight:
                        self.overlaps.append(dn)
                    self.inflight.add(dn)
                mods.append((msgid, dn, value))
        # modifies are answered after the whole batch was taken in, so that several are
        # in flight at once and an overlap on one entry would be seen
        for msgid, dn, value in mods:
            rc = 0 if self.mode == "ok" else 50
            with self.lock:
                self.inflight.discard(dn)
                self.modifies += 1
                if rc == 0:
                    self.acked[dn.decode()] = value.decode()
            out.append(ldapwire.message(msgid, _result(ldapwire.MODIFY_RESPONSE, rc)))
        return b"".join(out)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(5)
        self.sock.close()


@pytest.fixture
def fake(request) -> Iterator[FakeServer]:
    s = FakeServer(request.param)
    yield s
    s.close()


KIND_KEYS = {
    "kind",
    "threads",
    "depth",
    "ops",
    "errors",
    "ops_s",
    "avg_ms",
    "p50_ms",
    "p99_ms",
    "completed",
    "entries_returned",
    "unanswered",
    "connect_failures",
    "protocol_errors",
    "cpu_s",
    "interval_s",
    "intervals",
    "failure",
}
PROCESS_KEYS = {"kind", "cpu_s", "cpu_user_s", "cpu_sys_s", "window_s", "cores", "cpu_share"}


@pytest.mark.parametrize("fake", ["ok"], indirect=True)
def test_the_json_it_prints_per_kind_and_for_the_process(exe, fake) -> None:
    rc, out = run(exe, fake.port, "--entries", "50", "--search", "2x4", "--modify", "1x2", *SHORT)
    assert rc == 0, out
    assert set(out) == {"search", "modify", "process"}
    for kind in ("search", "modify"):
        k = out[kind]
        assert KIND_KEYS <= set(k), KIND_KEYS - set(k)
        assert k["ops"] > 0 and k["errors"] == 0 and k["unanswered"] == 0 and not k["failure"]
        assert len(k["intervals"]) == 5  # (0.2 + 0.8) / 0.2
        assert k["ops"] <= sum(k["intervals"]) <= k["completed"]
        assert 0 < k["p50_ms"] <= k["p99_ms"]
        assert k["ops_s"] == pytest.approx(k["ops"] / 0.8, rel=1e-3)
    assert (out["search"]["threads"], out["search"]["depth"]) == (2, 4)
    # every search named a uid in [0, 50) and got its one entry
    assert out["search"]["entries_returned"] == out["search"]["completed"]
    assert {int(u.split(b".")[1]) for u in fake.searches} <= set(range(50))
    p = out["process"]
    assert PROCESS_KEYS <= set(p)
    assert p["cpu_s"] == pytest.approx(p["cpu_user_s"] + p["cpu_sys_s"], abs=1e-5)
    assert p["cpu_share"] == pytest.approx(p["cpu_s"] / (0.8 * p["cores"]), rel=1e-3)


@pytest.mark.parametrize("fake", ["ok"], indirect=True)
def test_modifies_never_overlap_on_an_entry_and_acked_holds_the_last_values(
    exe, fake, tmp_path
) -> None:
    # 7 entries, 2 threads x 4 in flight: each thread owns 3 or 4 entries, so it must
    # skip the ones in flight all the time
    acked = tmp_path / "acked.tsv"
    args = ("--entries", "7", "--modify", "2x4", "--acked", str(acked))
    rc, out = run(exe, fake.port, *args, *SHORT)
    assert rc == 0, out
    assert fake.modifies > 100
    assert fake.overlaps == []
    got = fastclient.read_acked(str(acked))
    assert got == fake.acked
    assert set(got) == {f"uid=user.{i},{PEOPLE}" for i in range(7)}


@pytest.mark.parametrize("fake", ["error"], indirect=True)
def test_error_results_are_counted(exe, fake, tmp_path) -> None:
    acked = tmp_path / "acked.tsv"
    args = ("--entries", "50", "--search", "1x2", "--modify", "1x2", "--acked", str(acked))
    rc, out = run(exe, fake.port, *args, *SHORT)
    assert rc == 0  # answered requests, failed ones: counted, not a client failure
    for kind in ("search", "modify"):
        assert out[kind]["ops"] > 0
        assert out[kind]["errors"] == out[kind]["completed"]
    assert acked.read_text() == ""  # nothing was acknowledged


@pytest.mark.parametrize("fake", ["silent"], indirect=True)
def test_a_silent_server_is_given_up_after_the_grace_period(exe, fake) -> None:
    rc, out = run(exe, fake.port, "--entries", "50", "--search", "2x3", "--modify", "1x2", *SHORT)
    assert out["search"]["unanswered"] == 6 and out["search"]["errors"] == 6
    assert out["modify"]["unanswered"] == 2 and out["modify"]["errors"] == 2
    assert "unanswered" in out["search"]["failure"]
    assert out["search"]["ops"] == 0


@pytest.mark.parametrize("fake", ["badbind"], indirect=True)
def test_a_refused_bind_fails_the_client(exe, fake) -> None:
    rc, out = run(exe, fake.port, "--entries", "50", "--modify", "2x2", *SHORT)
    assert rc == 1
    assert out["modify"]["connect_failures"] == 2 and out["modify"]["errors"] >= 2
    assert "result code 49" in out["modify"]["failure"]


def test_a_refused_connection_fails_the_client(exe) -> None:
    s = socket.create_server(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()  # nothing listens there now
    rc, out = run(exe, port, "--entries", "50", "--search", "3x2", *SHORT)
    assert rc == 1
    assert out["search"]["connect_failures"] == 3 and out["search"]["ops"] == 0
    assert "refused" in out["search"]["failure"]
    with pytest.raises(fastclient.ClientError, match="refused"):
        from lab import load

        fastclient.run_job(
            port, os.getpid(), 50, [load.JobSpec("search", 1, 1)], load.Timing(0.1, 0.2, 0.1)
        )


def test_bad_arguments_are_refused(exe) -> None:
    for args in (["--entries", "5"], ["--port", "1", "--entries", "0", "--search", "1x1"]):
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=10)
        assert r.returncode == 2 and "usage" in r.stderr
    r = subprocess.run(
        [exe, "--port", "1", "--entries", "5", "--search", "1x999"], capture_output=True, text=True
    )
    assert r.returncode == 2


_MISSING = [p for p in (slapd.BACK_MDB, "/usr/sbin/slapd") if not os.path.exists(p)]


@pytest.mark.skipif(bool(_MISSING), reason=f"slapd not installed: {_MISSING}")
def test_against_slapd_every_acknowledged_value_reads_back(exe, tmp_path) -> None:
    ldif = tmp_path / "people.ldif"
    with open(ldif, "w") as f:
        write_ldif(f, 300, seed=1)
    inst = slapd.Instance(str(tmp_path / "inst"), slapd.make_engine("stock"))
    inst.slapadd(str(ldif))
    inst.start()
    try:
        acked = tmp_path / "acked.tsv"
        args = ("--entries", "300", "--search", "2x4", "--modify", "2x2", "--acked", str(acked))
        rc, out = run(exe, inst.port, *args, *SHORT)
        assert rc == 0, out
        assert out["search"]["errors"] == 0 and out["modify"]["errors"] == 0
        assert out["search"]["entries_returned"] == out["search"]["completed"] > 0
        want = fastclient.read_acked(str(acked))
        assert len(want) > 50
        c = ldapwire.Connection(inst.port)
        c.bind(ROOTDN, ROOTPW)
        wrong = {}
        for dn, v in want.items():
            got = ldapwire.read_attr(c, dn, "description")
            if got != [v.encode()]:
                wrong[dn] = got
        c.close()
        assert wrong == {}
    finally:
        inst.stop()
