"""lab/ldapwire.py: the BER framing the load clients rely on, without a server."""

from __future__ import annotations

import pytest

from lab import ldapwire as w


def _entry(dn: str, attrs: dict[str, list[str]]) -> bytes:
    parts = b"".join(
        w.tlv(0x30, w.octets(k) + w.tlv(0x31, b"".join(w.octets(v) for v in vs)))
        for k, vs in attrs.items()
    )
    return w.tlv(w.SEARCH_ENTRY, w.octets(dn) + w.tlv(0x30, parts))


def _done(rc: int) -> bytes:
    return w.tlv(w.SEARCH_DONE, w.integer(rc, 0x0A) + w.octets("") + w.octets(""))


@pytest.mark.parametrize("n", [0, 1, 127, 128, 255, 256, 65535, 65536, 10**6])
def test_lengths_round_trip(n: int) -> None:
    enc = w.tlv(0x04, b"x" * n)
    length, start = w._read_length(enc, 1)
    assert (length, len(enc) - start) == (n, n)


def test_messages_split_at_any_byte_boundary() -> None:
    big = "y" * 300  # a long form length inside
    stream = (
        w.message(7, _entry("uid=a,dc=x", {"cn": ["A"], "description": [big]}))
        + w.message(7, _entry("uid=b,dc=x", {"cn": ["B"]}))
        + w.message(7, _done(0))
        + w.message(8, w.tlv(w.MODIFY_RESPONSE, w.integer(32, 0x0A) + w.octets("") + w.octets("")))
    )
    for cut in range(1, len(stream)):  # every way the socket could split the bytes
        buf = bytearray()
        got = []
        for chunk in (stream[:cut], stream[cut:]):
            buf += chunk
            for mid, tag, start, end in w.split_messages(buf):
                body = bytes(buf[start:end])
                if tag == w.SEARCH_ENTRY:
                    got.append((mid, "entry", w.entry_values(body, "CN")))
                else:
                    got.append((mid, hex(tag), w.result_code(buf, start)))
        assert got == [
            (7, "entry", [b"A"]),
            (7, "entry", [b"B"]),
            (7, "0x65", 0),
            (8, "0x67", 32),
        ], cut
        assert not buf, "everything consumed"


def test_entry_values_of_an_absent_attribute_is_empty() -> None:
    body = _entry("dc=x", {"objectClass": ["top"]})
    start = w._read_length(body, 1)[1]
    assert w.entry_values(body[start:], "contextCSN") == []


def test_a_non_ldap_stream_is_refused() -> None:
    with pytest.raises(w.LdapError):
        list(w.split_messages(bytearray(b"HTTP/1.1 200 OK\r\n")))


def test_integers_encode_as_ber_two_complement() -> None:
    assert w.integer(0) == b"\x02\x01\x00"
    assert w.integer(127) == b"\x02\x01\x7f"
    assert w.integer(128) == b"\x02\x02\x00\x80"
    assert w.integer(3, 0x0A) == b"\x0a\x01\x03"


def test_a_connection_reads_the_replies_to_its_own_request() -> None:
    """search, read_attr and bind against a scripted server on 127.0.0.1 that sends a stray
    reply to another message first and cuts its replies into 3-byte pieces."""
    import socket
    import threading

    stray = w.message(99, _entry("cn=other", {"description": ["no"]}))
    script = [
        stray + w.message(1, _entry("cn=a", {"cn": ["a"]})) + w.message(1, _done(0)),
        stray + w.message(2, _entry("cn=a", {"description": ["x", "y"]})) + w.message(2, _done(0)),
        stray + w.message(3, w.tlv(w.BIND_RESPONSE, _done(49)[2:])),
    ]
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(10)

    def serve() -> None:
        peer, _ = srv.accept()
        with peer:
            peer.settimeout(10)
            for reply in script:
                peer.recv(4096)
                for i in range(0, len(reply), 3):
                    peer.sendall(reply[i : i + 3])
            peer.recv(4096)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    conn = w.Connection(srv.getsockname()[1], timeout=10)
    try:
        assert conn.search("cn=a", w.present("objectClass"))[:2] == (0, 1)
        assert w.read_attr(conn, "cn=a", "description") == [b"x", b"y"]
        with pytest.raises(w.LdapError, match="resultCode 49"):
            conn.bind("cn=a", "wrong")
    finally:
        conn.close()
        t.join(10)
        srv.close()
