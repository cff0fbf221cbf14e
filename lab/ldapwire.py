"""ldapwire.py -- just enough LDAPv3 (RFC 4511) over a plain socket to load a server.

Why our own: the load must be limited by slapd, not by the client.  ldap3 spends ~400 us
of client CPU per search here; this module builds requests as bytes, keeps several in
flight on one connection, and parses only the envelope of each response (message id,
operation tag, result code).  Entries are counted, and digested only when asked, so a full
scan costs the client about a microsecond per entry besides the socket reads.

Only definite-length BER with one-byte tags is handled, which is what slapd sends.
"""

from __future__ import annotations

import hashlib
import socket
import time
from collections.abc import Iterator

# protocolOp tags (APPLICATION class; constructed unless noted)
BIND_REQUEST = 0x60
BIND_RESPONSE = 0x61
UNBIND_REQUEST = 0x42  # primitive
SEARCH_REQUEST = 0x63
SEARCH_ENTRY = 0x64
SEARCH_DONE = 0x65
SEARCH_REFERENCE = 0x73
MODIFY_REQUEST = 0x66
MODIFY_RESPONSE = 0x67

SCOPE_BASE, SCOPE_ONE, SCOPE_SUB = 0, 1, 2
REPLACE = 2


class LdapError(Exception):
    """A protocol failure: the connection closed, or a response we cannot parse."""


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes((0x80 | len(body),)) + body


def tlv(tag: int, body: bytes) -> bytes:
    return bytes((tag,)) + _length(len(body)) + body


def integer(v: int, tag: int = 0x02) -> bytes:
    body = v.to_bytes(max(1, (v.bit_length() + 8) // 8), "big", signed=True)
    return tlv(tag, body)


def octets(v: str | bytes, tag: int = 0x04) -> bytes:
    return tlv(tag, v.encode() if isinstance(v, str) else v)


def message(msgid: int, op: bytes) -> bytes:
    return tlv(0x30, integer(msgid) + op)


def bind_request(dn: str, password: str) -> bytes:
    return tlv(BIND_REQUEST, integer(3) + octets(dn) + octets(password, 0x80))


def equality(attr: str, value: str) -> bytes:
    return tlv(0xA3, octets(attr) + octets(value))


def present(attr: str) -> bytes:
    return octets(attr, 0x87)


def search_request(
    base: str, flt: bytes, attrs: list[str] | tuple[str, ...] = (), scope: int = SCOPE_SUB
) -> bytes:
    body = (
        octets(base)
        + integer(scope, 0x0A)
        + integer(0, 0x0A)  # derefAliases: never
        + integer(0)  # sizeLimit: none
        + integer(0)  # timeLimit: none
        + tlv(0x01, b"\x00")  # typesOnly: false
        + flt
        + tlv(0x30, b"".join(octets(a) for a in attrs))
    )
    return tlv(SEARCH_REQUEST, body)


def modify_replace(dn: str, attr: str, value: str) -> bytes:
    change = tlv(0x30, integer(REPLACE, 0x0A) + tlv(0x30, octets(attr) + tlv(0x31, octets(value))))
    return tlv(MODIFY_REQUEST, octets(dn) + tlv(0x30, change))


def _read_length(buf: bytes | bytearray, pos: int) -> tuple[int, int] | None:
    """(length, position after the length octets), or None when buf ends first."""
    if pos >= len(buf):
        return None
    first = buf[pos]
    if first < 0x80:
        return first, pos + 1
    n = first & 0x7F
    if n == 0 or n > 4:
        raise LdapError(f"unsupported BER length form 0x{first:02x}")
    if pos + 1 + n > len(buf):
        return None
    return int.from_bytes(buf[pos + 1 : pos + 1 + n], "big"), pos + 1 + n


def split_messages(buf: bytearray) -> Iterator[tuple[int, int, int, int]]:
    """Yield (msgid, op tag, body start, body end) for each whole LDAPMessage at the front
    of buf, then delete what was consumed (offsets are valid until the generator ends)."""
    pos = 0
    try:
        while True:
            if pos >= len(buf):
                break
            if buf[pos] != 0x30:
                raise LdapError(f"expected an LDAPMessage SEQUENCE, got tag 0x{buf[pos]:02x}")
            got = _read_length(buf, pos + 1)
            if got is None:
                break
            length, body = got
            end = body + length
            if end > len(buf):
                break
            if buf[body] != 0x02:
                raise LdapError("LDAPMessage without a messageID")
            idlen = buf[body + 1]
            msgid = int.from_bytes(buf[body + 2 : body + 2 + idlen], "big")
            optag_pos = body + 2 + idlen
            optag = buf[optag_pos]
            oplen = _read_length(buf, optag_pos + 1)
            if oplen is None:
                raise LdapError("truncated protocolOp")
            pos = end  # consumed even if the caller stops iterating here
            yield msgid, optag, oplen[1], oplen[1] + oplen[0]
    finally:
        del buf[:pos]


def result_code(buf: bytearray, start: int) -> int:
    """The resultCode (first element, an ENUMERATED) of the LDAPResult body at start."""
    if buf[start] != 0x0A:
        raise LdapError("LDAPResult without a resultCode")
    n = buf[start + 1]
    return int.from_bytes(buf[start + 2 : start + 2 + n], "big")


class Connection:
    """One LDAP connection; requests are numbered from 1 and may be pipelined."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.next_id = 1

    def send(self, op: bytes) -> int:
        msgid = self.next_id
        self.next_id += 1
        self.sock.sendall(message(msgid, op))
        return msgid

    def fill(self) -> None:
        data = self.sock.recv(1 << 20)
        if not data:
            raise LdapError("the server closed the connection")
        self.buf += data

    def replies(self, msgid: int) -> Iterator[tuple[int, int, int]]:
        """(op tag, body start, body end) of each reply to msgid, receiving more as needed;
        it never ends by itself: the caller stops at the reply it waits for, and the
        offsets into self.buf are valid until it asks for the next one."""
        while True:
            for mid, tag, start, end in split_messages(self.buf):
                if mid == msgid:
                    yield tag, start, end
            self.fill()

    def wait_result(self, msgid: int, expect: int) -> int:
        """Block until the response `expect` to msgid; return its resultCode."""
        for tag, start, _end in self.replies(msgid):
            if tag == expect:
                return result_code(self.buf, start)
        raise AssertionError("replies() never ends")

    def bind(self, dn: str, password: str) -> None:
        rc = self.wait_result(self.send(bind_request(dn, password)), BIND_RESPONSE)
        if rc != 0:
            raise LdapError(f"bind as {dn} failed: resultCode {rc}")

    def search(
        self,
        base: str,
        flt: bytes,
        attrs: list[str] | tuple[str, ...] = (),
        scope: int = SCOPE_SUB,
        digest: bool = False,
    ) -> tuple[int, int, str]:
        """One search, to the end: (resultCode, entries, digest).  The digest is the
        SHA-256 of the sorted SHA-256s of the entries' encodings (order-independent), or
        "" unless asked for."""
        msgid = self.send(search_request(base, flt, attrs, scope))
        count = 0
        hashes: list[bytes] = []
        for tag, start, end in self.replies(msgid):
            if tag == SEARCH_ENTRY:
                count += 1
                if digest:
                    hashes.append(hashlib.sha256(self.buf[start:end]).digest())
            elif tag == SEARCH_DONE:
                rc = result_code(self.buf, start)
                total = hashlib.sha256(b"".join(sorted(hashes))).hexdigest() if digest else ""
                return rc, count, total
        raise AssertionError("replies() never ends")

    def close(self) -> None:
        try:
            self.sock.sendall(message(self.next_id, tlv(UNBIND_REQUEST, b"")))
        except OSError:
            pass
        self.sock.close()


def wait_ready(port: int, deadline_s: float, alive: object = None, interval: float = 0.1) -> bool:
    """Poll the RootDSE every interval seconds until the server answers or deadline_s
    passes.  alive(), when given, is called between tries and stops the wait early when it
    returns False."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if callable(alive) and not alive():
            return False
        try:
            c = Connection(port, timeout=2.0)
            try:
                rc, _, _ = c.search("", present("objectClass"), ["1.1"], SCOPE_BASE)
                if rc == 0:
                    return True
            finally:
                c.close()
        except (OSError, LdapError):
            pass
        time.sleep(interval)
    return False


def _tlvs(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The (tag, body) elements of a constructed value's contents."""
    pos = 0
    while pos < len(data):
        tag = data[pos]
        got = _read_length(data, pos + 1)
        if got is None or got[1] + got[0] > len(data):
            raise LdapError("truncated element")
        length, start = got
        yield tag, data[start : start + length]
        pos = start + length


def entry_values(entry_body: bytes, attr: str) -> list[bytes]:
    """The values of attr (case-insensitive) in a SearchResultEntry's body."""
    elems = list(_tlvs(entry_body))
    if len(elems) != 2 or elems[0][0] != 0x04 or elems[1][0] != 0x30:
        raise LdapError("malformed SearchResultEntry")
    out: list[bytes] = []
    for tag, partial in _tlvs(elems[1][1]):
        if tag != 0x30:
            continue
        parts = list(_tlvs(partial))
        if len(parts) == 2 and parts[0][1].decode().lower() == attr.lower():
            out += [v for t, v in _tlvs(parts[1][1]) if t == 0x04]
    return out


def read_attr(conn: Connection, dn: str, attr: str) -> list[bytes]:
    """Values of attr of one entry (a base search on conn), parsed from the entry's encoding."""
    msgid = conn.send(search_request(dn, present("objectClass"), [attr], SCOPE_BASE))
    values: list[bytes] = []
    for tag, start, end in conn.replies(msgid):
        if tag == SEARCH_ENTRY:
            values += entry_values(bytes(conn.buf[start:end]), attr)
        elif tag == SEARCH_DONE:
            return values
    raise AssertionError("replies() never ends")
