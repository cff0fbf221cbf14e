/*
 * objects.h -- the engine's in-memory objects: environment, transaction, cursor and the
 * per-database records.  Layer L6 data definitions, included by every engine file above L1.
 *
 * Ownership: each field's comment names the module allowed to write it.  Readers of a
 * field may live anywhere at or above that module's layer.
 *
 * Invariants kept here:
 *  - A write txn owns env->write_txn and holds the writer mutex from begin to commit/abort.
 *  - A read txn's dbs[] are a private copy of the snapshot's roots; it never allocates.
 *  - A page pointer in a cursor stack points either into the map (clean) or at a dirty
 *    copy owned by the txn's dirty list; never at freed memory.
 */
#ifndef MDBCORE_OBJECTS_H
#define MDBCORE_OBJECTS_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "format.h"
#include "lmdb.h"
#include "readers.h"

typedef page_header page;

/* ---- id lists (idl.c): sorted page-number lists and (pgno, pointer) lists ---- */
/* A pgno list: element 0 is the count, then the page numbers (sorted descending, as on disk). */
typedef pgno_t *pgno_list;
/* A dirty list: element 0's id is the count; entries sorted ascending by pgno. */
typedef struct dirty_entry {
    pgno_t pgno;
    page *pg; /* the dirty copy (a malloc'd page, or the map page under WRITEMAP) */
} dirty_entry;
typedef dirty_entry *dirty_list;

/* ---- per-database metadata shared by all txns of an env (dbi.c writes) ---- */
typedef struct db_info {
    MDB_val name;        /* malloc'd copy; name.mv_data NULL for FREE/MAIN or a closed slot */
    MDB_cmp_func *cmp;   /* key comparator */
    MDB_cmp_func *dcmp;  /* duplicate comparator (DUPSORT) */
    MDB_rel_func *rel;   /* stored, never called (as LMDB 0.9) */
    void *relctx;
    /* The record as committed in snapshot rec_txnid, if rec_known (under dbi_mutex): txns
     * of that snapshot take it instead of searching MAIN (txn.c).  Set by a read txn that
     * searched, and by a write txn's commit for the records it leaves (dbi.c). */
    int rec_known;
    uint64_t rec_txnid;
    db_record rec;
} db_info;

/* Per-txn state bits of a database handle (txn->dbstate[dbi]); txn.c/dbi.c write. */
#define DBS_DIRTY 0x01    /* record changed in this txn: rewrite it into MAIN at commit */
#define DBS_STALE 0x02    /* record must be re-read from MAIN before use */
#define DBS_NEW 0x04      /* handle opened in this txn */
#define DBS_VALID 0x08    /* handle usable in this txn */
#define DBS_USRVALID 0x10 /* handle opened by the user (not an internal FREE/MAIN) */
#define DBS_DUPDATA 0x20  /* DUPSORT handle: cursors need a sub-cursor */

/* ---- transaction ---- */
#define TXN_RDONLY MDB_RDONLY     /* 0x20000 */
#define TXN_FINISHED 0x01         /* ended: only abort/reset are accepted */
#define TXN_ERROR 0x02            /* poisoned: only abort is accepted */
#define TXN_DIRTY 0x04            /* wrote something */
#define TXN_SPILLS 0x08           /* has spilled pages */
#define TXN_HAS_CHILD 0x10        /* a nested child is active */
#define TXN_LOADING 0x20          /* mdbcore_bulk_load runs: its callback may not use the txn */
#define TXN_END_ASKED 0x40        /* mdb_txn_abort called during a load: done when it returns */
#define TXN_BLOCKED (TXN_FINISHED | TXN_ERROR | TXN_HAS_CHILD | TXN_LOADING)

struct MDB_txn {
    MDB_txn *parent;      /* nested txns (docs/design.md#nested-transactions) */
    MDB_txn *child;
    pgno_t next_pgno;     /* first never-used page number (page_alloc.c) */
    txnid_t txnid;        /* snapshot id (read) or id to commit as (write) */
    MDB_env *env;
    pgno_list free_pgs;   /* pages this txn freed; saved under key txnid at commit (freelist.c) */
    page *loose_pgs;      /* freed dirty pages reusable in this txn, linked through pgno field */
    int loose_count;
    pgno_list spill_pgs;  /* pages written out early, ascending; NULL until a spill (spill.c) */
    dirty_list dirty;     /* write txns: dirty pages (dirty.c) */
    dirty_entry *dirty_index;   /* hash of `dirty` by pgno, NULL until the first add (dirty.c) */
    unsigned dirty_index_bits;  /* the hash has 2^bits slots */
    reader_slot *reader;  /* read txns: our slot in lock.mdb (readers.c) */
    db_info *dbinfo;      /* == env->dbinfo */
    db_record *dbs;       /* per-txn copies of each database's root record */
    unsigned *dbseq;      /* per-dbi sequence numbers at open time, to detect reopen */
    MDB_cursor **cursors; /* write txns: per-dbi list of open cursors to fix up (cursor_track.c) */
    uint8_t *dbstate;     /* DBS_* per dbi */
    /* dbs/dbseq/dbstate[i] mean something only once dbgen[i] == gen: a txn sets a handle
     * up on first use (txn_dbi_ready), so begin/abort cost nothing per open database.
     * touched[0..ntouched) lists the handles set up, for the walks of commit and abort. */
    uint32_t *dbgen;
    uint32_t gen;
    MDB_dbi *touched;
    MDB_dbi ntouched;
    MDB_dbi numdbs;       /* handles valid in this txn */
    unsigned flags;       /* TXN_* */
    unsigned dirty_room;  /* dirty entries left before MDB_TXN_FULL (dirty.c) */
    size_t dirty_cap;     /* allocated entries of `dirty` (dirty.c) */
    pgno_list reclaimed;  /* pages taken from old free-list records, not yet used (freelist.c) */
    size_t reclaimed_taken; /* of which the first ones already handed out (freelist_settle) */
    txnid_t pglast;       /* newest free-list record consumed into `reclaimed` (freelist.c) */
    txnid_t oldest;       /* oldest snapshot still readable, cached for this txn (freelist.c) */
    txnid_t drained_at;   /* pglast + 1 when no record after pglast is eligible; 0: not known
                           * (freelist.c; an ancestor's value stays right: see load_next) */
    int saving_freelist;  /* commit is writing FREE_DBI: freed dirty pages bypass loose (freelist.c) */
    int owns_slot;        /* read txn: slot is per-txn (NOTLS) and released with the txn (txn.c) */
    pgno_t first_new;     /* next_pgno at begin: pages >= this were never on disk (page_alloc.c) */
    pgno_list parent_freed; /* nested txn: pages dirty in an ancestor that this txn freed */
    int track_depth;      /* nesting of track_before/track_after (cursor_track.c) */
    /* Bumped by every change to a tree of this txn and by anything that may move or give
     * back a dirty page (txn_shape_changed, txn_pages_changed): a saved page stack is
     * still the tree's while this has not moved. */
    uint64_t shape_gen;
    /* Bumped only by what may move or give back a dirty page (txn_pages_changed: page
     * alloc/free, spill, taking a spilled page back, a child's begin, every delete);
     * track_pages_gen is pages_gen at the outermost track_before, so track_after_put
     * knows whether a put stayed inside its own leaf. */
    uint64_t pages_gen;
    uint64_t track_pages_gen;
    /* mdb_put's memory of the right edge of the tree it last put at the end of (tree_put.c):
     * the next put past the last key there starts from it instead of from the root. */
    struct right_edge {
        uint64_t shape_gen; /* valid while == txn->shape_gen and snum > 0 */
        uint64_t pages_gen; /* txn->pages_gen when saved (tree_edge_remember) */
        MDB_dbi dbi;
        uint16_t snum;
        page *pg[RIGHT_EDGE_DEPTH];
        indx_t ki[RIGHT_EDGE_DEPTH];
    } edge;
};

/* ---- cursor ---- */
#define C_INITIALIZED 0x01 /* positioned */
#define C_EOF 0x02         /* moved past the last/first item */
#define C_SUB 0x04         /* is the sub-cursor of a DUPSORT cursor */
#define C_DEL 0x08         /* last op was a delete: next move must not skip */
/* A DUPSORT cursor after an exact lookup (SET, SET_KEY, GET_BOTH, GET_BOTH_RANGE) missed
 * the key: it stands at the insertion point with no duplicate position, as LMDB's does, so
 * calls that need one (GET_CURRENT, FIRST_DUP, LAST_DUP, count, cursor_del, a put with
 * MDB_CURRENT) on a key with duplicates are refused with EINVAL until it moves. */
#define C_XUNSET 0x10
#define C_UNTRACK 0x40     /* not in txn->cursors (internal temporary cursor) */
#define C_WRITE_TXN 0x80   /* belongs to a write txn: retired with it (cursor_alloc.c) */
#define C_RETIRED 0x100    /* its write txn ended: only the pool holds it (cursor_alloc.c) */

struct xcursor; /* DUPSORT sub-cursor (docs/design.md#duplicates-sub-pages-and-sub-trees) */

struct MDB_cursor {
    MDB_cursor *next;       /* next cursor on the same dbi in txn->cursors[dbi] */
    struct xcursor *xcursor;/* sub-cursor for duplicates, NULL unless DUPSORT */
    MDB_txn *txn;
    MDB_dbi dbi;
    int trk_state;          /* TRK_* in core.h (with trk_key below; here to fill dbi's pad) */
    db_record *db;          /* &txn->dbs[dbi], or the sub-DB record of an xcursor */
    db_info *dbinfo;        /* &txn->dbinfo[dbi] (or the xcursor's) */
    uint8_t *dbstate;       /* &txn->dbstate[dbi] */
    uint16_t snum;          /* depth of the page stack */
    uint16_t top;           /* index of the top page, snum - 1 */
    unsigned flags;         /* C_* */
    page *pg[CURSOR_STACK]; /* pg[0] is the root */
    indx_t ki[CURSOR_STACK];
    /* cursor_track.c: a copy of the key under the cursor, taken before another cursor
     * changes the tree and used to find the same place again afterwards. */
    uint8_t *trk_key;
    size_t trk_len, trk_cap;
    /* Sub-cursor over a sub-page: the page lives inside its parent's leaf node, so it is
     * the root itself rather than a pgno (cursor.c).  It points where the sub-page lies,
     * in the map or in the txn's dirty copy of the leaf, never at a copy: values read
     * through it live as long as LMDB's.  Whoever moves the leaf re-points it
     * (cursor_touch) or drops it (tree_put, tree_del, cursor_track reset the sub-cursor). */
    page *inline_root;
    unsigned inline_size;
    uint8_t alloc_kind;     /* CURSOR_ALLOC_* of cursor_alloc.c; 0 for cursors on the stack */
    /* While a child of its txn runs, a write cursor works in the child (as in LMDB); this
     * holds where to put it back (txn_nested.c), NULL otherwise. */
    struct cursor_shadow *shadow;
};

/* The duplicates of one key: a sub-page inside the leaf node, or a sub-tree whose record
 * is the node's data.  Navigation in cursor.c, writes in dupsort.c
 * (docs/design.md#duplicates-sub-pages-and-sub-trees). */
struct xcursor {
    MDB_cursor mc;   /* flags C_SUB; mc.db = &db, mc.dbinfo = &info */
    db_record db;    /* the dup tree's record (synthesised for a sub-page) */
    db_info info;    /* info.cmp = the parent's duplicate comparator */
    uint8_t state;
};

/* ---- environment ---- */
#define ENV_FATAL 0x80000000u   /* a meta write failed: every later call returns MDB_PANIC */
#define ENV_ACTIVE 0x20000000u  /* opened successfully */
#define ENV_TXKEY 0x10000000u   /* reader-slot TLS key created */

struct lock_region; /* lockfile.h */
struct os_ops;      /* os.h */

/* The longest run of pages whose buffer an env keeps for reuse (page_buffer.c): 64 KiB
 * of 4 KiB pages, values up to about 60 KiB. */
#define PAGE_CACHE_RUN_PAGES 16

/* A map replaced by a larger one while txns may still point into it (datafile.c). */
typedef struct retired_map {
    uint8_t *map;
    size_t span;
} retired_map;

struct MDB_env {
    int data_fd;          /* data file */
    int meta_fd;          /* data file opened O_DSYNC for meta writes (or == data_fd) */
    int lock_fd;          /* lock file, -1 with NOLOCK */
    struct lock_region *lock; /* mapped lock.mdb, NULL with NOLOCK (lockfile.c) */
    unsigned flags;       /* MDB_* env flags | ENV_* */
    unsigned psize;       /* page size of the file */
    unsigned os_psize;    /* OS page size */
    unsigned maxreaders;
    unsigned numreaders_cached;
    MDB_dbi numdbs;       /* handles in use (>= CORE_DBS); only grows; written under
                           * dbi_mutex with release order, so txn.c may load it unlocked */
    MDB_dbi maxdbs;       /* maxdbs + CORE_DBS */
    pid_t pid;            /* process that opened the env (fork detection) */
    pid_t pidlock_pid;    /* process known to hold its liveness lock (readers.c) */
    char *path;           /* as given to mdb_env_open */
    uint8_t *map;         /* the memory map of data.mdb */
    size_t mapsize;
    pgno_t maxpg;         /* mapsize / psize */
    /* The map's address space (datafile.c): map_span bytes reserved at map (>= mapsize),
     * the file mapped over their start; growing maps more of it in place, so the map
     * does not move under readers.  maxsize: the bound up to which a write txn grows the
     * map by itself (mdbcore_env_set_maxsize; 0: never).  reserve: the span asked for
     * (test knob; 0: datafile.c's policy).  Maps left behind when a size passed the
     * span (retired) stay mapped until close.  map_mutex serialises changes of the map
     * between the writer and threads beginning txns. */
    /* The write map (datafile_write_map): a writable shared map of data.mdb, used only
     * by the writer to copy committed pages into the page cache, never handed out.
     * wmap_backed: pages below it lie inside the file and have their blocks (no hole),
     * the only ones copied through the map; wmap_state: 0 undecided, 1 in use, -1 never
     * (filesystem, or the map failed). */
    uint8_t *wmap;
    size_t wmap_size;
    pgno_t wmap_backed;
    int wmap_state;
    size_t wmap_copied;   /* pages copied through it (mdbcore_env_write_map) */
    size_t maxsize;
    size_t map_span;
    size_t reserve;
    retired_map *retired;
    size_t nretired;
    pthread_mutex_t map_mutex;
    meta_record *metas[2];/* pointers into the map at pages 0 and 1 */
    /* A meta page that failed its checks at open (meta.c): its slot (-1: none; atomic, the
     * writer clears it once a commit rewrote the page), why, and its first bytes as judged
     * (PAGEHDRSZ + meta record): the slot is skipped while it still holds them.  meta_state
     * holds the MDBCORE_META_* bits reported by mdbcore_env_meta_status. */
    int meta_bad_slot;
    int meta_bad_rc;
    const char *meta_bad_why;
    unsigned meta_state;
    int meta_bad_short; /* the damaged page lies (partly) past the end of the file */
    uint8_t meta_bad_copy[PAGEHDRSZ + sizeof(meta_record)];
    MDB_txn *write_txn;   /* the env's one write txn object, reused */
    pgno_t file_pages;    /* data file length in pages, as last seen (datafile.c) */
    char *data_path;      /* data.mdb (or path with NOSUBDIR) */
    char *lock_path;      /* lock.mdb (or path-lock) */
    int txkey_made;       /* reader_key exists */
    /* Heap buffers of pages and short runs released by ended write txns, kept for the
     * next ones: page_cache[n] lists buffers of n pages, page_cache_count counts the pages
     * of all (page_buffer.c).  Only the writer touches them: the writer mutex guards them. */
    page *page_cache[PAGE_CACHE_RUN_PAGES + 1];
    size_t page_cache_count;
    db_info *dbinfo;      /* array[maxdbs] */
    uint16_t *dbflags;    /* array[maxdbs]: persistent flags of each open handle */
    unsigned *dbseq;      /* array[maxdbs]: bumped when a slot is closed/reused */
    /* Name -> handle index over dbinfo's names (dbi.c), open addressing, at most half
     * full, 0 = empty; and the lowest slot that may be free.  Both under dbi_mutex. */
    MDB_dbi *name_index;
    unsigned name_index_bits;
    MDB_dbi name_index_used;
    MDB_dbi free_hint;
    pthread_key_t reader_key; /* TLS slot binding, unless MDB_NOTLS */
    pthread_mutex_t dbi_mutex;/* guards handle-table updates across threads */
    unsigned maxkeysize;
    unsigned node_max;    /* NODE_MAX(psize) */
    unsigned maxfree_1pg; /* free-list entries fitting in one page */
    void *userctx;
    MDB_assert_func *assert_fn;
    size_t max_dirty;     /* dirty list entries per txn; spill.c keeps below it (MAX_DIRTY) */
    uint64_t spilled;     /* pages spilled since open, for tests (spill.c) */
    /* Ended read txn objects kept for the next begin (txn.c), linked through ->child and
     * guarded by dbi_mutex: their per-dbi arrays are maxdbs long, too big to allocate for
     * each begin when there are thousands of databases. */
    MDB_txn *rtxn_cache;
    unsigned rtxn_cached;
    /* The last ended top-level write txn, its dirty list, hash, page lists and cursor table
     * kept for the next (txn.c): allocating and faulting them in again cost more than a
     * small txn's work.  Taken and given back with atomic swaps. */
    MDB_txn *wtxn_cache;
    /* Cursors of ended write txns, kept for reuse (cursor_alloc.c); only the writer,
     * holding the writer lock, touches them. */
    MDB_cursor *cursor_pool;
    unsigned cursor_pooled;
    /* Dead-reader healing by the writer (readers.c via freelist.c), under the writer mutex. */
    readers_heal_state heal;
};

#endif
