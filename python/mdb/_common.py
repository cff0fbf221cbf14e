"""The cold half of the Python API, shared by both backends (mdb._cext and mdb._cffi).

What runs once per open or per report, not per record: argument checks, the mapping of
Environment()'s keywords to open flags, the dictionaries of stat()/info()/flags()/
readers(detail=True), the lib_version check and the lookup of where the data file is
mapped.  The C extension calls these functions too (module.c imports this module), so
each rule is written once.  The hot calls (get/put/delete, cursor moves, iteration) stay
in each backend, in C and in cffi-tuned Python.

The flag values are LMDB 0.9's ABI (the ones our src/mdbcore/lmdb.h defines); each
backend compares them with its compiled-in constants when it is imported
(:func:`check_constants`), so a mismatch fails the import instead of mis-mapping flags.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

from .errors import Error

# -- LMDB 0.9 flag values (environment flags, then database flags)
MDB_NOSUBDIR = 0x4000
MDB_NOSYNC = 0x10000
MDB_RDONLY = 0x20000
MDB_NOMETASYNC = 0x40000
MDB_WRITEMAP = 0x80000
MDB_MAPASYNC = 0x100000
MDB_NOTLS = 0x200000
MDB_NOLOCK = 0x400000
MDB_NORDAHEAD = 0x800000
MDB_NOMEMINIT = 0x1000000
MDB_REVERSEKEY = 0x02
MDB_DUPSORT = 0x04
MDB_INTEGERKEY = 0x08
MDB_DUPFIXED = 0x10
MDB_INTEGERDUP = 0x20

CONSTANTS = (
    "MDB_NOSUBDIR",
    "MDB_NOSYNC",
    "MDB_RDONLY",
    "MDB_NOMETASYNC",
    "MDB_WRITEMAP",
    "MDB_MAPASYNC",
    "MDB_NOTLS",
    "MDB_NOLOCK",
    "MDB_NORDAHEAD",
    "MDB_NOMEMINIT",
    "MDB_REVERSEKEY",
    "MDB_DUPSORT",
    "MDB_INTEGERKEY",
    "MDB_DUPFIXED",
    "MDB_INTEGERDUP",
)
"""The names of the flag values above, as lmdb.h spells them."""

_U64_NONE = (1 << 64) - 1  # "unknown" / "idle" in the core's 64-bit reader fields


def check_constants(backend: str, values: Mapping[str, int]) -> None:
    """Raise ImportError unless ``values`` (name -> the backend's value) agree with ours."""
    bad = [
        f"{n}: {values.get(n)!r} != {globals()[n]:#x}"
        for n in CONSTANTS
        if values.get(n) != globals()[n]
    ]
    if bad:
        raise ImportError(f"mdb.{backend}: flag values differ from mdb._common: {bad}")


# -- versions


def check_lib_version(lib_version: Any) -> None:
    """Accept ``lib_version`` None or 0 (the LMDB 0.9 format, the only one mdb implements)."""
    if lib_version is None:
        return
    if not isinstance(lib_version, int):
        raise TypeError(f"lib_version must be an integer, not {type(lib_version).__name__}")
    if lib_version < 0:
        raise OverflowError("lib_version must be a non-negative integer")
    if lib_version != 0:
        raise Error(f"lib_version={lib_version} is not available: mdb implements LMDB 0.9")


def version_tuple(major: int, minor: int, patch: int, subpatch: bool) -> tuple[int, ...]:
    """(major, minor, patch), plus 0 (no py-lmdb patch series) with subpatch=True."""
    return (major, minor, patch, 0) if subpatch else (major, minor, patch)


# -- Environment() arguments


def _check_uint(name: str, val: Any, bits: int) -> None:
    if not isinstance(val, int):
        raise TypeError(f"{name} must be an integer, not {type(val).__name__}")
    if val < 0 or val >> bits:
        raise OverflowError(f"{name}={val} is out of range")


def check_env_args(
    map_size: Any,
    max_readers: Any,
    max_dbs: Any,
    max_map_size: Any,
    lib_version: Any,
    have_core: bool,
) -> None:
    """Environment()'s checks of its numeric arguments (None: not given, the default).

    After them a backend may convert map_size and max_map_size to 64-bit and
    max_readers and max_dbs to 32-bit unsigned integers without further checks.
    """
    check_lib_version(lib_version)
    for name, val, bits in (
        ("map_size", map_size, 64),
        ("max_readers", max_readers, 32),
        ("max_dbs", max_dbs, 32),
        ("max_map_size", max_map_size, 64),
    ):
        if val is not None:
            _check_uint(name, val, bits)
    if max_map_size and not have_core:
        raise Error("max_map_size needs the mdb core (this build links the system liblmdb)")


def check_mapsize(map_size: Any) -> None:
    """Environment.set_mapsize()'s argument check."""
    _check_uint("map_size", map_size, 64)


def open_flags(
    subdir: bool,
    readonly: bool,
    metasync: bool,
    sync: bool,
    map_async: bool,
    readahead: bool,
    writemap: bool,
    meminit: bool,
    lock: bool,
) -> int:
    """mdb_env_open()'s flags for Environment()'s keywords (MDB_NOTLS always: a read
    txn's reader slot belongs to the txn, so threads may pass txns around)."""
    f = MDB_NOTLS
    if not subdir:
        f |= MDB_NOSUBDIR
    if readonly:
        f |= MDB_RDONLY
    if not metasync:
        f |= MDB_NOMETASYNC
    if not sync:
        f |= MDB_NOSYNC
    if map_async:
        f |= MDB_MAPASYNC
    if not readahead:
        f |= MDB_NORDAHEAD
    if writemap:
        f |= MDB_WRITEMAP
    if not meminit:
        f |= MDB_NOMEMINIT
    if not lock:
        f |= MDB_NOLOCK
    return f


def db_open_flags(
    reverse_key: bool, dupsort: bool, integerkey: bool, integerdup: bool, dupfixed: bool
) -> int:
    """mdb_dbi_open()'s flags for open_db()'s keywords (without MDB_CREATE).

    integerdup and dupfixed imply dupsort, as in py-lmdb.  (The C extension keeps its own
    copy of this in env.c: open_db() is called in loops for its cached handle.)
    """
    f = 0
    if reverse_key:
        f |= MDB_REVERSEKEY
    if dupsort:
        f |= MDB_DUPSORT
    if integerkey:
        f |= MDB_INTEGERKEY
    if integerdup:
        f |= MDB_INTEGERDUP | MDB_DUPFIXED | MDB_DUPSORT
    if dupfixed:
        f |= MDB_DUPFIXED | MDB_DUPSORT
    return f


def check_getmulti_args(
    dupdata: bool, dupfixed_bytes: int | None, keyfixed: bool, values: bool
) -> None:
    """Cursor.getmulti()'s checks of its keywords, in py-lmdb's order."""
    if dupfixed_bytes is not None:
        if dupfixed_bytes <= 0:
            raise OverflowError("dupfixed_bytes must be a positive integer")
        if not dupdata:
            raise TypeError("dupfixed_bytes requires dupdata=True")
    if keyfixed and not dupfixed_bytes:
        raise TypeError("keyfixed=True requires dupfixed_bytes")
    if not values and dupdata:
        raise TypeError("values=False cannot be combined with dupdata=True")


# -- dictionaries of the reports


def env_flags_dict(f: int) -> dict[str, bool]:
    """Environment.flags(): the keywords of Environment() that give mdb_env_get_flags' f."""
    return {
        "subdir": not f & MDB_NOSUBDIR,
        "readonly": bool(f & MDB_RDONLY),
        "metasync": not f & MDB_NOMETASYNC,
        "sync": not f & MDB_NOSYNC,
        "map_async": bool(f & MDB_MAPASYNC),
        "readahead": not f & MDB_NORDAHEAD,
        "writemap": bool(f & MDB_WRITEMAP),
        "meminit": not f & MDB_NOMEMINIT,
        "lock": not f & MDB_NOLOCK,
    }


def db_flags_dict(f: int) -> dict[str, bool]:
    """_Database.flags(): the keywords of open_db() that give mdb_dbi_flags' f."""
    return {
        "reverse_key": bool(f & MDB_REVERSEKEY),
        "dupsort": bool(f & MDB_DUPSORT),
        "integerkey": bool(f & MDB_INTEGERKEY),
        "integerdup": bool(f & MDB_INTEGERDUP),
        "dupfixed": bool(f & MDB_DUPFIXED),
    }


def stat_dict(
    psize: int, depth: int, branch_pages: int, leaf_pages: int, overflow_pages: int, entries: int
) -> dict[str, int]:
    """Environment.stat() and Transaction.stat(): an MDB_stat's fields."""
    return {
        "psize": psize,
        "depth": depth,
        "branch_pages": branch_pages,
        "leaf_pages": leaf_pages,
        "overflow_pages": overflow_pages,
        "entries": entries,
    }


def info_dict(
    map_addr: int,
    map_size: int,
    last_pgno: int,
    last_txnid: int,
    max_readers: int,
    num_readers: int,
    reader_age: int | None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Environment.info(): an MDB_envinfo's fields, plus with the mdb core reader_age (the
    age of the oldest snapshot a reader holds; None: not available, no key) and meta (the
    state of the two meta pages, :func:`meta_dict`; None: no key)."""
    out: dict[str, Any] = {
        "map_addr": map_addr,
        "map_size": map_size,
        "last_pgno": last_pgno,
        "last_txnid": last_txnid,
        "max_readers": max_readers,
        "num_readers": num_readers,
    }
    if reader_age is not None:
        out["reader_age"] = reader_age
    if meta is not None:
        out["meta"] = meta
    return out


#: mdbcore.h's MDBCORE_META_* bits
META_DAMAGED, META_FALLBACK, META_HEALED = 0x1, 0x2, 0x4


def meta_dict(
    flags: int,
    used_page: int,
    used_txnid: int,
    damaged_page: int,
    damaged_txnid: int,
    reason: str | None,
) -> dict[str, Any]:
    """info()["meta"]: mdbcore_env_meta_status as a dict. ``fallback`` is True when the
    newer meta page failed its checks at open and the environment opened the older
    snapshot; ``damaged`` when either page failed them (and no commit has rewritten it
    since: then ``healed``)."""
    damaged = damaged_page >= 0
    return {
        "flags": flags,
        "damaged": bool(flags & META_DAMAGED),
        "fallback": bool(flags & META_FALLBACK),
        "healed": bool(flags & META_HEALED),
        "page": used_page,
        "txnid": used_txnid,
        "damaged_page": damaged_page if damaged else None,
        "damaged_txnid": damaged_txnid if damaged else None,
        "reason": reason if damaged else None,
    }


def reader_dict(pid: int, thread: int, txnid: int, age: int, pages_held: int) -> dict[str, Any]:
    """One row of readers(detail=True), from the core's 64-bit fields (all ones: an idle
    slot's txnid, or pages_held the core could not count, become None)."""
    return {
        "pid": pid,
        "thread": thread,
        "txnid": None if txnid == _U64_NONE else txnid,
        "age": age,
        "pages_held": None if pages_held == _U64_NONE else pages_held,
    }


#: The free DB record's numbers in Environment.freelist()'s dict, in the order both
#: backends hand them over (mdbcore_freelist's rec: depth, then the page counts, entries).
FREELIST_NUMS = ("depth", "branch_pages", "leaf_pages", "overflow_pages", "entries")


def freelist_dict(nums: tuple[int, ...], txns: list[tuple[int, list[int]]]) -> dict[str, Any]:
    """Environment.freelist()'s dict: FREELIST_NUMS, ``free_pages`` (the total) and
    ``txns`` [{"txnid": T, "pages": [pgno, ...]}] in key order, pages as stored."""
    out: dict[str, Any] = dict(zip(FREELIST_NUMS, nums))
    out["free_pages"] = sum(len(pages) for _t, pages in txns)
    out["txns"] = [{"txnid": t, "pages": pages} for t, pages in txns]
    return out


def freelist_corrupted(pgno: int, msg: str) -> Error:
    """The CorruptedError of a free DB that does not hold up (mdbcore_freelist_* gave
    MDB_CORRUPTED and the first problem); ``pgno`` all ones means no particular page."""
    from .errors import CorruptedError

    where = "" if pgno == _U64_NONE else f"page {pgno}: "
    return CorruptedError(
        f"freelist(): the free list does not hold up: {where}{msg}",
        what="mdbcore_freelist_env",
        code=-30796,
        reason=f"{where}{msg}",
    )


CHECK_NUMS = (
    "problems_total",
    "psize",
    "next_pgno",
    "txnid",
    "meta_pages",
    "branch_pages",
    "leaf_pages",
    "leaf2_pages",
    "overflow_pages",
    "overflow_runs",
    "reachable_pages",
    "free_pages",
    "free_records",
    "leaked_pages",
    "twice_pages",
    "free_and_used",
)
"""The counters of Environment.check()'s report, in mdbcore_check_report's order."""


# -- where the data file is mapped


def map_range(fd: int) -> tuple[int, int]:
    """Address range [lo, hi) where the data file ``fd`` is mapped; (0, 0) if unknown.

    For the system liblmdb, which does not report its map address (me_mapaddr is only
    set with MDB_FIXEDMAP; the mdb core has mdbcore_env_get_mapaddr), the mappings of
    the file's inode are looked up in /proc/self/maps: the one at file offset 0, and
    those continuing it.  buffers=True values outside the range are returned as
    copies, so (0, 0) (no /proc) is safe, only slower.
    """
    try:
        st = os.fstat(fd)
        lo = hi = 0
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 5 or int(parts[4]) != st.st_ino:
                    continue
                major, minor = (int(x, 16) for x in parts[3].split(":"))
                if os.makedev(major, minor) != st.st_dev:
                    continue
                a, b = (int(x, 16) for x in parts[0].split("-"))
                if not lo and int(parts[2], 16) == 0:
                    lo, hi = a, b
                elif lo and a == hi:
                    hi = b
    except (OSError, ValueError):
        return 0, 0
    return lo, hi
