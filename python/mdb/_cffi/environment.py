"""Environment of the cffi backend (as mdb._cext's env.c), and the keeper of its handle.

Lifetimes follow mdb._cext (see python/mdb/_cext/module.h): an environment's engine
handle belongs to a :class:`_MapKeeper`; ``buffers=True`` values hold the keeper, so the
map stays mapped while any is alive, and ``close()`` only drops the environment's own
reference.  Objects inherited across ``fork()`` raise instead of touching the parent's
engine state.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Literal

from .. import _common, _registry
from ..errors import Error, _closed, _forked
from ._ffi import (
    _EACCES,
    _EINVAL,
    HAVE_CHECK,
    _envs,
    _op,
    _out_call,
    _raise,
    _stat_dict,
    _thread_id,
    _unpack,
    _wrote,
    ffi,
    lib,
    pid_global,
)
from .database import _Database

_pid = pid_global(globals())


class _MapKeeper:
    """Owns an engine environment handle; closes it when the last user goes.

    It also holds what must end before that close: the Environment's list of live
    transactions (the same list object) and its spare read txn.  Normally
    Environment.close() has ended them already; but the objects of a collected cycle (or
    of an interpreter shutting down) are finalized in any order, and the engine frees its
    txns with the env, so a txn ended after this close would touch freed memory."""

    __slots__ = ("env", "pid", "exports", "reg_key", "txns", "spare", "__weakref__")

    def __init__(self, env: Any, txns: list[Transaction]) -> None:
        self.env = env
        self.pid = _pid
        self.exports = 0
        self.reg_key: Any = None
        self.txns = txns
        self.spare: Any = None  # a reset read txn kept for the next begin()

    def __del__(self) -> None:
        env = self.env
        if env is not None and self.pid == _pid:
            for t in list(self.txns):
                if t._parent is None:
                    t.env._valid = False  # nothing new starts, no txn is kept as spare
                    t._end(False)  # children and cursors first, as Environment.close()
            if self.spare is not None:
                lib.mdb_txn_abort(self.spare)
                self.spare = None
        self.env = None
        if env is not None and self.pid == _pid:
            lib.mdb_env_close(env)
        if self.reg_key is not None and self.pid == _pid:
            _registry.release(self.reg_key)
            self.reg_key = None


def _release_export(keeper: _MapKeeper) -> Any:
    def done(_p: Any) -> None:
        keeper.exports -= 1

    return done


_reader_lines: list[str] = []


@ffi.def_extern()
def _mdbpy_reader_cb(msg: Any, ctx: Any) -> int:
    _reader_lines.append(ffi.string(msg).decode("utf-8", "replace"))
    return 0


class Environment:
    """An open environment (directory or file); ``mdb.open()`` is an alias.

    Keywords as py-lmdb: map_size, subdir, readonly, metasync, sync, map_async,
    mode, create, readahead, writemap, meminit, max_readers, max_dbs,
    max_spare_txns, lock.
    """

    def __init__(
        self,
        path: Any,
        map_size: int = 10485760,
        subdir: bool = True,
        readonly: bool = False,
        metasync: bool = True,
        sync: bool = True,
        map_async: bool = False,
        mode: int = 0o755,
        create: bool = True,
        readahead: bool = True,
        writemap: bool = False,
        meminit: bool = True,
        max_readers: int = 126,
        max_dbs: int = 0,
        max_spare_txns: int = 0,
        lock: bool = True,
        lib_version: int | None = None,
        max_map_size: int | None = None,
    ) -> None:
        self._valid = False
        self._active = 0  # engine calls in flight on other threads (GIL released)
        # The hot calls' gate (helpers.h): open while calls may start; they count
        # themselves on their transactions' gates, which close() waits for too.
        self._st = ffi.new("mdbpy_envst *")
        self._keeper: _MapKeeper | None = None
        self._env: Any = None
        self._txns: list[Transaction] = []
        self._write_txns = 0
        self._writer = 0
        self._dbs: dict[bytes, _Database] = {}
        _common.check_env_args(
            map_size, max_readers, max_dbs, max_map_size, lib_version, bool(HAVE_CHECK)
        )
        path_s = os.fsdecode(path)
        path_b = os.fsencode(path)
        _registry.check(path_s, bool(subdir))
        if create and subdir and not readonly:
            try:
                os.mkdir(path_b, mode)
            except FileExistsError:
                pass
        envp = ffi.new("MDB_env **")
        rc = lib.mdb_env_create(envp)
        if rc:
            _raise("mdb_env_create", rc)
        env = envp[0]
        for what, rc in (
            ("mdb_env_set_mapsize", lib.mdb_env_set_mapsize(env, map_size)),
            ("mdb_env_set_maxreaders", lib.mdb_env_set_maxreaders(env, max_readers)),
            ("mdb_env_set_maxdbs", lib.mdb_env_set_maxdbs(env, max_dbs)),
            (
                "max_map_size",
                lib.mdbpy_set_maxsize(env, max_map_size) if max_map_size else 0,
            ),
        ):
            if rc:
                lib.mdb_env_close(env)
                _raise(what, rc)
        flags = _common.open_flags(
            subdir, readonly, metasync, sync, map_async, readahead, writemap, meminit, lock
        )
        rc = lib.mdb_env_open(env, path_b, flags, mode & ~0o111)
        if rc:
            lib.mdb_env_close(env)
            _raise(path_s, rc)
        keeper = _MapKeeper(env, self._txns)
        self._keeper = keeper
        _envs.add(self)
        self._maxkey = int(lib.mdb_env_get_maxkeysize(env))  # fixed once open
        self._env = env
        self._pid = _pid
        self._readonly = bool(readonly)
        self._max_spare_txns = max_spare_txns
        self._valid = True
        self._st.gate = 1  # open
        fdp = ffi.new("mdb_filehandle_t *")
        if lib.mdb_env_get_fd(env, fdp) == 0 and fdp[0] >= 0:
            keeper.reg_key = _registry.register(fdp[0], path_s, bool(subdir))
            self._map = self._map_range(fdp[0])
        else:
            self._map = (0, 0)
        txnp = ffi.new("MDB_txn **")
        rc = lib.mdb_txn_begin(env, ffi.NULL, lib.MDB_RDONLY, txnp)
        if rc:
            self.close()
            _raise("mdb_txn_begin", rc)
        dbip = ffi.new("MDB_dbi *")
        flp = ffi.new("unsigned int *")
        rc = lib.mdb_dbi_open(txnp[0], ffi.NULL, 0, dbip)
        if not rc:
            rc = lib.mdb_dbi_flags(txnp[0], dbip[0], flp)
        lib.mdb_txn_abort(txnp[0])
        if rc:
            self.close()
            _raise("mdb_dbi_open", rc)
        self._main_db = _Database(self, dbip[0], flp[0])

    # -- helpers
    def _check(self) -> None:
        if not self._valid:
            raise _closed()
        if self._pid != _pid:
            raise _forked(self._pid)

    def _map_range(self, fd: int) -> tuple[int, int]:
        """Where the data file ``fd`` is mapped: the core's map and the address space it
        keeps past it, where it grows in place (else see _common.map_range)."""
        if HAVE_CHECK:
            lo = int(lib.mdbpy_get_mapaddr(self._env))
            if lo:
                return lo, lo + int(lib.mdbpy_get_mapspan(self._env))
        return _common.map_range(fd)

    def _enter(self) -> None:
        # counted before the check: close() waits for calls in flight
        self._active += 1
        if not self._valid or self._pid != _pid:
            self._active -= 1
            self._check()

    def _leave(self) -> None:
        self._active -= 1

    def _block(self) -> None:
        """Stop new calls (with _valid False) and wait for the slow paths' in flight; the
        fast paths' (counted on their transactions, see helpers.h) are waited for by the
        ends of the transactions that follow (_end_all_txns)."""
        lib.mdbpy_close(self._st, 0)
        while self._active:
            time.sleep(0.001)

    def _out(self, buffers: bool, val: Any) -> Any:
        """A record's key or value (an mdbpy_val) as bytes, or with buffers a memoryview."""
        if not buffers:
            return _unpack(val.mv_data, val.mv_size)
        size = val.mv_size
        data = val.mv_data
        addr = int(ffi.cast("uintptr_t", data))
        lo, hi = self._map
        keeper = self._keeper
        if keeper is None or not lo or addr < lo or addr + size > hi:
            return memoryview(_unpack(data, size))
        if size > 8192:  # fault multi-page values in with the GIL released
            lib.mdbpy_prefault(data, size)
        keeper.exports += 1
        p = ffi.gc(ffi.cast("char *", data), _release_export(keeper))
        return memoryview(ffi.buffer(p, size)).toreadonly()

    # -- lifetime
    def close(self) -> None:
        """Close the environment, aborting its transactions. Idempotent."""
        if not self._valid:
            return
        if self._pid != _pid:
            self._valid = False
            if self._keeper is not None:
                self._keeper.env = None
                self._keeper.reg_key = None
            self._keeper = None
            self._env = None
            return
        self._valid = False  # new calls fail from here on
        for t in list(self._txns):  # and no cursor answers from its cached record
            t._wgen += 1
        me = _thread_id()
        if self._write_txns and self._writer == me:
            for t in list(self._txns):  # release the writer lock others may wait for
                if t._write and t._parent is None and t._valid:
                    t._end(False)
        self._block()
        self._end_all_txns()
        main = getattr(self, "_main_db", None)
        if main is not None:
            main._valid = False
        for db in self._dbs.values():
            db._valid = False
        self._env = None
        self._keeper = None

    def _end_all_txns(self) -> None:
        txns = self._txns
        while txns:
            try:
                top = txns[-1]
            except IndexError:  # (its thread ended it meanwhile)
                break
            while top._parent is not None and top._parent._valid:
                top = top._parent
            if top._valid:
                top._end(False)
            else:  # its thread is ending it, and unlists it once the engine is done
                time.sleep(0.001)
        keeper = self._keeper
        if keeper is not None and keeper.spare is not None:
            lib.mdb_txn_abort(keeper.spare)
            keeper.spare = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> Environment:
        """Return self."""
        self._check()
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        """Close the environment."""
        self.close()
        return False

    # -- API
    @property
    def readonly(self) -> bool:
        """True if opened with readonly=True."""
        return self._readonly

    def begin(
        self,
        db: _Database | None = None,
        parent: Any = None,
        write: bool = False,
        buffers: bool = False,
    ) -> Transaction:
        """Start a transaction (a write one waits for the writer lock)."""
        return Transaction(self, db, parent, write, buffers)

    @_op
    def open_db(
        self,
        key: bytes | None = None,
        txn: Transaction | None = None,
        reverse_key: bool = False,
        dupsort: bool = False,
        create: bool = True,
        integerkey: bool = False,
        integerdup: bool = False,
        dupfixed: bool = False,
    ) -> _Database:
        """Open (and by default create) a named database; None is the main one."""
        self._check()
        flags = _common.db_open_flags(reverse_key, dupsort, integerkey, integerdup, dupfixed)
        if key is None:
            if flags:
                raise ValueError("flags cannot be set on the main database")
            return self._main_db
        if not isinstance(key, bytes):
            raise TypeError(f"open_db() key must be bytes, not {type(key).__name__}")
        if key in self._dbs:
            db = self._dbs[key]
            if db._creator is not None and isinstance(txn, Transaction):
                # made by a txn that has not committed: another txn may not see it (py-lmdb
                # asks the engine, which answers for that txn's snapshot)
                t: Transaction | None = txn
                while t is not None and t is not db._creator:
                    t = t._parent
                if t is None:
                    txn._check()
                    dbip = ffi.new("MDB_dbi *")
                    rc = lib.mdb_dbi_open(
                        txn._txn, key, lib.MDB_CREATE if create and not self._readonly else 0, dbip
                    )
                    if rc:
                        _raise("mdb_dbi_open", rc)
            return db
        ro_create = False
        if create and not self._readonly:
            flags |= lib.MDB_CREATE
        elif create:
            ro_create = True
        own = None
        if txn is not None:
            t = self._callers_txn(txn)
        else:
            write = not self._readonly
            if write and self._write_txns and self._writer == _thread_id():
                raise Error(
                    "open_db() needs a write transaction but this thread already has one: "
                    "pass it as open_db(..., txn=txn)"
                )
            own = t = self._own_txn(write)
        dbip = ffi.new("MDB_dbi *")
        flp = ffi.new("unsigned int *")
        rc = lib.mdb_dbi_open(t, key, flags, dbip)
        if not rc:
            rc = lib.mdb_dbi_flags(t, dbip[0], flp)
        if rc:
            if own is not None:
                lib.mdb_txn_abort(own)
            if rc == lib.MDB_NOTFOUND and ro_create:
                rc = _EACCES
            _raise("mdb_dbi_open", rc)
        if own is not None:
            rc = lib.mdb_txn_commit(own)
            if rc:
                _raise("mdb_txn_commit", rc)
        db = _Database(self, dbip[0], flp[0])
        if txn is not None and txn._write:
            _wrote(txn)
            db._creator = txn
            txn._created_dbs += 1
        self._dbs[key] = db
        return db

    def _callers_txn(self, txn: Any) -> Any:
        """The engine handle of txn=, a live Transaction of this Environment (open_db, dbs)."""
        if not isinstance(txn, Transaction):
            raise TypeError("txn must be a Transaction")
        txn._check()
        if txn.env is not self:
            _raise("mdb_dbi_open", _EINVAL)  # a transaction of another Environment
        return txn._txn

    def _own_txn(self, write: bool) -> Any:
        """A top-level engine transaction of open_db/dbs's own (the caller ends it)."""
        txnp = ffi.new("MDB_txn **")
        rc = lib.mdb_txn_begin(self._env, ffi.NULL, 0 if write else lib.MDB_RDONLY, txnp)
        if rc:
            _raise("mdb_txn_begin", rc)
        return txnp[0]

    @_op
    def dbs(self, txn: Transaction | None = None) -> list[bytes]:
        """Names of the named databases."""
        self._check()
        own = None
        if txn is not None:
            t = self._callers_txn(txn)
        else:
            own = t = self._own_txn(False)
        out: list[bytes] = []
        try:
            curp = ffi.new("MDB_cursor **")
            rc = lib.mdb_cursor_open(t, self._main_db._dbi, curp)
            if rc:
                _raise("mdb_cursor_open", rc)
            k = ffi.new("mdbpy_val *")
            v = ffi.new("mdbpy_val *")
            dbip = ffi.new("MDB_dbi *")
            op = lib.MDB_FIRST
            while lib.mdbpy_cursor_get(curp[0], op, ffi.NULL, 0, ffi.NULL, 0, k, v) == 0:
                op = lib.MDB_NEXT
                name = _unpack(k.mv_data, k.mv_size)
                if v.mv_size != 48 or not name or b"\0" in name:
                    continue
                if name in self._dbs or lib.mdb_dbi_open(t, name, 0, dbip) == 0:
                    out.append(name)
            lib.mdb_cursor_close(curp[0])
        finally:
            if own is not None:
                lib.mdb_txn_abort(own)
        return out

    @_op
    def stat(self) -> dict[str, int]:
        """Statistics of the main database."""
        self._check()
        return _stat_dict(_out_call("mdb_env_stat", "MDB_stat *", lib.mdb_env_stat, self._env))

    @_op
    def info(self) -> dict[str, Any]:
        """Environment information."""
        self._check()
        i = _out_call("mdb_env_info", "MDB_envinfo *", lib.mdb_env_info, self._env)
        age = None
        meta = None
        if HAVE_CHECK:
            # no read txn (flag 2): info() must not take a reader slot; the pages each
            # reader holds back are in readers(detail=True)
            busy = [r for r in self._reader_table(2) if r["txnid"] is not None]
            age = max((r["age"] for r in busy), default=0)
            vals = ffi.new("long long[5]")
            why = ffi.new("const char **")
            rc = lib.mdbpy_meta_status(self._env, vals, why)
            if rc:
                _raise("mdbcore_env_meta_status", rc)
            reason = ffi.string(why[0]).decode() if why[0] != ffi.NULL else None
            meta = _common.meta_dict(*(int(v) for v in vals), reason)
        return _common.info_dict(
            int(ffi.cast("uintptr_t", i.me_mapaddr)),
            i.me_mapsize,
            i.me_last_pgno,
            i.me_last_txnid,
            i.me_maxreaders,
            i.me_numreaders,
            age,
            meta,
        )

    def _reader_table(self, flags: int = 0) -> list[dict[str, Any]]:
        cap = 16
        count = ffi.new("size_t *")
        for _ in range(4):
            vals = ffi.new("unsigned long long[]", 5 * cap)
            rc = lib.mdbpy_reader_info(self._env, vals, cap, count, flags)
            if rc:
                _raise("mdbcore_reader_info_list", rc)
            n = int(count[0])
            if n <= cap:
                row = _common.reader_dict
                return [row(*vals[5 * k : 5 * k + 5]) for k in range(n)]
            cap = n + 16
        raise Error("readers(): the reader table kept changing")

    @_op
    def flags(self) -> dict[str, bool]:
        """The open flags."""
        self._check()
        f = _out_call("mdb_env_get_flags", "unsigned int *", lib.mdb_env_get_flags, self._env)
        return _common.env_flags_dict(f)

    @_op
    def path(self) -> str:
        """The path given at open."""
        self._check()
        p = _out_call("mdb_env_get_path", "const char **", lib.mdb_env_get_path, self._env)
        return os.fsdecode(ffi.string(p))

    @_op
    def max_key_size(self) -> int:
        """Largest key (and dupsort value) size in bytes."""
        self._check()
        return int(lib.mdb_env_get_maxkeysize(self._env))

    @_op
    def max_readers(self) -> int:
        """Size of the reader table."""
        self._check()
        fn = lib.mdb_env_get_maxreaders
        return int(_out_call("mdb_env_get_maxreaders", "unsigned int *", fn, self._env))

    @_op
    def readers(self, detail: bool = False) -> Any:
        """The reader table, as text (mdb_reader_list's), or with detail=True a list of
        dicts: pid, thread, txnid (None when idle), age (txns committed since the
        snapshot) and pages_held (freed pages it keeps from reuse)."""
        self._check()
        if detail:
            if not HAVE_CHECK:
                raise Error(
                    "env.readers(detail=True) needs the mdb core "
                    "(this build links the system liblmdb)"
                )
            return self._reader_table()
        del _reader_lines[:]
        rc = lib.mdb_reader_list(self._env, lib._mdbpy_reader_cb, ffi.NULL)
        text = "".join(_reader_lines)
        del _reader_lines[:]
        if rc < 0:
            _raise("mdb_reader_list", rc)
        return text

    @_op
    def reader_check(self) -> int:
        """Clear stale reader slots; returns how many were cleared."""
        self._check()
        return int(_out_call("mdb_reader_check", "int *", lib.mdb_reader_check, self._env))

    @_op
    def sync(self, force: bool = False) -> None:
        """Flush the data buffers to disk."""
        self._check()
        rc = lib.mdb_env_sync(self._env, bool(force))
        if rc:
            _raise("mdb_env_sync", rc)

    def _copy(self, name: str, fn: Any, dest: Callable[[], Any], compact: bool, txn: Any) -> None:
        """copy() and copyfd(): fn (mdb_env_copy2 / mdb_env_copyfd2) to dest(), which
        converts the argument after the checks, as py-lmdb's order has it."""
        if txn is not None:
            raise TypeError(f"{name}(txn=) needs an engine with mdb_env_copy3; not supported")
        self._check()
        rc = fn(self._env, dest(), lib.MDB_CP_COMPACT if compact else 0)
        if rc:
            _raise(fn.__name__, rc)

    @_op
    def copy(self, path: Any, compact: bool = False, txn: Any = None) -> None:
        """Copy the environment into directory ``path``."""
        self._copy("copy", lib.mdb_env_copy2, lambda: os.fsencode(path), compact, txn)

    @_op
    def copyfd(self, fd: int, compact: bool = False, txn: Any = None) -> None:
        """Copy the environment to file descriptor ``fd``."""
        self._copy("copyfd", lib.mdb_env_copyfd2, lambda: fd, compact, txn)

    def set_mapsize(self, map_size: int) -> None:
        """Resize the map; refused while a write txn or buffers=True values are alive."""
        # py-lmdb's order: a closed environment, then the argument, then a live writer
        self._check()
        _common.check_mapsize(map_size)
        assert self._keeper is not None
        if self._keeper.exports > 0:
            raise Error(
                f"set_mapsize() refused: {self._keeper.exports} buffers=True value(s) still "
                "point into the current map; release them (del / memoryview.release()) first"
            )
        if self._write_txns:
            raise Error("Cannot set_mapsize while a write transaction is active")  # py-lmdb's
        self._valid = False  # no new calls while the map moves
        try:
            self._block()
            self._end_all_txns()
            rc = lib.mdb_env_set_mapsize(self._env, map_size)
            if rc:
                _raise("mdb_env_set_mapsize", rc)
            fdp = ffi.new("mdb_filehandle_t *")
            if lib.mdb_env_get_fd(self._env, fdp) == 0:
                self._map = self._map_range(fdp[0])
        finally:
            self._valid = True
            lib.mdbpy_open(self._st)

    @_op
    def lib_version(self) -> tuple[int, int, int]:
        """(major, minor, patch) of the engine this environment uses."""
        self._check()
        return (lib.MDB_VERSION_MAJOR, lib.MDB_VERSION_MINOR, lib.MDB_VERSION_PATCH)

    def _core_walk(self, what: str, run: Any, call: str) -> tuple[Any, int]:
        """run(env, &rc) of a walk only the mdb core has (what: the error's opening words):
        (its report, rc); a NULL report raises call's error."""
        self._check()
        if not HAVE_CHECK:
            raise Error(f"{what} needs the mdb core (this build links the system liblmdb)")
        rcp = ffi.new("int *")
        rep = run(self._env, rcp)
        if rep == ffi.NULL:
            _raise(call, rcp[0])
        return rep, int(rcp[0])

    @_op
    def check(self) -> dict[str, Any]:
        """Run the mdb core's structural checker (mdb core builds only)."""
        rep, rc = self._core_walk(
            "env.check(): the structural checker", lib.mdbpy_check_run, "mdbcore_check_env"
        )
        try:
            if rc and rc != -30796:  # MDB_CORRUPTED: problems found, report filled
                _raise("mdbcore_check_env", rc)
            out: dict[str, Any] = {"ok": rc == 0}
            num = ffi.new("unsigned long long *")
            for i, name in enumerate(_common.CHECK_NUMS):
                lib.mdbpy_check_num(rep, i, num)
                out[name] = int(num[0])
            pg = ffi.new("unsigned long long *")
            code = ffi.new("int *")
            dbn = ffi.new("const char **")
            msg = ffi.new("const char **")
            out["problems"] = []
            for i in range(lib.mdbpy_check_nproblems(rep)):
                lib.mdbpy_check_problem(rep, i, pg, code, dbn, msg)
                out["problems"].append(
                    {
                        "pgno": int(pg[0]),
                        "code": int(code[0]),
                        "db": ffi.string(dbn[0]).decode("utf-8", "replace"),
                        "msg": ffi.string(msg[0]).decode("utf-8", "replace"),
                    }
                )
            vals = ffi.new("unsigned long long[5]")
            out["dbs"] = []
            for i in range(lib.mdbpy_check_ndbs(rep)):
                lib.mdbpy_check_db(rep, i, dbn, vals)
                out["dbs"].append(
                    {
                        "name": ffi.string(dbn[0]).decode("utf-8", "replace"),
                        "depth": int(vals[0]),
                        "entries": int(vals[1]),
                        "branch_pages": int(vals[2]),
                        "leaf_pages": int(vals[3]),
                        "overflow_pages": int(vals[4]),
                    }
                )
            del _reader_lines[:]
            lib.mdbpy_check_text(rep, lib._mdbpy_reader_cb, ffi.NULL)
            out["text"] = "".join(_reader_lines)
            del _reader_lines[:]
            return out
        finally:
            lib.mdbpy_check_free(rep)

    @_op
    def freelist(self) -> dict[str, Any]:
        """The free list of the current snapshot, read by the mdb core's checker walker."""
        fl, rc = self._core_walk(
            "env.freelist(): reading the free list", lib.mdbpy_freelist_run, "mdbcore_freelist_env"
        )
        try:
            if rc:  # MDB_CORRUPTED: the list holds the first problem
                pg = ffi.new("unsigned long long *")
                msg = ffi.new("const char **")
                lib.mdbpy_freelist_bad(fl, pg, msg)
                raise _common.freelist_corrupted(
                    int(pg[0]), ffi.string(msg[0]).decode("utf-8", "replace")
                )
            vals = ffi.new("unsigned long long[5]")
            lib.mdbpy_freelist_nums(fl, vals)
            txnid = ffi.new("unsigned long long *")
            npages = ffi.new("size_t *")
            pages = ffi.new("const unsigned long long **")
            txns = []
            for i in range(lib.mdbpy_freelist_nrecords(fl)):
                lib.mdbpy_freelist_record(fl, i, txnid, npages, pages)
                txns.append((int(txnid[0]), ffi.unpack(pages[0], int(npages[0]))))
            return _common.freelist_dict(tuple(vals), txns)
        finally:
            lib.mdbpy_freelist_free(fl)


# (at the end: transaction.py imports this module's Environment)
from .transaction import Transaction  # noqa: E402
