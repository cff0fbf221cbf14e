"""Salvage: read every record still reachable in a damaged data.mdb, without the engine.

Owns: reading an LMDB 0.9 data file directly (read-only mmap and struct), checking
each page before any of its bytes is used, and gathering the records of the main
database, of every named database, of DUPSORT sub-pages and sub-trees, of DUPFIXED
(LEAF2) pages and of overflow values. ``mdb-cli dump --salvage`` writes them in
mdb_dump's format (see commands/dump.py).

How it reads a damaged file:
- Both meta pages are read. The page size comes from where meta page 1 sits (its
  header says page 1, P_META, LMDB's magic), else from a meta's page-size field.
- The newest valid meta's trees are walked first. A page that fails a check is
  skipped and the key range its parent gives it is noted as lost: header page
  number not the page's own, flags not a tree page's, lower/upper out of bounds,
  a node outside the page, an overflow run past the end of the file, a page
  reached twice (a cycle or a misdirected pointer), the tree deeper than 32.
  Inside a page, a node outside the page is dropped, and keys out of order or
  outside the parent's range are dropped so that the longest increasing run
  of keys stays.
- Then the older meta's trees are walked, only into the lost ranges, and a record
  found there is added if the newer walk did not have its key.

Invariants: nothing read from the file is trusted before it is checked against the
file size and the page that holds it; each walk visits a page at most once (one
byte per page of the file); recursion is bounded by 32 levels per tree; the
module never raises on any file content (a file it cannot use at all gives a
:class:`SalvageError` with one readable line).
"""

from __future__ import annotations

import mmap
import os
import struct
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple, Optional, Union

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
P_INVALID = (1 << 64) - 1

P_BRANCH = 0x01
P_LEAF = 0x02
P_OVERFLOW = 0x04
P_META = 0x08
P_DIRTY = 0x10
P_LEAF2 = 0x20
P_SUBP = 0x40

F_BIGDATA = 0x01
F_SUBDATA = 0x02
F_DUPDATA = 0x04

REVERSEKEY = 0x02
DUPSORT = 0x04
INTEGERKEY = 0x08
DUPFIXED = 0x10
INTEGERDUP = 0x20
REVERSEDUP = 0x40
DB_FLAG_MASK = 0x7E

#: DB flag bits by the engine's (and formats.DUMP_FLAGS') names
FLAG_NAMES = {
    "reverse_key": REVERSEKEY,
    "dupsort": DUPSORT,
    "integerkey": INTEGERKEY,
    "dupfixed": DUPFIXED,
    "integerdup": INTEGERDUP,
    "reverse_dup": REVERSEDUP,
}

PAGEHDRSZ = 16
NODESIZE = 8
MAX_DEPTH = 32  # LMDB's cursor stack
MIN_PSIZE, MAX_PSIZE = 256, 65536

_HDR = struct.Struct("<QHHHH")  # pgno, leaf2 ksize, flags, lower, upper
_NODE = struct.Struct("<HHHH")  # lo, hi, flags, ksize
_DBREC = struct.Struct("<IHHQQQQQ")  # pad, flags, depth, branch, leaf, overflow, entries, root
_META = struct.Struct("<IIQQ")  # magic, version, address, mapsize (at page offset 16)
_TAIL = struct.Struct("<QQ")  # last_pg, txnid (at page offset 136)
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
META_END = 152

#: per-database sort key: maps a key to a value whose Python order is LMDB's order
SortKey = Callable[[bytes], Any]
Bound = Optional[Any]  # a sort key, or None for "unbounded"


class SalvageError(Exception):
    """The file cannot be salvaged at all (no usable meta page, not a data file)."""


def sort_key(flags: int, dup: bool = False) -> SortKey:
    """LMDB's default comparator for a DB's keys (or, with ``dup``, its values)."""
    if flags & (INTEGERDUP if dup else INTEGERKEY):
        return lambda k: (len(k), k[::-1])  # native unsigned ints: size, then MSB first
    if flags & (REVERSEDUP if dup else REVERSEKEY):
        return lambda k: k[::-1]
    return lambda k: k


@dataclass
class DbRecord:
    pad: int
    flags: int
    depth: int
    branch_pages: int
    leaf_pages: int
    overflow_pages: int
    entries: int
    root: int

    @classmethod
    def parse(cls, buf: Any, off: int) -> DbRecord:
        return cls(*_DBREC.unpack_from(buf, off))


@dataclass
class Meta:
    slot: int
    psize: int
    mapsize: int
    free: DbRecord
    main: DbRecord
    last_pg: int
    txnid: int


@dataclass
class Problem:
    page: Optional[int]
    db: Optional[bytes]  # None: the main database (or the file as a whole, with page None)
    message: str


@dataclass
class Lost:
    """What one walk could not read of one database: key ranges and single keys."""

    ranges: list[tuple[Bound, Bound]] = field(default_factory=list)
    keys: set[Any] = field(default_factory=set)
    everything: bool = False

    def add_range(self, lo: Bound, hi: Bound) -> None:
        if lo is None and hi is None:
            self.everything = True
        elif len(self.ranges) < 4096:
            self.ranges.append((lo, hi))
        else:
            self.everything = True

    def empty(self) -> bool:
        return not (self.everything or self.ranges or self.keys)

    def overlaps(self, lo: Bound, hi: Bound) -> bool:
        if self.everything:
            return True
        for rlo, rhi in self.ranges:
            if (hi is None or rlo is None or rlo < hi) and (lo is None or rhi is None or lo < rhi):
                return True
        for k in self.keys:
            if (lo is None or lo <= k) and (hi is None or k < hi):
                return True
        return False

    def covers(self, k: Any) -> bool:
        if self.everything or k in self.keys:
            return True
        for rlo, rhi in self.ranges:
            if (rlo is None or rlo <= k) and (rhi is None or k < rhi):
                return True
        return False


@dataclass
class Database:
    """The records salvaged from one database (``name`` None: the main DB)."""

    name: Optional[bytes]
    flags: int
    entries: int  # what its DB record says; an estimate when the record itself is damaged
    items: dict[bytes, Union[bytes, list[bytes]]] = field(default_factory=dict)
    lost: Lost = field(default_factory=Lost)
    record_key: Any = None  # the sort key of its name in the main DB

    @property
    def dupsort(self) -> bool:
        return bool(self.flags & DUPSORT)

    def count(self) -> int:
        if self.dupsort:
            return sum(len(v) for v in self.items.values())
        return len(self.items)

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) in LMDB's order, one per duplicate."""
        skey = sort_key(self.flags)
        if self.dupsort:
            dkey = sort_key(self.flags, dup=True)
            for k in sorted(self.items, key=skey):
                vals = self.items[k]
                assert isinstance(vals, list)
                for v in sorted(set(vals), key=dkey):
                    yield k, v
        else:
            for k in sorted(self.items, key=skey):
                v = self.items[k]
                assert isinstance(v, bytes)
                yield k, v

    def flag_dict(self) -> dict[str, bool]:
        return {name: bool(self.flags & bit) for name, bit in FLAG_NAMES.items()}


@dataclass
class Result:
    path: str
    psize: int
    mapsize: int
    metas: list[Meta]
    main: Database
    named: dict[bytes, Database]
    problems: list[Problem]
    problem_count: int

    def damaged(self) -> bool:
        return self.problem_count > 0

    def named_in_order(self) -> list[Database]:
        skey = sort_key(self.main.flags)
        return [self.named[k] for k in sorted(self.named, key=skey)]

    def lost_estimate(self, db: Database) -> int:
        """Records the DB record says there are, minus those salvaged (0 if none)."""
        return max(0, db.entries - db.count())


# --- the walk ---------------------------------------------------------------------------


class _Tree:
    """One tree being walked: a database's main tree or a dup sub-tree of one key."""

    def __init__(
        self,
        db: Database,
        kind: str,
        skey: SortKey,
        dup_items: Optional[list[bytes]] = None,
        want: Optional[Lost] = None,
    ):
        self.db = db
        self.kind = kind  # "main", "named" or "dup"
        self.skey = skey
        self.dup_items = dup_items  # where a dup sub-tree's values go
        self.want = want  # older-meta walk: only these keys
        self.damaged = False


class _Page(NamedTuple):
    """A tree page that passed walk()'s checks, for walk_branch/walk_leaf: its tree, number,
    offset in the map, item count, upper bound, depth, the key range its parent gave it,
    and the key of the record that owns a sub-database's tree."""

    t: _Tree
    pgno: int
    base: int
    n: int
    upper: int
    level: int
    lo: Bound
    hi: Bound
    owner_key: Any


class _Walker:
    def __init__(
        self,
        s: Salvager,
        meta: Meta,
        wanted: Optional[dict[Any, Lost]] = None,
        known: frozenset[bytes] = frozenset(),
    ):
        self.s = s
        self.known = known  # older walk: named DBs the newer walk read (skip unless wanted)
        self.label = "" if wanted is None else f"older snapshot (txn {meta.txnid}): "
        self.mm = s.mm
        self.psize = s.psize
        self.npages = s.npages
        self.meta = meta
        self.visited = bytearray(self.npages)
        self.wanted = wanted  # None: read everything; else DB key -> Lost of the newer walk
        self.main: Optional[Database] = None
        self.named: dict[bytes, Database] = {}

    def problem(self, t: Optional[_Tree], page: Optional[int], msg: str) -> None:
        if t is not None:
            t.damaged = True
        self.s.problem(page, None if t is None else t.db.name, self.label + msg)

    def lose(self, t: _Tree, lo: Bound, hi: Bound, key: Any = None) -> None:
        """Note a lost range of ``t``; in a dup sub-tree the owner's key is lost."""
        t.damaged = True
        if t.kind == "dup":
            t.db.lost.keys.add(key)
        else:
            t.db.lost.add_range(lo, hi)

    # -- databases --

    def run(self) -> None:
        m = self.meta
        flags = m.main.flags & DB_FLAG_MASK
        self.main = Database(None, flags, m.main.entries)
        want = None if self.wanted is None else self.wanted.get(None)
        if self.wanted is not None and want is None:
            return
        t = _Tree(self.main, "main", sort_key(flags), want=want)
        self.walk_root(t, m.main, None)

    def walk_root(self, t: _Tree, rec: DbRecord, owner_key: Any) -> None:
        if rec.root == P_INVALID:
            return
        self.walk_page(t, rec.root, 0, None, None, owner_key, rec)

    def open_named(self, name: bytes, raw: bytes, page: int, name_skey: Any) -> None:
        rec = DbRecord.parse(raw, 0)
        if name in self.named:
            self.s.problem(page, name, self.label + "a second record for this name: ignored")
            return
        db = Database(name, rec.flags & DB_FLAG_MASK, rec.entries, record_key=name_skey)
        self.named[name] = db
        if rec.flags & ~DB_FLAG_MASK or rec.depth > MAX_DEPTH:
            self.s.problem(
                page,
                name,
                f"{self.label}database record has flags {rec.flags:#x}, depth {rec.depth}: lost",
            )
            db.lost.everything = True
            return
        want = None
        if self.wanted is not None:
            want = self.wanted.get(name)
            if want is None and name in self.known:
                return  # the newer walk read all of it
        t = _Tree(db, "named", sort_key(db.flags), want=want)
        self.walk_root(t, rec, None)

    # -- pages --

    def page_ok(self, t: _Tree, pgno: int, npages: int, parent: Optional[int], what: str) -> bool:
        if pgno < 2 or pgno >= self.npages or npages > self.npages - pgno:
            where = f"page {parent}" if parent is not None else "the database record"
            self.problem(
                t,
                pgno if 0 <= pgno < P_INVALID else None,
                f"{what} page {pgno} (from {where}) is outside the file ({self.npages} pages)",
            )
            return False
        if self.visited.find(1, pgno, pgno + npages) != -1:
            self.problem(t, pgno, f"{what} page reached twice (a cycle or a misdirected pointer)")
            return False
        return True

    def walk_page(
        self,
        t: _Tree,
        pgno: int,
        level: int,
        lo: Bound,
        hi: Bound,
        owner_key: Any,
        rec: DbRecord,
        parent: Optional[int] = None,
    ) -> None:
        if level >= MAX_DEPTH:
            self.problem(t, parent, f"tree deeper than {MAX_DEPTH} levels: the rest skipped")
            self.lose(t, lo, hi, owner_key)
            return
        if not self.page_ok(t, pgno, 1, parent, "tree"):
            self.lose(t, lo, hi, owner_key)
            return
        base = pgno * self.psize
        hp, ks2, flags, lower, upper = _HDR.unpack_from(self.mm, base)
        self.visited[pgno] = 1
        psize = self.psize
        if hp != pgno:
            self.problem(t, pgno, f"skipped: its header says page {hp}")
            self.lose(t, lo, hi, owner_key)
            return
        leaf2 = flags == P_LEAF | P_LEAF2
        if flags not in (P_BRANCH, P_LEAF) and not (leaf2 and t.kind == "dup"):
            self.problem(t, pgno, f"skipped: flags {flags:#x} are not a tree page's")
            self.lose(t, lo, hi, owner_key)
            return
        n = (lower - PAGEHDRSZ) // 2 if lower >= PAGEHDRSZ else 0
        if leaf2:
            bad = lower < PAGEHDRSZ or lower & 1 or ks2 == 0 or PAGEHDRSZ + n * ks2 > psize
        else:
            bad = lower < PAGEHDRSZ or lower & 1 or lower > upper or upper > psize
        if bad or n == 0:
            self.problem(t, pgno, f"skipped: bounds lower {lower} upper {upper} are not valid")
            self.lose(t, lo, hi, owner_key)
            return
        if flags == P_BRANCH:
            self.walk_branch(_Page(t, pgno, base, n, upper, level, lo, hi, owner_key), rec)
        elif leaf2:
            items = [
                bytes(self.mm[base + PAGEHDRSZ + i * ks2 : base + PAGEHDRSZ + (i + 1) * ks2])
                for i in range(n)
            ]
            if ks2 != rec.pad and rec.pad:
                self.problem(t, pgno, f"LEAF2 item size {ks2}, the sub-database says {rec.pad}")
            kept = self.in_order(t, pgno, [(t.skey(k), k) for k in items], lo, hi, owner_key)
            if t.dup_items is not None:
                t.dup_items.extend(k for _, k in kept)
        else:
            self.walk_leaf(_Page(t, pgno, base, n, upper, level, lo, hi, owner_key))

    def walk_branch(self, page: _Page, rec: DbRecord) -> None:
        t, pgno, base, n, upper, level, lo, hi, owner_key = page
        mm, psize = self.mm, self.psize
        kids: list[Optional[int]] = []
        seps: list[Bound] = []
        broken = False
        for i in range(n):
            (off,) = _U16.unpack_from(mm, base + PAGEHDRSZ + 2 * i)
            if off < upper or off & 1 or off + NODESIZE > psize:
                broken = True
                kids.append(None)
                seps.append(None)
                continue
            clo, chi, cfl, ks = _NODE.unpack_from(mm, base + off)
            if off + NODESIZE + ks > psize:
                broken = True
                kids.append(None)
                seps.append(None)
                continue
            kids.append(clo | chi << 16 | cfl << 32)
            if i == 0:
                seps.append(lo)
            else:
                seps.append(t.skey(bytes(mm[base + off + NODESIZE : base + off + NODESIZE + ks])))
        if broken:
            self.problem(
                t, pgno, "branch page: some nodes lie outside the page: their subtrees lost"
            )
            self.lose(t, lo, hi, owner_key)
        # Separators must increase inside [lo, hi); when they do not, the children are
        # checked against the page's own range only (they still check their keys).
        ordered = all(s is not None for s in seps[1:])
        if ordered:
            prev = lo
            for s in seps[1:]:
                if (prev is not None and not prev < s) or (hi is not None and not s < hi):
                    ordered = False
                    break
                prev = s
        if not ordered and not broken:
            self.problem(t, pgno, "branch page: separator keys out of order")
        for i, kid in enumerate(kids):
            if kid is None:
                continue
            if ordered:
                clo = seps[i] if i else lo
                chi = seps[i + 1] if i + 1 < n else hi
            else:
                clo, chi = lo, hi
            if t.want is not None and not t.want.overlaps(clo, chi):
                continue
            self.walk_page(t, kid, level + 1, clo, chi, owner_key, rec, pgno)

    def in_order(
        self,
        t: _Tree,
        pgno: int,
        cands: list[tuple[Any, Any]],
        lo: Bound,
        hi: Bound,
        owner_key: Any,
    ) -> list[tuple[Any, Any]]:
        """Drop entries outside [lo, hi) and keep the longest strictly increasing run."""
        inside = [c for c in cands if (lo is None or lo <= c[0]) and (hi is None or c[0] < hi)]
        outside = len(cands) - len(inside)
        kept = _longest_increasing(inside)
        dropped = len(inside) - len(kept)
        if outside or dropped:
            what = []
            if outside:
                what.append(f"{outside} key(s) outside the range its parent gives")
            if dropped:
                what.append(f"{dropped} key(s) out of order")
            self.problem(t, pgno, f"{', '.join(what)}: dropped")
            self.lose(t, lo, hi, owner_key)
        return kept

    def walk_leaf(self, page: _Page) -> None:
        t, pgno, base, n, upper, level, lo, hi, owner_key = page
        mm, psize = self.mm, self.psize
        cands: list[tuple[Any, Any]] = []
        bad = 0
        for i in range(n):
            (off,) = _U16.unpack_from(mm, base + PAGEHDRSZ + 2 * i)
            if off < upper or off & 1 or off + NODESIZE > psize:
                bad += 1
                continue
            dlo, dhi, nf, ks = _NODE.unpack_from(mm, base + off)
            dsize = dlo | dhi << 16
            dlen = 8 if nf & F_BIGDATA else dsize
            if off + NODESIZE + ks + dlen > psize:
                bad += 1
                continue
            k0 = base + off + NODESIZE
            key = bytes(mm[k0 : k0 + ks])
            cands.append((t.skey(key), (key, nf, k0 + ks, dsize)))
        if bad:
            self.problem(t, pgno, f"{bad} node(s) lie outside the page: dropped")
            self.lose(t, lo, hi, owner_key)
        kept = self.in_order(t, pgno, cands, lo, hi, owner_key)
        if not kept and cands:
            # Nothing of this page belongs here: a misdirected pointer. Another parent
            # may still reach the page rightfully.
            self.visited[pgno] = 0
        db = t.db
        for sk, (key, nf, doff, dsize) in kept:
            if t.want is not None and not t.want.covers(sk):
                continue
            if t.kind == "dup":
                if nf or dsize:
                    self.problem(t, pgno, f"a duplicate with data size {dsize}, flags {nf:#x}")
                if t.dup_items is not None:
                    t.dup_items.append(key)
                continue
            self.leaf_item(t, db, pgno, key, sk, nf, doff, dsize)

    def leaf_item(
        self, t: _Tree, db: Database, pgno: int, key: bytes, sk: Any, nf: int, doff: int, dsize: int
    ) -> None:
        mm = self.mm
        if db.dupsort:
            if nf == 0:
                self.add(db, key, [bytes(mm[doff : doff + dsize])])
            elif nf == F_DUPDATA:
                dups = self.subpage(t, pgno, doff, dsize, key)
                if dups is None:
                    db.lost.keys.add(sk)
                else:
                    self.add(db, key, dups)
            elif nf == F_DUPDATA | F_SUBDATA and dsize == 48:
                rec = DbRecord.parse(mm, doff)
                dups_list: list[bytes] = []
                sub = _Tree(db, "dup", sort_key(db.flags, dup=True), dups_list)
                if rec.root == P_INVALID:
                    self.problem(t, pgno, "a duplicate sub-database with no root: its key lost")
                    sub.damaged = True
                else:
                    self.walk_page(sub, rec.root, 0, None, None, sk, rec, pgno)
                if sub.damaged:
                    db.lost.keys.add(sk)
                if dups_list:
                    self.add(db, key, dups_list)
            else:
                self.problem(t, pgno, f"a node with flags {nf:#x}, data size {dsize}: dropped")
                db.lost.keys.add(sk)
            return
        if nf == 0:
            self.add(db, key, bytes(mm[doff : doff + dsize]))
        elif nf == F_BIGDATA:
            (ov,) = _U64.unpack_from(mm, doff)
            val = self.overflow(t, pgno, ov, dsize)
            if val is None:
                db.lost.keys.add(sk)
            else:
                self.add(db, key, val)
        elif nf == F_SUBDATA and t.kind == "main" and dsize == 48:
            raw = bytes(mm[doff : doff + 48])
            self.add(db, key, raw)
            self.open_named(key, raw, pgno, sk)
        else:
            self.problem(t, pgno, f"a node with flags {nf:#x}, data size {dsize}: dropped")
            db.lost.keys.add(sk)

    def add(self, db: Database, key: bytes, value: Union[bytes, list[bytes]]) -> None:
        if key in db.items:
            if isinstance(value, list):
                old = db.items[key]
                assert isinstance(old, list)
                old.extend(value)
            return
        db.items[key] = value

    def overflow(self, t: _Tree, pgno: int, ov: int, dsize: int) -> Optional[bytes]:
        psize = self.psize
        need = (PAGEHDRSZ - 1 + dsize) // psize + 1
        if not self.page_ok(t, ov, need, pgno, "overflow"):
            return None
        base = ov * psize
        hp, _, flags, _, _ = _HDR.unpack_from(self.mm, base)
        (run,) = _U32.unpack_from(self.mm, base + 12)
        if hp != ov or flags & ~P_DIRTY != P_OVERFLOW or run < need:
            self.problem(
                t,
                ov,
                f"overflow page skipped: header page {hp}, flags {flags:#x}, {run} pages "
                f"for {dsize} bytes (value of a key on page {pgno})",
            )
            return None
        self.visited[ov : ov + need] = b"\x01" * need
        return bytes(self.mm[base + PAGEHDRSZ : base + PAGEHDRSZ + dsize])

    def subpage(
        self, t: _Tree, pgno: int, off: int, size: int, key: bytes
    ) -> Optional[list[bytes]]:
        """The values of a DUPSORT sub-page, or None when it fails its checks."""
        mm = self.mm
        db = t.db
        if size < PAGEHDRSZ:
            self.problem(t, pgno, f"a sub-page of {size} bytes: its key lost")
            return None
        _, ks2, sflags, lower, upper = _HDR.unpack_from(mm, off)
        sflags &= ~P_DIRTY
        leaf2 = sflags == P_LEAF | P_LEAF2 | P_SUBP
        n = (lower - PAGEHDRSZ) // 2 if lower >= PAGEHDRSZ else 0
        if sflags != P_LEAF | P_SUBP and not leaf2:
            self.problem(t, pgno, f"a sub-page with flags {sflags:#x}: its key lost")
            return None
        if leaf2:
            bad = lower & 1 or ks2 == 0 or PAGEHDRSZ + n * ks2 > size
        else:
            bad = lower & 1 or lower > upper or upper > size
        if bad or n == 0:
            self.problem(t, pgno, f"a sub-page with lower {lower} upper {upper}: its key lost")
            return None
        dkey = sort_key(db.flags, dup=True)
        cands: list[tuple[Any, Any]] = []
        if leaf2:
            for i in range(n):
                v = bytes(mm[off + PAGEHDRSZ + i * ks2 : off + PAGEHDRSZ + (i + 1) * ks2])
                cands.append((dkey(v), v))
        else:
            for i in range(n):
                (noff,) = _U16.unpack_from(mm, off + PAGEHDRSZ + 2 * i)
                if noff < upper or noff + NODESIZE > size:
                    self.problem(t, pgno, "a sub-page node lies outside the sub-page: key lost")
                    return None
                _, _, _, ks = _NODE.unpack_from(mm, off + noff)
                if noff + NODESIZE + ks > size:
                    self.problem(t, pgno, "a sub-page node overruns the sub-page: key lost")
                    return None
                v = bytes(mm[off + noff + NODESIZE : off + noff + NODESIZE + ks])
                cands.append((dkey(v), v))
        kept = _longest_increasing(cands)
        if len(kept) != len(cands):
            self.problem(t, pgno, f"a sub-page has {len(cands) - len(kept)} value(s) out of order")
            return None
        return [v for _, v in kept]


def _longest_increasing(items: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """The longest subsequence whose first members strictly increase (first one wins)."""
    if all(items[i][0] < items[i + 1][0] for i in range(len(items) - 1)):
        return items
    tails: list[Any] = []
    tail_idx: list[int] = []
    prev = [-1] * len(items)
    for i, (k, _) in enumerate(items):
        j = bisect_left(tails, k)
        if j == len(tails):
            tails.append(k)
            tail_idx.append(i)
        else:
            tails[j] = k
            tail_idx[j] = i
        prev[i] = tail_idx[j - 1] if j else -1
    out = []
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        out.append(items[i])
        i = prev[i]
    out.reverse()
    return out


# --- the file --------------------------------------------------------------------------


class Salvager:
    """Reads one data file; :meth:`run` returns the :class:`Result`."""

    MAX_LISTED = 10000

    def __init__(self, path: str):
        self.path = path
        self.problems: list[Problem] = []
        self.problem_count = 0
        self.mm: Any = None
        self.psize = 0
        self.npages = 0

    def problem(self, page: Optional[int], db: Optional[bytes], msg: str) -> None:
        self.problem_count += 1
        if len(self.problems) < self.MAX_LISTED:
            self.problems.append(Problem(page, db, msg))

    def run(self) -> Result:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise SalvageError(f"{self.path}: cannot open: {exc.strerror}") from None
        try:
            size = os.fstat(fd).st_size
            if size < META_END:
                raise SalvageError(f"{self.path}: {size} bytes is too short for an LMDB data file")
            self.mm = mmap.mmap(fd, size, prot=mmap.PROT_READ)
        except OSError as exc:
            raise SalvageError(f"{self.path}: cannot map the file: {exc.strerror}") from None
        finally:
            os.close(fd)
        try:
            return self._run(size)
        finally:
            self.mm.close()

    def _meta_at(self, off: int, slot: int) -> tuple[Optional[tuple[Any, ...]], str]:
        """The raw fields of a meta page at ``off``, or None and why not."""
        mm = self.mm
        if off + META_END > len(mm):
            return None, "cut off by the end of the file"
        pgno, _, flags, _, _ = _HDR.unpack_from(mm, off)
        magic, version, _, mapsize = _META.unpack_from(mm, off + 16)
        if magic != MAGIC:
            return None, f"no LMDB magic (found {magic:#010x})"
        if version != DATA_VERSION:
            return None, f"data version {version}, not {DATA_VERSION}"
        if not flags & P_META or pgno != slot:
            return None, f"header says page {pgno}, flags {flags:#x}: not meta page {slot}"
        free = DbRecord.parse(mm, off + 40)
        main = DbRecord.parse(mm, off + 88)
        last_pg, txnid = _TAIL.unpack_from(mm, off + 136)
        return (mapsize, free, main, last_pg, txnid), ""

    def _run(self, size: int) -> Result:
        candidates = [1 << b for b in range(12, 17)] + [1 << b for b in range(11, 7, -1)]
        raw0, why0 = self._meta_at(0, 0)
        psize = 0
        raw1: Optional[tuple[Any, ...]] = None
        why1 = "not found at any page size"
        # Meta page 1 sits at offset psize: where it is found fixes the page size.
        if raw0 is not None and MIN_PSIZE <= raw0[1].pad <= MAX_PSIZE:
            if raw0[1].pad & (raw0[1].pad - 1) == 0:
                candidates.insert(0, raw0[1].pad)
        for cand in candidates:
            r, why = self._meta_at(cand, 1)
            if r is not None:
                raw1, psize = r, cand
                break
            if cand == candidates[0]:
                why1 = why
        if not psize and raw0 is not None:
            pad = raw0[1].pad
            if MIN_PSIZE <= pad <= MAX_PSIZE and pad & (pad - 1) == 0:
                psize = pad
        if not psize:
            if raw0 is None:
                raise SalvageError(
                    f"{self.path} is not an LMDB data file, or both meta pages are destroyed "
                    f"(meta page 0: {why0}; meta page 1: {why1})"
                )
            psize = 4096
            self.problem(0, None, "no usable page size in the meta pages: assuming 4096")
        self.psize = psize
        self.npages = size // psize
        if size % psize:
            self.problem(None, None, f"the file size {size} is not a multiple of the page size")
        metas: list[Meta] = []
        for slot, raw, why in ((0, raw0, why0), (1, raw1, why1)):
            if raw is None:
                self.problem(slot, None, f"meta page {slot} is unusable: {why}")
                continue
            mapsize, free, main, last_pg, txnid = raw
            if free.pad != psize:
                self.problem(slot, None, f"meta page {slot} says page size {free.pad}, not {psize}")
            metas.append(Meta(slot, psize, mapsize, free, main, last_pg, txnid))
        # Newest first; on a tie meta 0, as LMDB picks.
        metas.sort(key=lambda m: (-m.txnid, m.slot))
        first = _Walker(self, metas[0], None)
        first.run()
        assert first.main is not None
        main, named = first.main, first.named
        if len(metas) > 1:
            wanted = self._wanted(main, named)
            if wanted:
                older = _Walker(self, metas[1], wanted, frozenset(named))
                older.run()
                self._merge(main, named, older)
        m = metas[0]
        mapsize = m.mapsize
        if m.last_pg < self.npages:  # LMDB maps at least the pages in use
            mapsize = max(mapsize, (m.last_pg + 1) * psize)
        return Result(
            self.path, psize, mapsize, metas, main, named, self.problems, self.problem_count
        )

    @staticmethod
    def _wanted(main: Database, named: dict[bytes, Database]) -> dict[Any, Lost]:
        """What the older meta should fill in: the newer walk's losses, per DB."""
        lost = main.lost
        # The main DB's lost parts, plus the records of named DBs with losses of their own
        # (the way to reach them); named DBs met in a lost part of the main DB are new
        # to the newer walk and are read whole.
        mw = Lost(list(lost.ranges), set(lost.keys), lost.everything)
        wanted: dict[Any, Lost] = {}
        for name, db in named.items():
            if not db.lost.empty():
                wanted[name] = db.lost
                mw.keys.add(db.record_key)
        if mw.empty():
            return {}
        wanted[None] = mw
        return wanted

    def _merge(self, main: Database, named: dict[bytes, Database], older: _Walker) -> None:
        assert older.main is not None
        for key, value in older.main.items.items():
            if key not in main.items:
                main.items[key] = value
        for name, db in older.named.items():
            mine = named.get(name)
            if mine is None:
                named[name] = db
                continue
            for key, value in db.items.items():
                if key not in mine.items:
                    mine.items[key] = value
                elif isinstance(value, list):
                    old = mine.items[key]
                    assert isinstance(old, list)
                    seen = set(old)
                    old.extend(v for v in value if v not in seen)


def salvage(path: str) -> Result:
    """Salvage the data file ``path`` (the file itself, not the directory)."""
    return Salvager(path).run()
