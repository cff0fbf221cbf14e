"""corelib -- the mdb core's test library (build/libmdbcore-test.so) driven through cffi.

What this file owns
    The cdef of the mdbcore_* extras the crash and snapshot tests call (fault seam, crash
    images, structural checker, the test-only mutation switch), on top of the LMDB API cdef
    of tests/support/lmdbffi.py, and small helpers built on them:
      * `check_image(path)`  -- the structural checker on the raw bytes of a data file
        (mdbcore_snapshot_from_metas + mdbcore_check_snapshot): it never trusts a byte, so
        it is safe on a damaged image, unlike opening it with the engine;
      * `check_env(env)`     -- mdbcore_check_env on an open environment;
      * `read_all(env)`      -- every named database's pairs, through the LMDB API;
      * `set_mutation(bits)` -- the engine's deliberate-bug switch (see below).

Which library
    MDB_TEST_CORELIB, else build/libmdbcore-test.so of the repository (`make lib`).  This
    is the core as built from src/mdbcore now; the installed Python package may be older.
    Only one engine per environment per process: the tests that load this library never
    open the same environment through the `mdb` package in the same process.

Mutation switches (test-only, deliberately broken engine behaviour)
    * MUT_IGNORE_READERS: the writer's oldest-reader scan ignores reader slots, so pages
      freed by txns newer than a live reader's snapshot are reused under it.  Needs the hook
      `mdbcore_set_mutation` in the engine (mutation.c); `have_mutation()` says if it is there.
    * The fault-seam action "skip" (MDBCORE_FAULT / mdbcore_fault_arm_spec
      "fdatasync:1+:skip"): fdatasync returns success without reaching the OS and is logged
      as a failed call, i.e. it is no durability barrier in crash images: the meta page can
      reach the disk before the data pages.
"""

import os

from cffi import FFI

from support import lmdbffi as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CORE_CDEF = r"""
typedef struct mdbcore_fault_entry {
    int kind; int fd; int dsync; int result;
    uint64_t dev, ino; uint64_t offset; size_t len; const void *data; void *addr;
} mdbcore_fault_entry;
int mdbcore_fault_install(void);
int mdbcore_fault_fail_nth(int kind, unsigned long n, int err);
int mdbcore_fault_kill_nth(int kind, unsigned long n, int after);
int mdbcore_fault_arm_spec(const char *spec);
unsigned long mdbcore_fault_calls(int kind);
void mdbcore_fault_record_start(void);
void mdbcore_fault_record_stop(void);
size_t mdbcore_fault_log_count(void);
int mdbcore_fault_log_entry(size_t i, mdbcore_fault_entry *out);
void mdbcore_fault_reset(void);
int mdbcore_fault_file_id(const char *path, uint64_t *dev, uint64_t *ino);
int mdbcore_fault_crash_image(int out_fd, uint64_t dev, uint64_t ino, size_t upto, int mode,
                              uint64_t seed, size_t grain, size_t *kept, size_t *dropped);

typedef struct db_record {
    uint32_t pad; uint16_t flags; uint16_t depth;
    uint64_t branch_pages, leaf_pages, overflow_pages, entries, root;
} db_record;
typedef struct mdbcore_snapshot {
    const uint8_t *map; size_t map_len; uint64_t file_size; unsigned psize;
    uint64_t next_pgno; uint64_t txnid; db_record dbs[2];
    const void *cmps; size_t ncmps; unsigned flags; unsigned max_problems;
} mdbcore_snapshot;
int mdbcore_snapshot_from_metas(mdbcore_snapshot *in, int which);
int mdbcore_check_snapshot(const mdbcore_snapshot *in, void *rep);
int mdbcore_check_env(MDB_env *env, void *rep);
int mdbcore_env_set_dirty_limit(MDB_env *env, size_t pages);
uint64_t mdbcore_env_spilled_pages(MDB_env *env);
void mdbcore_check_report_free(void *rep);
int mdbcore_check_report_print(const void *rep, MDB_msg_func *func, void *ctx);
"""
MUTATION_CDEF = "int mdbcore_set_mutation(int bits);"

# enum mdbcore_fault_kind
PWRITE, PWRITEV, FSYNC, FDATASYNC, FTRUNCATE, MSYNC = 3, 4, 5, 6, 7, 11
WRITE, SYNC, ANY = 100, 101, 102
# enum mdbcore_crash_mode
DROP_UNSYNCED, KEEP_ALL, SUBSET, TORN = 0, 1, 2, 3
MODE_NAMES = {DROP_UNSYNCED: "drop", KEEP_ALL: "keep", SUBSET: "subset", TORN: "torn"}
# Mutation bits (mdbcore.h)
MUT_IGNORE_READERS = 1

REPORT_BYTES = 8192  # more than sizeof(mdbcore_check_report); only freed and printed here


def lib_path():
    return os.environ.get("MDB_TEST_CORELIB") or os.path.join(ROOT, "build", "libmdbcore-test.so")


class CoreLib(F.Lib):
    """LMDB API + mdbcore_* of libmdbcore-test.so (one per process: the seam is global)."""

    def __init__(self, path):
        self.path = path
        self.ffi = FFI()
        self.ffi.cdef(F.CDEF + CORE_CDEF)
        self.c = self.ffi.dlopen(path)
        mut = FFI()
        mut.cdef(MUTATION_CDEF)
        mlib = mut.dlopen(path)
        try:
            self._set_mutation = mlib.mdbcore_set_mutation
        except AttributeError:
            self._set_mutation = None
        self._mut_keep = (mut, mlib)

    # ---- mutation switch
    def have_mutation(self):
        return self._set_mutation is not None

    def set_mutation(self, bits):
        if self._set_mutation is None:
            raise RuntimeError("engine has no mdbcore_set_mutation hook")
        return self._set_mutation(bits)

    def have_skip_action(self):
        """Does the fault seam know the "skip" action (non-barrier fdatasync)?"""
        rc = self.c.mdbcore_fault_arm_spec(b"fdatasync:1000000000:skip")
        self.c.mdbcore_fault_reset()
        return rc == 0

    # ---- checker
    def _report_text(self, rep):
        out = []

        @self.ffi.callback("int(const char *, void *)")
        def sink(msg, ctx):
            out.append(self.ffi.string(msg).decode("utf-8", "replace"))
            return 0

        self.c.mdbcore_check_report_print(rep, sink, self.ffi.NULL)
        return "".join(out)

    def check_env(self, env):
        """(rc, report text): rc 0 = clean, MDB_CORRUPTED = problems."""
        rep = self.ffi.new("char[]", REPORT_BYTES)
        rc = self.c.mdbcore_check_env(env.env, rep)
        text = self._report_text(rep) if rc else ""
        self.c.mdbcore_check_report_free(rep)
        return rc, text

    def check_image(self, data):
        """Check a data-file image given as bytes: (rc, txnid, text).  rc: 0 clean,
        MDB_CORRUPTED problems, MDB_INVALID / MDB_VERSION_MISMATCH no usable meta."""
        if not data:
            return F.INVALID, 0, "empty file"
        buf = self.ffi.from_buffer(data)
        snap = self.ffi.new("mdbcore_snapshot *")
        snap.map = self.ffi.cast("const uint8_t *", buf)
        snap.map_len = len(data)
        snap.file_size = len(data)
        rc = self.c.mdbcore_snapshot_from_metas(snap, -1)
        if rc:
            return rc, 0, "no valid meta"
        rep = self.ffi.new("char[]", REPORT_BYTES)
        rc = self.c.mdbcore_check_snapshot(snap, rep)
        text = self._report_text(rep) if rc else ""
        self.c.mdbcore_check_report_free(rep)
        return rc, snap.txnid, text

    def file_id(self, path):
        dev = self.ffi.new("uint64_t *")
        ino = self.ffi.new("uint64_t *")
        self.check(self.c.mdbcore_fault_file_id(os.fsencode(path), dev, ino), "file_id")
        return dev[0], ino[0]

    def log_entries(self):
        e = self.ffi.new("mdbcore_fault_entry *")
        out = []
        for i in range(self.c.mdbcore_fault_log_count()):
            self.c.mdbcore_fault_log_entry(i, e)
            out.append((e.kind, e.result, e.dsync, e.dev, e.ino, e.offset, e.len))
        return out


_LIB = None


def load():
    global _LIB
    if _LIB is None:
        p = lib_path()
        if not os.path.exists(p):
            raise RuntimeError(f"{p} does not exist: run `make lib`")
        _LIB = CoreLib(p)
    return _LIB


def read_all(lib, env, dupsort_names=()):
    """{name: tuple(sorted pairs)} of every named DB (main DB holds only DB records here)."""
    out = {}
    with env.begin() as t:
        main = t.open_db(None)
        names = [k for k, _ in t.items(main)]
        for name in names:
            dbi = t.open_db(name)
            out[name] = tuple(t.items(dbi))
    return out
