"""Read the free list of an LMDB 0.9 data file, for ``stat -f`` on engines without one.

Owns: a small read-only reader of the on-disk format (LP64, native byte order), just
enough to list the free DB (FREE_DBI): its tree record and, per transaction id, the
pages that transaction freed. Used only when the engine has no ``env.freelist()``
(py-lmdb has none); the mdb engine's report wins when it offers one.

Consistency: the caller holds a read transaction for the whole read. Pages reachable
from that snapshot's meta are not reused while it lives, so reading them from the
file with pread gives the snapshot, even while a writer goes on. The meta read is
the one whose txnid equals the read transaction's id.

Never trusts the file: every offset is bounds-checked; anything odd raises
:class:`FreelistError` with the page number, and ``stat`` reports it in one line.

Format facts (docs/cli.md cites them; see also src/mdbcore/format.h):
  page header 16 bytes: pgno u64, pad u16, flags u16, lower u16, upper u16 (or
  pages u32 on overflow pages); node pointers (u16) follow the header.
  meta at offset 16 of pages 0 and 1: magic u32 0xBEEFC0DE, version u32, address
  u64, mapsize u64, then two 48-byte DB records (free, main), last_pg u64, txnid u64.
  DB record: pad u32 (psize in the free record), flags u16, depth u16, branch,
  leaf, overflow, entries, root (u64 each).
  node: lo u16, hi u16, flags u16, ksize u16, key, data; a branch node's child is
  lo | hi << 16 | flags << 32; leaf data size is lo | hi << 16; F_BIGDATA (0x01)
  data is the u64 pgno of an overflow run.
  free DB: key = txnid (u64), data = IDL: count u64, then count page numbers.
"""

from __future__ import annotations

import os
import struct
import sys
from typing import Any, Optional

P_BRANCH, P_LEAF, P_OVERFLOW, P_META, P_LEAF2 = 0x01, 0x02, 0x04, 0x08, 0x20
F_BIGDATA = 0x01
MAGIC = 0xBEEFC0DE
P_INVALID = (1 << 64) - 1
_BO = "<" if sys.byteorder == "little" else ">"
_HDR = struct.Struct(_BO + "QHHHH")
_META = struct.Struct(_BO + "IIQQ")
_DB = struct.Struct(_BO + "IHHQQQQQ")
_NODE = struct.Struct(_BO + "HHHH")
_U64 = struct.Struct(_BO + "Q")
_U16 = struct.Struct(_BO + "H")


class FreelistError(Exception):
    """The file does not look like what its meta page says."""


def _db_record(raw: bytes) -> dict[str, int]:
    pad, flags, depth, branch, leaf, overflow, entries, root = _DB.unpack(raw)
    return {
        "pad": pad,
        "flags": flags,
        "depth": depth,
        "branch_pages": branch,
        "leaf_pages": leaf,
        "overflow_pages": overflow,
        "entries": entries,
        "root": root,
    }


class _File:
    def __init__(self, fd: int):
        self.fd = fd
        self.size = os.fstat(fd).st_size

    def read(self, offset: int, length: int, what: str) -> bytes:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FreelistError(f"{what} lies outside the file")
        data = os.pread(self.fd, length, offset)
        if len(data) != length:
            raise FreelistError(f"{what}: short read")
        return data


def _metas(f: _File) -> list[tuple[int, int, dict[str, int], dict[str, int]]]:
    """(txnid, psize, free record, main record) of each valid meta page."""
    out = []
    first = f.read(0, 160, "meta page 0")
    psize = _DB.unpack(first[40:88])[0]
    if not 256 <= psize <= 65536:
        raise FreelistError(f"meta page 0 has an implausible page size {psize}")
    for pgno in (0, 1):
        page = first if pgno == 0 else f.read(psize, 160, "meta page 1")
        magic, version, _addr, _mapsize = _META.unpack(page[16:40])
        if magic != MAGIC or version != 1:
            continue
        free = _db_record(page[40:88])
        main = _db_record(page[88:136])
        txnid = _U64.unpack(page[144:152])[0]
        out.append((txnid, psize, free, main))
    if not out:
        raise FreelistError("no valid meta page")
    return out


def read_freelist(data_path: str, txnid: Optional[int] = None) -> dict[str, Any]:
    """The free list of the snapshot ``txnid`` (default: the newest meta).

    Returns the shape ``stat`` expects from ``env.freelist()``: the free DB's
    depth, branch_pages, leaf_pages, overflow_pages, entries; ``free_pages`` (total);
    ``txns``: [{"txnid": T, "pages": [pgno, ...]}] in key order, pages as stored.
    """
    fd = os.open(data_path, os.O_RDONLY)
    try:
        f = _File(fd)
        metas = _metas(f)
        if txnid is None:
            chosen = max(metas, key=lambda m: m[0])
        else:
            match = [m for m in metas if m[0] == txnid]
            if not match:
                raise FreelistError(f"no meta page for transaction {txnid}")
            chosen = match[0]
        _t, psize, free, _main = chosen
        txns: list[dict[str, Any]] = []
        if free["root"] != P_INVALID:
            _walk(f, psize, free["root"], txns, depth=0)
        return {
            "depth": free["depth"],
            "branch_pages": free["branch_pages"],
            "leaf_pages": free["leaf_pages"],
            "overflow_pages": free["overflow_pages"],
            "entries": free["entries"],
            "free_pages": sum(len(t["pages"]) for t in txns),
            "txns": txns,
        }
    finally:
        os.close(fd)


def _walk(f: _File, psize: int, pgno: int, txns: list[dict[str, Any]], depth: int) -> None:
    if depth > 32:
        raise FreelistError(f"page {pgno}: the free DB is deeper than 32 levels")
    page = f.read(pgno * psize, psize, f"free DB page {pgno}")
    _pg, _pad, flags, lower, _upper = _HDR.unpack(page[:16])
    if lower < 16 or lower > psize or (lower - 16) % 2:
        raise FreelistError(f"page {pgno}: bad lower bound {lower}")
    count = (lower - 16) // 2
    ptrs = [_U16.unpack_from(page, 16 + 2 * i)[0] for i in range(count)]
    for off in ptrs:
        if off < 16 or off + 8 > psize:
            raise FreelistError(f"page {pgno}: node offset {off} outside the page")
    if flags & P_BRANCH:
        for off in ptrs:
            lo, hi, nflags, _ks = _NODE.unpack_from(page, off)
            child = lo | (hi << 16) | (nflags << 32)
            _walk(f, psize, child, txns, depth + 1)
        return
    if not flags & P_LEAF or flags & P_LEAF2:
        raise FreelistError(f"page {pgno}: not a branch or leaf page (flags {flags:#x})")
    for off in ptrs:
        lo, hi, nflags, ksize = _NODE.unpack_from(page, off)
        size = lo | (hi << 16)
        if ksize != 8 or off + 8 + ksize > psize:
            raise FreelistError(f"page {pgno}: free DB key of {ksize} bytes")
        key_txn = _U64.unpack_from(page, off + 8)[0]
        start = off + 8 + ksize
        if nflags & F_BIGDATA:
            ov = _U64.unpack_from(page, start)[0]
            data = f.read(ov * psize + 16, size, f"overflow page {ov}")
        else:
            if start + size > psize:
                raise FreelistError(f"page {pgno}: node data runs past the page")
            data = page[start : start + size]
        if size < 8:
            raise FreelistError(f"page {pgno}: free list of transaction {key_txn} is empty")
        n = _U64.unpack_from(data, 0)[0]
        if 8 + 8 * n > size:
            raise FreelistError(f"page {pgno}: free list of transaction {key_txn} is cut short")
        pages = list(struct.unpack_from(f"{_BO}{n}Q", data, 8))
        txns.append({"txnid": key_txn, "pages": pages})
