/*
 * format.h -- the on-disk format of data.mdb and lock.mdb (LMDB 0.9, data version 1,
 * lock version 1, Linux x86-64).  Layer L0/L2: pure declarations, no code.
 *
 * Every struct here is a byte layout that real LMDB reads and writes, so the sizes and
 * offsets are pinned with static asserts.  All integers are host-native (little-endian
 * on x86-64).  docs/design.md (#data-file-format, #lock-file-format) is the prose twin of
 * these tables.
 *
 * Page (any kind), 16-byte header:
 *   off 0  u64 pgno        page number (overflow: first page of the run)
 *   off 8  u16 leaf2_ksize key size on LEAF2 pages, else 0
 *   off 10 u16 flags       P_* below
 *   off 12 u16 lower       16 + 2*nkeys          } or, on overflow pages,
 *   off 14 u16 upper       lowest node offset    }    u32 pages (run length)
 *   off 16 u16 slots[]     node offsets from the page start, in key order
 * Nodes are packed downward from the page end; each node starts 2-byte aligned.
 *
 * A DUPSORT sub-page is a page inside a leaf node's data, which follows the node's key
 * and so starts at any byte offset; its nodes start at any byte too.  The engine reads
 * sub-pages where they lie, so page_header and node_header are declared with alignment
 * 1 (packed: the layouts have no padding, the asserts below pin that).  On x86-64 the
 * loads are the same instructions; what it buys is that no access through a page or
 * node pointer assumes an alignment the format does not give.
 */
#ifndef MDBCORE_FORMAT_H
#define MDBCORE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t pgno_t;
typedef uint64_t txnid_t;
typedef uint16_t indx_t;

#define P_INVALID ((pgno_t)~(pgno_t)0)

#define MDB_DATA_MAGIC 0xBEEFC0DEu
#define MDB_DATA_VERSION 1u
#define MDB_LOCK_MAGIC 0xBEEFC0DEu
/* lock version 1, plus bit 16: readers are tracked by an fcntl lock on byte `pid`. */
#define MDB_LOCK_FORMAT 0x00010001u

/* Page flags (u16 at offset 10). */
#define P_BRANCH 0x01
#define P_LEAF 0x02
#define P_OVERFLOW 0x04
#define P_META 0x08
#define P_DIRTY 0x10 /* in memory only, except inside sub-pages where it is persisted */
#define P_LEAF2 0x20 /* DUPFIXED leaf: packed fixed-size keys, no node headers */
#define P_SUBP 0x40  /* a sub-page embedded in a leaf node (DUPSORT) */
#define P_LOOSE 0x4000 /* in memory only: freed and reusable inside this txn */
#define P_KEEP 0x8000  /* in memory only: do not spill */
#define P_DISK_FLAGS (P_BRANCH | P_LEAF | P_OVERFLOW | P_META | P_LEAF2 | P_SUBP)

typedef struct page_header {
    pgno_t pgno;
    uint16_t leaf2_ksize;
    uint16_t flags;
    union {
        struct {
            indx_t lower;
            indx_t upper;
        } bounds;
        uint32_t overflow_pages;
    } u;
    indx_t slots[]; /* node offsets */
} __attribute__((packed)) page_header;

#define PAGEHDRSZ 16u

/* Node header, 8 bytes, followed by the key and then (leaf) the data. */
typedef struct node_header {
    uint16_t lo;    /* leaf: data size bits 0-15;  branch: child pgno bits 0-15  */
    uint16_t hi;    /* leaf: data size bits 16-31; branch: child pgno bits 16-31 */
    uint16_t flags; /* leaf: F_* below;            branch: child pgno bits 32-47 */
    uint16_t ksize;
    uint8_t key[];
} __attribute__((packed)) node_header;

#define NODESIZE 8u

/* Leaf node flags. */
#define F_BIGDATA 0x01 /* data is an 8-byte pgno of an overflow run */
#define F_SUBDATA 0x02 /* data is a 48-byte db_record (named DB, or dup sub-DB with F_DUPDATA) */
#define F_DUPDATA 0x04 /* key has duplicates: sub-page, or sub-DB with F_SUBDATA */

/* A B+tree's root record (MDB_db), 48 bytes. */
typedef struct db_record {
    uint32_t pad;   /* FREE_DBI in a meta: the page size; DUPFIXED sub-DB: item size */
    uint16_t flags; /* persistent DB flags (low 16 bits of the open flags) */
    uint16_t depth;
    pgno_t branch_pages;
    pgno_t leaf_pages;
    pgno_t overflow_pages;
    uint64_t entries;
    pgno_t root; /* P_INVALID when the tree is empty */
} db_record;

#define FREE_DBI 0
#define MAIN_DBI 1
#define CORE_DBS 2

/* The meta record, at offset 16 of pages 0 and 1.  136 bytes. */
typedef struct meta_record {
    uint32_t magic;
    uint32_t version;
    uint64_t address; /* FIXEDMAP address or 0 */
    uint64_t mapsize;
    db_record dbs[CORE_DBS]; /* dbs[0].pad is the page size, dbs[0].flags the env flags */
    pgno_t last_pg;
    txnid_t txnid;
} meta_record;

#define META_OFFSET PAGEHDRSZ
/* A commit rewrites only the tail of the meta, from mapsize on. */
#define META_TAIL_OFFSET offsetof(meta_record, mapsize)

/* ---- lock.mdb (glibc, process-shared robust pthread mutexes) ---- */
#define CACHELINE 64

typedef struct reader_slot {
    volatile txnid_t txnid; /* snapshot being read, or (txnid_t)-1 when idle */
    volatile uint32_t pid;  /* 0 = free slot; written last when claiming */
    uint32_t pad_;
    volatile uint64_t tid; /* pthread_t of the owning thread */
    uint8_t pad[CACHELINE - 24];
} reader_slot;

/* The fixed head of the lock file: 128 bytes, then reader_slot[maxreaders]. */
typedef struct lock_header {
    uint32_t magic;
    uint32_t format;
    uint8_t rmutex[40]; /* pthread_mutex_t guarding slot allocation */
    volatile txnid_t txnid; /* last committed txnid */
    volatile uint32_t numreaders; /* high-water mark of slots ever used */
    uint32_t pad1;
    uint8_t wmutex[40]; /* pthread_mutex_t: the single-writer lock */
    uint8_t pad2[CACHELINE - 40];
} lock_header;

#define LOCK_HEADER_SIZE 128u

/* Static layout checks: these are ABI with real LMDB. */
_Static_assert(sizeof(page_header) == 16, "page header is 16 bytes");
_Static_assert(offsetof(page_header, flags) == 10, "page flags at 10");
_Static_assert(offsetof(page_header, slots) == 16, "slots at 16");
_Static_assert(_Alignof(page_header) == 1 && _Alignof(node_header) == 1,
               "pages and nodes are read at any byte offset (sub-pages)");
_Static_assert(sizeof(node_header) == 8, "node header is 8 bytes");
_Static_assert(sizeof(db_record) == 48, "MDB_db is 48 bytes");
_Static_assert(offsetof(db_record, root) == 40, "md_root at 40");
_Static_assert(sizeof(meta_record) == 136, "meta is 136 bytes");
_Static_assert(offsetof(meta_record, dbs) == 24, "mm_dbs at page offset 40");
_Static_assert(offsetof(meta_record, last_pg) == 120, "mm_last_pg at page offset 136");
_Static_assert(offsetof(meta_record, txnid) == 128, "mm_txnid at page offset 144");
_Static_assert(sizeof(reader_slot) == 64, "reader slot is one cache line");
_Static_assert(offsetof(reader_slot, tid) == 16, "mr_tid at 16");
_Static_assert(sizeof(lock_header) == LOCK_HEADER_SIZE, "lock header is 128 bytes");
_Static_assert(offsetof(lock_header, txnid) == 48, "mti_txnid at 48");
_Static_assert(offsetof(lock_header, numreaders) == 56, "mti_numreaders at 56");
_Static_assert(offsetof(lock_header, wmutex) == 64, "mti_wmutex at 64");

/* Size rules (see docs/design.md#size-rules). */
#define MDB_MAXKEYSIZE_DEFAULT 511u
#define MIN_KEYS_PER_PAGE 2u
#define MAX_PAGESIZE 0x8000u
#define MIN_PAGESIZE 256u /* smaller psize in a meta is a corrupt file */
#define CURSOR_STACK 32
/* Deepest tree whose right edge mdb_put remembers (objects.h): 8 levels of 4 KiB pages hold
 * far more keys than any map. */
#define RIGHT_EDGE_DEPTH 8
/* Largest node that stays on a leaf: ((psize - 16) / 2, even) - 2; bigger data overflows. */
#define NODE_MAX(psize) (((((psize)-PAGEHDRSZ) / MIN_KEYS_PER_PAGE) & ~(size_t)1) - sizeof(indx_t))
/* Pages in an overflow run holding `size` bytes of data. */
#define OVERFLOW_PAGES(psize, size) ((PAGEHDRSZ - 1 + (size)) / (psize) + 1)
/* Merge threshold: a page below 25% fill is rebalanced. */
#define FILL_THRESHOLD_PERMILLE 250

#endif
