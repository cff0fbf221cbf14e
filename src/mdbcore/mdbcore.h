/*
 * mdbcore.h -- mdb's extras beyond the LMDB API (layer L0 header).
 *
 *  1. The fault seam (os_fault.c): fail the Nth OS call of a kind, record every write and
 *     sync, and build the disk image a power loss could leave.  Inert until armed.
 *  2. The structural checker (walk.c, check.c): verifies a snapshot of data.mdb from its
 *     raw bytes -- page accounting, key order, tree shape, record counts -- and returns a
 *     structured report.  It never trusts a byte of the file, so it can run on fuzzed input.
 *     2b. The free list of a snapshot, read by the same walker.
 *
 * None of these names is exported from libmdbcore.so (exports.map lists only LMDB's 56
 * functions).  Tests link build/libmdbcore.a, or build/libmdbcore-test.so whose version
 * script (exports-test.map) also exports mdbcore_*.
 */
#ifndef MDBCORE_MDBCORE_H
#define MDBCORE_MDBCORE_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "lmdb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================================
 * 1. Fault seam
 * ==================================================================================== */

/* Kinds of OS call, one per os_ops entry, plus two groups. */
enum mdbcore_fault_kind {
    MDBCORE_FAULT_OPEN = 0,
    MDBCORE_FAULT_CLOSE,
    MDBCORE_FAULT_PREAD,
    MDBCORE_FAULT_PWRITE,
    MDBCORE_FAULT_PWRITEV,
    MDBCORE_FAULT_FSYNC,
    MDBCORE_FAULT_FDATASYNC,
    MDBCORE_FAULT_FTRUNCATE,
    MDBCORE_FAULT_FSIZE,
    MDBCORE_FAULT_MMAP,
    MDBCORE_FAULT_MUNMAP,
    MDBCORE_FAULT_MSYNC,
    MDBCORE_FAULT_MADVISE,
    MDBCORE_FAULT_NKINDS,
    /* Groups, accepted by fail_nth/fail_from/calls: */
    MDBCORE_FAULT_WRITE = 100, /* pwrite or pwritev */
    MDBCORE_FAULT_SYNC = 101,  /* fsync, fdatasync or msync */
    MDBCORE_FAULT_ANY = 102    /* every call */
};

/* Route os_current through the fault table (idempotent).  Arming or recording installs it
 * implicitly; mdbcore_fault_reset() restores the table that was in force before. */
int mdbcore_fault_install(void);
/* Make the n-th call (1 = the next one) of `kind`, counted from now, fail with `err`
 * (a positive errno) without reaching the OS.  Up to 16 rules may be armed at once. */
int mdbcore_fault_fail_nth(int kind, unsigned long n, int err);
/* Make the n-th pwrite (counted from now) write only its first `bytes` bytes to the file,
 * then fail with `err` (a positive errno): a write cut short by an I/O error.  The bytes
 * that reached the file are logged as a write of that length. */
int mdbcore_fault_short_nth(unsigned long n, size_t bytes, int err);
/* Same, but the n-th call and every later one fail ("the disk died"). */
int mdbcore_fault_fail_from(int kind, unsigned long n, int err);
/* Kill the process with SIGKILL at the n-th call of `kind`: before making the call
 * (after = 0) or right after it returned and was logged (after = 1).  For crash tests that
 * run the engine in a child process. */
int mdbcore_fault_kill_nth(int kind, unsigned long n, int after);
/* Arm rules from text, the syntax of the MDBCORE_FAULT environment variable, which the
 * test library (libmdbcore-test.so, not the production one) reads at load time:
 *   KIND:N:ACTION[,KIND:N:ACTION...]
 *   KIND   open close pread pwrite pwritev fsync fdatasync ftruncate fsize mmap munmap
 *          msync madvise | write (pwrite+pwritev) | sync (fsync+fdatasync+msync) | any
 *   N      the n-th call from arming (1 = next); "N+" = that call and every later one
 *   ACTION an errno name (EIO ENOSPC EDQUOT ENOMEM EACCES EPERM EROFS EFBIG EAGAIN EBADF
 *          EINVAL ENOENT) or number, or "kill" / "kill-after" (SIGKILL before/after the call),
 *          or "skip" (sync kinds only; a test-only mutation: the sync returns success without
 *          reaching the OS and is logged as failed, so it is no durability barrier)
 * e.g. MDBCORE_FAULT="fdatasync:2:EIO"  or  MDBCORE_FAULT="write:3:kill-after".
 * Returns 0 or EINVAL (rules before the malformed item stay armed). */
int mdbcore_fault_arm_spec(const char *spec);
/* Calls of `kind` seen by the seam since it was installed or last reset. */
unsigned long mdbcore_fault_calls(int kind);
/* Number of calls failed on purpose so far. */
unsigned long mdbcore_fault_injected(void);

/* The write/sync log. */
void mdbcore_fault_record_start(void); /* clears the log, then records */
void mdbcore_fault_record_stop(void);

typedef struct mdbcore_fault_entry {
    int kind;         /* PWRITE, PWRITEV, FSYNC, FDATASYNC, MSYNC, FTRUNCATE, MMAP, MUNMAP */
    int fd;           /* -1 for msync/munmap */
    int dsync;        /* the fd was opened O_DSYNC/O_SYNC: the write was durable on return */
    int result;       /* 0 or the errno the call returned */
    uint64_t dev, ino;/* file identity (0 when unknown); msync: of the mapping's file */
    uint64_t offset;  /* write: file offset; ftruncate: new length; mmap/msync: file offset */
    size_t len;       /* bytes written / synced / mapped */
    const void *data; /* write payload (len bytes), owned by the log; NULL otherwise */
    void *addr;       /* mmap/munmap/msync address */
} mdbcore_fault_entry;

size_t mdbcore_fault_log_count(void);
/* Copy entry i into *out (its data pointer stays valid until the log is cleared).
 * Returns 0, or ERANGE when i is out of range. */
int mdbcore_fault_log_entry(size_t i, mdbcore_fault_entry *out);
/* Disarm every rule, stop recording, free the log, zero the counters, uninstall. */
void mdbcore_fault_reset(void);

/* Identity of the file at `path` (for the crash-image filter). */
int mdbcore_fault_file_id(const char *path, uint64_t *dev, uint64_t *ino);

/* What a power loss keeps of the writes issued after the last durability point. */
enum mdbcore_crash_mode {
    MDBCORE_CRASH_DROP_UNSYNCED = 0, /* none of them */
    MDBCORE_CRASH_KEEP_ALL = 1,      /* all of them (the OS flushed everything) */
    MDBCORE_CRASH_SUBSET = 2,        /* each whole write kept or lost at random (reordering) */
    MDBCORE_CRASH_TORN = 3           /* each `grain`-byte piece of each write kept or lost */
};

/* Build a crash image of one file.  `out_fd` must hold the file's content as it was when
 * recording started (the caller copies it); this applies log entries [0, upto) that
 * concern file (dev, ino):
 *  - every write issued before the last successful fsync/fdatasync/msync of that file in
 *    the window, and every write through an O_DSYNC descriptor, is applied as issued;
 *  - later writes are applied according to `mode`, using `seed` for the random choices
 *    and `grain` (e.g. the page size; 0 = 4096) for MDBCORE_CRASH_TORN;
 *  - ftruncate entries are applied in order.
 * Writes made through a writable map (WRITEMAP) are not seen by the log.
 * Returns 0 or an errno.  *kept / *dropped (may be NULL) count the unsynced writes. */
int mdbcore_fault_crash_image(int out_fd, uint64_t dev, uint64_t ino, size_t upto, int mode,
                              uint64_t seed, size_t grain, size_t *kept, size_t *dropped);

/* ====================================================================================
 * 2. Structural checker
 * ==================================================================================== */

/* A caller-supplied comparator for one database (NULL name = the main DB). */
typedef struct mdbcore_check_cmp {
    const char *name;   /* named-DB name, or NULL for MAIN_DBI */
    size_t name_len;    /* bytes of name; 0 = strlen(name) */
    MDB_cmp_func *cmp;  /* key comparator, NULL = default from the DB flags */
    MDB_cmp_func *dcmp; /* duplicate comparator, NULL = default from the DB flags */
} mdbcore_check_cmp;

/* The input: raw bytes of one snapshot. */
typedef struct mdbcore_snapshot {
    const uint8_t *map;  /* page 0 of the file (mapped or read into memory) */
    size_t map_len;      /* readable bytes at map */
    uint64_t file_size;  /* bytes in the file; pages past it are holes */
    unsigned psize;      /* page size */
    pgno_t next_pgno;    /* last_pg + 1 of the chosen meta */
    txnid_t txnid;       /* the chosen meta's txnid (informational) */
    db_record dbs[CORE_DBS]; /* FREE_DBI and MAIN_DBI records of the chosen meta */
    const mdbcore_check_cmp *cmps; /* optional comparators per DB */
    size_t ncmps;
    unsigned flags;      /* MDBCORE_CHECK_* */
    unsigned max_problems; /* 0 = 1000; further problems are only counted */
} mdbcore_snapshot;

#define MDBCORE_CHECK_NO_KEYS 0x1u  /* skip key-order checks (faster) */
#define MDBCORE_CHECK_NO_METAS 0x2u /* do not look at pages 0/1 (the caller vouches) */
/* DUPSORT DBs: demand record pages == own pages + dup sub-DB pages.  Off by default because
 * LMDB itself does not keep that (see check.c); by default record pages >= own pages. */
#define MDBCORE_CHECK_DUP_PAGES_EXACT 0x4u
/* Do not look at meta page 0 / 1: the environment found it damaged at open and does not
 * use it (mdbcore_check_txn sets these from the env; see mdbcore_env_meta_status). */
#define MDBCORE_CHECK_SKIP_META0 0x8u
#define MDBCORE_CHECK_SKIP_META1 0x10u

/* Problem classes. */
enum mdbcore_problem_code {
    MDBCORE_P_BOUNDS = 1,  /* pgno/offset/size outside the page, map or file */
    MDBCORE_P_PAGE,        /* bad page header: flags, pgno field, lower/upper */
    MDBCORE_P_NODE,        /* bad node: flags, sizes, sub-page, sub-DB record */
    MDBCORE_P_ORDER,       /* keys out of order inside a page */
    MDBCORE_P_RANGE,       /* key outside the separators of the parent */
    MDBCORE_P_DEPTH,       /* leaves at different depths, or depth != the record's */
    MDBCORE_P_COUNT,       /* page or entry counts differ from the db_record */
    MDBCORE_P_TWICE,       /* page reached twice (two parents, two trees, or a cycle) */
    MDBCORE_P_LEAK,        /* page neither reachable nor free */
    MDBCORE_P_FREE,        /* free-list problem: bad record, page listed twice, free+used */
    MDBCORE_P_META         /* bad meta page */
};

typedef struct mdbcore_check_problem {
    pgno_t pgno;     /* the page concerned, or P_INVALID */
    int code;        /* MDBCORE_P_* */
    char db[64];     /* "@free", "@main", the DB name (truncated, non-printables as '?'),
                        with "/dup" appended inside a duplicate sub-tree */
    char msg[160];
} mdbcore_check_problem;

typedef struct mdbcore_check_db {
    char *name;          /* malloc'd, NUL-terminated: "@free", "@main" or the DB name */
    size_t name_len;     /* raw name length (named DBs) */
    db_record rec;       /* the record as stored */
    unsigned depth;      /* measured depth (0 when empty) */
    uint64_t branch_pages, leaf_pages, overflow_pages, entries; /* measured */
    uint64_t dup_subpages;   /* DUPSORT: keys whose dups live in a sub-page */
    uint64_t dup_subdbs;     /* DUPSORT: keys whose dups live in a sub-DB */
    uint64_t dup_pages;      /* pages of all dup sub-DBs (counted in their own records) */
} mdbcore_check_db;

typedef struct mdbcore_check_report {
    unsigned psize;
    pgno_t next_pgno;
    txnid_t txnid;
    /* Page accounting over [0, next_pgno). */
    uint64_t meta_pages;      /* 2 */
    uint64_t branch_pages;    /* every tree, including dup sub-DBs */
    uint64_t leaf_pages;      /* including LEAF2 */
    uint64_t leaf2_pages;
    uint64_t overflow_pages;  /* pages inside overflow runs */
    uint64_t overflow_runs;
    uint64_t reachable_pages; /* meta + branch + leaf + overflow */
    uint64_t free_pages;      /* distinct pages listed in the free DB */
    uint64_t free_records;
    uint64_t leaked_pages;    /* neither reachable nor free */
    uint64_t twice_pages;     /* reached more than once */
    uint64_t free_and_used;   /* listed free and reachable */
    pgno_t *leaked;           /* first leaked page numbers (up to 1000), malloc'd */
    size_t nleaked;
    /* Per database: [0] free, [1] main, then named DBs in key order. */
    mdbcore_check_db *dbs;
    size_t ndbs;
    /* Problems. */
    mdbcore_check_problem *problems;
    size_t nproblems;         /* stored */
    uint64_t problems_total;  /* found (>= nproblems) */
} mdbcore_check_report;

/* Check one snapshot.  Returns 0 when no problem was found, MDB_CORRUPTED when problems
 * were found (see rep->problems), or an errno (EINVAL, ENOMEM) when the check could not
 * run.  The report is filled in every case and must be released with
 * mdbcore_check_report_free. */
int mdbcore_check_snapshot(const mdbcore_snapshot *in, mdbcore_check_report *rep);
/* Check the snapshot seen by `txn` (a read txn, or a write txn before it wrote anything:
 * a write txn with dirty pages gets MDB_BAD_TXN).  Comparators set with mdb_set_compare /
 * mdb_set_dupsort on handles open in the txn are used. */
int mdbcore_check_txn(MDB_txn *txn, mdbcore_check_report *rep);
/* Begin a read txn on `env`, check it, abort it.  Comparators of the env's open handles
 * are used.  Like any mdb_txn_begin, it fails with MDB_BAD_RSLOT if the calling thread
 * already has a read txn open on this env (unless the env uses MDB_NOTLS). */
int mdbcore_check_env(MDB_env *env, mdbcore_check_report *rep);
void mdbcore_check_report_free(mdbcore_check_report *rep);
/* Print the report in human form (summary, per-DB table, problems) through `func`. */
int mdbcore_check_report_print(const mdbcore_check_report *rep, MDB_msg_func *func, void *ctx);

/* Pick the newest valid meta of a data file image and fill in->psize, next_pgno, txnid and
 * dbs (map, map_len and file_size must already be set).  `which` (-1 = newest) forces meta
 * 0 or 1.  Returns 0, MDB_INVALID (no valid meta) or MDB_VERSION_MISMATCH. */
int mdbcore_snapshot_from_metas(mdbcore_snapshot *in, int which);

/* ====================================================================================
 * 2b. The free list of a snapshot, read with the checker's walker (check.c): the free DB's
 *    record as stored and, per record in key order, the txn that freed the pages and the
 *    page numbers as stored (descending).  Like the checker it never trusts the file: a
 *    free-DB page, node or record that does not hold up stops the read with MDB_CORRUPTED
 *    and the first such problem in bad_pgno / bad_msg.  Only the free DB is walked.
 * ==================================================================================== */
typedef struct mdbcore_free_record {
    txnid_t txnid;  /* the record's key: the txn that freed these pages */
    size_t npages;
    pgno_t *pages;  /* npages page numbers as stored; points into the list's one buffer */
} mdbcore_free_record;

typedef struct mdbcore_freelist {
    txnid_t txnid;             /* the snapshot's txnid */
    db_record rec;             /* FREE_DBI's record (depth, page counts, entries) as stored */
    uint64_t free_pages;       /* sum of npages over the records */
    mdbcore_free_record *records; /* in key order, malloc'd */
    size_t nrecords;
    pgno_t *pages;             /* one malloc'd buffer behind every record's pages */
    pgno_t bad_pgno;           /* MDB_CORRUPTED: the page of the first problem, or P_INVALID */
    char bad_msg[160];         /* MDB_CORRUPTED: what was wrong, else "" */
} mdbcore_freelist;

/* Read the free list of a snapshot (map, map_len, file_size, psize, next_pgno, txnid and
 * dbs are used).  Returns 0, MDB_CORRUPTED (the free DB does not hold up; *out has the
 * problem, no records), EINVAL or ENOMEM.  *out must be released with mdbcore_freelist_free
 * in every case. */
int mdbcore_freelist_snapshot(const mdbcore_snapshot *in, mdbcore_freelist *out);
/* The free list of the snapshot seen by `txn` (a read txn, or a write txn before it wrote
 * anything: a write txn with dirty pages gets MDB_BAD_TXN). */
int mdbcore_freelist_txn(MDB_txn *txn, mdbcore_freelist *out);
/* Begin a read txn on `env`, read its free list, abort it (MDB_BAD_RSLOT as for
 * mdbcore_check_env). */
int mdbcore_freelist_env(MDB_env *env, mdbcore_freelist *out);
void mdbcore_freelist_free(mdbcore_freelist *fl);

/* ====================================================================================
 * 3. Mutation switch (test-only): deliberately broken behaviour, to prove that the crash
 *    and snapshot tests can fail (tests/crash/test_mutations.py).  0 = off (always, unless
 *    a test sets it).  Returns the previous bits.
 * ==================================================================================== */
#define MDBCORE_MUT_IGNORE_READERS 0x1 /* readers_oldest ignores reader slots */
#define MDBCORE_MUT_NO_HEAL 0x2        /* the writer does not clear dead readers' slots */
extern int mdbcore_mutation;
int mdbcore_set_mutation(int bits);

/* ====================================================================================
 * 4. Dirty-page limit (test-only knob, spill.c): a write txn keeps at most `pages` dirty
 *    pages in memory (LMDB's 131,071 by default) and writes some out early ("spills")
 *    before it would pass that.  Lowering it makes small tests spill.  256..131071, else
 *    EINVAL; set it before the first write txn.  Both count dirty-list entries (an
 *    overflow run is one).
 * ==================================================================================== */
int mdbcore_env_set_dirty_limit(MDB_env *env, size_t pages);
/* Pages (list entries) spilled since the env was created. */
uint64_t mdbcore_env_spilled_pages(MDB_env *env);

/* ====================================================================================
 * 4b. A map that grows by itself (datafile.c).  Set before mdb_env_open: the upper bound
 *    of the map, in bytes (0, the default, turns it off; at most 64 TiB, else EINVAL;
 *    EINVAL after open).  The environment then reserves at least that much address
 *    space at open and maps the file at its start.  When a write txn needs a page past
 *    the map, the map doubles in place (never past the bound) instead of failing with
 *    MDB_MAP_FULL; the new size goes into the meta page at commit.
 *    Every environment of ours, bound or not, follows a map another process grew (ours,
 *    or real LMDB's mdb_env_set_mapsize) at its next txn begin, with no error and no
 *    call: in place within the address space reserved at open, else in a new
 *    reservation, the old map kept until close so no pointer a txn holds goes stale
 *    (FIXEDMAP: only as far as its reservation, then MDB_MAP_RESIZED as in LMDB).  Real
 *    LMDB processes see the enlarged map as LMDB does (MDB_MAP_RESIZED, then
 *    mdb_env_set_mapsize(env, 0)).  mdb_env_info reports the current size.
 *    mdbcore_env_get_mapaddr / get_mapspan: where the map starts now, and the bytes of
 *    address space reserved from there (>= the map size); NULL and 0 before open.  Both
 *    change only when the map moves (past its reservation, or mdb_env_set_mapsize).
 * ==================================================================================== */
int mdbcore_env_set_maxsize(MDB_env *env, size_t bytes);
size_t mdbcore_env_get_maxsize(MDB_env *env);
void *mdbcore_env_get_mapaddr(MDB_env *env);
size_t mdbcore_env_get_mapspan(MDB_env *env);
/* Test knob: the address space to reserve at open (and at each move), instead of the
 *    default policy (16 times the map, 256 GiB to 16 TiB); set before mdb_env_open, else
 *    EINVAL.  A span no larger than the map makes every growth move the map. */
int mdbcore_env_set_reserve(MDB_env *env, size_t bytes);
/* The write map (datafile.c): 1 if this environment's commits copy pages into a writable
 *    shared map of data.mdb instead of writing them with pwrite (a writable environment
 *    without WRITEMAP, on ext4 or tmpfs, data file under half the machine's memory), else
 *    0.  *backed: the pages below which the file is known to have every block (only
 *    those are copied through the map); *copied: pages copied so far.  Either may be
 *    NULL. */
int mdbcore_env_write_map(MDB_env *env, size_t *backed, size_t *copied);

/* ====================================================================================
 * 5. Readers that heal (readers.c, readers_info.c).  A write txn that finds the oldest
 *    snapshot held by another process tests whether that process is alive (the test of
 *    mdb_reader_check) and clears its slots if it died; a process found alive is tested
 *    again at most once a second.  These calls make long readers visible.
 * ==================================================================================== */
typedef struct mdbcore_reader_info {
    uint32_t pid;
    uint64_t tid;
    txnid_t txnid;       /* the snapshot's txnid, (txnid_t)-1 when the slot is idle */
    uint64_t age;        /* txns committed since that snapshot (0 when idle) */
    uint64_t pages_held; /* pages freed since that snapshot that a writer cannot reuse while
                            it lives (free-list records txnid..last_txnid-1; 0 when idle) */
} mdbcore_reader_info;
/* The slots in use, in table order: up to `max` into out[], and their number into *count
 * (which may exceed max).  pages_held needs a look at the free list in a read txn:
 *  - flags 0: in a txn with a slot of its own, so it works while the calling thread holds
 *    a read txn (that slot may raise the table's high-water mark, me_numreaders, by one);
 *  - MDBCORE_RINFO_THREAD_SLOT: in the calling thread's own slot, as mdb_txn_begin; if the
 *    thread holds a read txn already, pages_held is left at UINT64_MAX (unknown);
 *  - MDBCORE_RINFO_NO_PAGES: not at all (pages_held = UINT64_MAX), no txn taken.
 * 0 or an error code. */
#define MDBCORE_RINFO_THREAD_SLOT 0x1u
#define MDBCORE_RINFO_NO_PAGES 0x2u
int mdbcore_reader_info_list(MDB_env *env, mdbcore_reader_info *out, size_t max,
                             size_t *count, unsigned flags);
/* Slots of dead processes cleared by this env's writers, and liveness tests they made. */
uint64_t mdbcore_env_healed_readers(MDB_env *env, uint64_t *checks);

/* ====================================================================================
 * 6. Bulk loading (tree_load.c): build an empty database bottom-up from sorted input.
 * ==================================================================================== */
/* Hands out the next record: returns 0 with key and data set (the bytes need to stay valid
 * only until the next call), MDB_NOTFOUND at the end of the input, or any other value to
 * stop the load with that error. */
typedef int (*mdbcore_next_fn)(void *ctx, MDB_val *key, MDB_val *data);
/* Load the records `next` hands out into database `dbi`, which must be empty, inside write
 * txn `txn`: leaves are packed full in input order, then the branch levels are built, all
 * through the txn's normal page allocation (large loads spill), so the load commits or
 * aborts with the txn.  Keys must be strictly ascending in the database's key order.
 * `flags` must be 0.  Returns 0, or:
 *   EINVAL            the database is not empty (or bad arguments, or a NULL key/data
 *                     pointer with a non-zero size)
 *   MDB_INCOMPATIBLE  a DUPSORT database (not supported)
 *   MDB_KEYEXIST      a key not greater than the one before it (out of order or repeated)
 *   MDB_BAD_VALSIZE   an empty or too long key, or a value over 4 GiB
 *   the error `next` returned
 *   EACCES (read-only txn), MDB_BAD_TXN, MDB_BAD_DBI, or an engine error (MDB_MAP_FULL,
 *                     MDB_TXN_FULL, ENOMEM, EIO...).
 * On every error the database is left empty: the pages the load took are given back to
 * the txn.  After the errors of the first four lines and the callback's own, the txn
 * stays usable (it may commit, with the database empty, or load again); after an engine
 * error it is poisoned as for a failed put (only abort is accepted).  While the load runs,
 * every call on `txn` (or its cursors) from the callback answers MDB_BAD_TXN; an
 * mdb_txn_abort from it takes effect when the load returns (MDB_BAD_TXN; the handle is
 * then freed, as after any abort). */
int mdbcore_bulk_load(MDB_txn *txn, MDB_dbi dbi, mdbcore_next_fn next, void *ctx,
                      unsigned flags);

/* ====================================================================================
 * 7. The meta pages (meta.c).  mdb_env_open judges each meta page on its own (header,
 *    magic, version, page size, a txnid that fits its page, a last page in range, each
 *    tree's root page inside the file with a header that agrees with the record) and opens
 *    from the newest one that holds up.  LMDB 0.9 refuses such a file or trusts the
 *    damaged meta.  The next commit writes over the damaged page, which heals the file; a
 *    read-only environment never writes.  Without a checksum in the format, a damaged meta
 *    whose bytes are still plausible passes (docs/durability.md).
 * ==================================================================================== */
#define MDBCORE_META_DAMAGED 0x1u  /* one meta page failed its checks and is not used */
#define MDBCORE_META_FALLBACK 0x2u /* ... and it was (or may have been) the newer one: the
                                      environment opened an older snapshot than LMDB would */
#define MDBCORE_META_HEALED 0x4u   /* a commit has since rewritten the damaged page */
typedef struct mdbcore_meta_status {
    unsigned flags;             /* MDBCORE_META_* */
    int used_page;              /* 0 or 1: the meta in force */
    txnid_t used_txnid;         /* its txnid */
    int damaged_page;           /* 0 or 1, or -1 when both pages hold up */
    txnid_t damaged_txnid;      /* the txnid the damaged page's bytes claim */
    int damaged_error;          /* MDB_INVALID, MDB_VERSION_MISMATCH or MDB_CORRUPTED */
    const char *damaged_reason; /* what failed, a static English phrase, or NULL */
} mdbcore_meta_status;
/* The state of the meta pages of an open environment: 0 or EINVAL. */
int mdbcore_env_meta_status(MDB_env *env, mdbcore_meta_status *out);

#ifdef __cplusplus
}
#endif
#endif
