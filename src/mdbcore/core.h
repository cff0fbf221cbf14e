/*
 * core.h -- the engine's internal interface, one section per layer, lowest first (each
 * file: docs/design.md#source-map).  Every prototype used across files is here or in a
 * per-layer header (os.h L0; lockfile.h, readers.h L1; walk.h, check.h L6 tools); the
 * exported API is lmdb.h and mdbcore.h.
 *
 * Layers.  Each file of src/mdbcore, by layer (tools/check_layers.py, run by `make lint`,
 * reads this list).  A file may call only into its own layer or a lower one; a call that
 * goes up must be a named exception in tools/check_layers.py (there are none).  An
 * internal name begins with its file's first word or with a prefix given in brackets; no
 * internal name starts with mdb_ (only api_*.c define the exported mdb_* functions), and
 * mdbcore_* (mdbcore.h's extras) are defined where what they expose lives.
 *
 *   L0  errors idl os_posix os_fault[fault_] mutation
 *   L1  meta datafile lockfile readers
 *   L2  page[node_] page_buffer dirty cmp
 *   L3  page_get tree_search[leaf_] cursor[xcursor_ node_read]
 *   L4  page_alloc page_cow cursor_touch pages_write spill freelist
 *   L5  tree_put tree_split tree_del overflow dupsort[dup_] tree_load freelist_save
 *       cursor_track[track_]
 *   L6  txn txn_nested[cursor_shadow_] commit[txn_commit] cursor_alloc dbi env
 *       copy[env_copy] readers_info walk check
 *   L7  api_env api_txn api_dbi api_data api_cursor api_misc
 *   headers  format.h objects.h core.h os.h lockfile.h readers.h walk.h check.h tree_raw.h lmdb.h
 *       mdbcore.h
 *
 * L0 errors, lists, the OS seam; L1 the two files (meta pages, map, lock file, reader
 * table); L2 pages in memory (slotted layout, buffers, the dirty list, key orders); L3 the
 * read path (never allocates a page, never writes); L4 a write txn's pages (allocation,
 * freeing, copy-on-write, writing out, spilling, reading the free list); L5 tree writes;
 * L6 transactions, handles, the environment, copies, and the checker; L7 the API.
 */
#ifndef MDBCORE_CORE_H
#define MDBCORE_CORE_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "format.h"
#include "lmdb.h"
#include "objects.h"

/* ============================== L0: errors ======================================== */
typedef struct corrupt_note {
    const char *file;
    int line;
    pgno_t pgno;
} corrupt_note;

const char *errors_text(int err); /* NULL for errno values */
int errors_corrupt(const char *file, int line, pgno_t pgno);
const corrupt_note *errors_last_corruption(void);
/* The single exit for "impossible on a valid file": records where, returns MDB_CORRUPTED. */
#define CORRUPT_AT(pgno) errors_corrupt(__FILE__, __LINE__, (pgno_t)(pgno))

/* ============================== L0: idl ============================================ */
/* pgno lists: l[0] = count, l[1..count]; capacity lives at l[-1].  Kept ascending in
 * memory; the on-disk order (descending) is produced by idl_store. */
pgno_list idl_alloc(size_t cap);
void idl_free(pgno_list l);
int idl_need(pgno_list *l, size_t more);
int idl_append(pgno_list *l, pgno_t id);
/* idl_append with the usual case, room left, inline: every copy-on-write frees a page. */
static inline int idl_push(pgno_list *l, pgno_t id)
{
    pgno_list c = *l;
    if (c[0] < c[-1]) {
        c[++c[0]] = id;
        return 0;
    }
    return idl_append(l, id);
}
int idl_append_run(pgno_list *l, pgno_t first, size_t n);
void idl_sort(pgno_list l);
/* Merge ascending `src` (count n) into ascending *l. */
int idl_merge(pgno_list *l, const pgno_t *src, size_t n);
/* Write l into dst as an on-disk record: count, then descending pgnos. */
void idl_store(const pgno_list l, void *dst);

/* ============================== L1: meta and datafile ============================== */
/* (lockfile.c and readers.c, also L1, have lockfile.h and readers.h.) */
/* Read and judge both metas through pread; *newest gets the newest one that holds up.
 * When the other one fails, its slot is marked damaged (skipped until rewritten). */
int meta_read(MDB_env *env, meta_record *newest, unsigned *psize_out);
/* Write the two metas of a new, empty file. */
int meta_create(MDB_env *env);
/* The meta in force: the newer of the two in the map, skipping a slot found damaged at
 * open for as long as it holds the same bytes. */
meta_record *meta_newest(MDB_env *env);
/* Is m (one of env->metas) a page found damaged at open that still holds those bytes? */
int meta_is_damaged(MDB_env *env, const meta_record *m);
/* Under the writer lock: forget a damaged slot that another process's commit rewrote. */
void meta_refresh(MDB_env *env);
/* The commit point: write txn's meta into page txnid&1 (tail only; the whole page over a
 * damaged slot, which heals it). */
int meta_write(MDB_env *env, MDB_txn *txn);

int datafile_map(MDB_env *env, void *addr);
void datafile_unmap(MDB_env *env);
/* The write map for pages_write, or NULL: pages go out with pwrite (see datafile.c and
 * objects.h's wmap).  Pages below env->wmap_backed may be copied into it. */
uint8_t *datafile_write_map(MDB_env *env);
/* Pages up to written_to were just written contiguously from wmap_backed: extend it. */
void datafile_write_map_extend(MDB_env *env, pgno_t written_to);
int datafile_refresh_size(MDB_env *env);
/* Map at least `size` bytes of the file (a size another process wrote into the meta, or
 * the writer's own growth): in place within the reservation, else in a new one, the old
 * map kept until close (FIXEDMAP: only as far as the reservation goes).  Safe with txns
 * running in other threads.  0, or an OS error. */
int datafile_grow(MDB_env *env, size_t size);
/* mdb_env_set_mapsize with the map open and no txn live: grow or shrink to `size`. */
int datafile_resize(MDB_env *env, size_t size);
/* Grow so that `pages` pages fit (doubling, capped by the bound of
 * mdbcore_env_set_maxsize): 0 or MDB_MAP_FULL. */
int datafile_grow_for(MDB_env *env, pgno_t pages);
/* The map's size in pages and its base, read in this order: datafile.c publishes the base
 * first, so the base read after a size covers at least that size, even while another
 * thread grows or moves the map. */
static inline pgno_t env_maxpg(const MDB_env *env)
{
    return __atomic_load_n(&env->maxpg, __ATOMIC_ACQUIRE);
}
static inline uint8_t *env_map(const MDB_env *env)
{
    return __atomic_load_n(&env->map, __ATOMIC_RELAXED);
}
int datafile_sync(MDB_env *env, int force);

/* ============================== L2: page and node ================================== */
#define PG_NKEYS(p) ((unsigned)(((p)->u.bounds.lower - PAGEHDRSZ) >> 1))
#define PG_ROOM(p) ((size_t)((p)->u.bounds.upper - (p)->u.bounds.lower))
#define IS_LEAF(p) (((p)->flags & P_LEAF) != 0)
#define IS_BRANCH(p) (((p)->flags & P_BRANCH) != 0)
#define PG_NODE(p, i) ((node_header *)((uint8_t *)(p) + (p)->slots[i]))
#define EVEN(n) (((n) + 1u) & ~(size_t)1)

static inline size_t node_dsize(const node_header *n) { return n->lo | ((size_t)n->hi << 16); }
static inline pgno_t node_child(const node_header *n)
{
    return n->lo | ((pgno_t)n->hi << 16) | ((pgno_t)n->flags << 32);
}
static inline void node_set_child(node_header *n, pgno_t pg)
{
    n->lo = (uint16_t)pg;
    n->hi = (uint16_t)(pg >> 16);
    n->flags = (uint16_t)(pg >> 32);
}
static inline void *node_data(node_header *n) { return n->key + n->ksize; }
static inline void node_key(const node_header *n, MDB_val *k)
{
    k->mv_size = n->ksize;
    k->mv_data = (void *)n->key;
}

/* LEAF2 pages and sub-pages (size bytes) keep LMDB's accounting: lower grows 2 bytes per
 * key and upper - lower is the free space, so with 1-byte keys upper passes the size.
 * Checked instead of upper <= size, once lower <= upper is known. */
static inline int leaf2_bounds_ok(const page *p, size_t size)
{
    size_t keys = PAGEHDRSZ + (size_t)PG_NKEYS(p) * p->leaf2_ksize;
    return p->leaf2_ksize && keys <= size &&
           (size_t)(p->u.bounds.upper - p->u.bounds.lower) == size - keys;
}
void page_init(page *p, pgno_t pgno, unsigned flags, unsigned psize);
/* Bytes a leaf node takes (slot included) and whether its data must go to overflow. */
size_t node_leaf_size(const MDB_env *env, size_t ksize, size_t dsize, int *big);
size_t node_branch_size(size_t ksize);
/* Add a node at slot idx.  Leaf: data->mv_size is the logical size; with F_BIGDATA the node
 * stores `pg`; with data->mv_data NULL the data bytes are left for the caller (RESERVE).
 * Branch: stores key and child `pg`.  MDB_PAGE_FULL if it does not fit. */
int page_add_node(page *p, unsigned idx, const MDB_val *key, const MDB_val *data, pgno_t pg,
                  unsigned nflags, node_header **out);
void page_del_node(page *p, unsigned idx, unsigned psize);
/* Bytes used by nodes and slots. */
size_t page_used(const page *p, unsigned psize);
/* Header sanity of a page fetched for reading; 0 or MDB_CORRUPTED. */
int page_check(const MDB_env *env, const page *p, pgno_t pgno);
/* Node i lies inside a page of `limit` bytes (sub-pages are smaller than env->psize) and
 * its key and data (or overflow pgno) fit; 0 or MDB_CORRUPTED.  Inline: every probe of
 * every search runs it, and the node is about to be read anyway. */
static inline int node_check_in(const page *p, unsigned i, size_t limit)
{
    unsigned off = p->slots[i];
    if (off < p->u.bounds.upper || (off & 1) || off + NODESIZE > limit)
        return CORRUPT_AT(p->pgno);
    const node_header *n = (const node_header *)((const uint8_t *)p + off);
    size_t end = off + NODESIZE + n->ksize;
    if (IS_LEAF(p))
        end += (n->flags & F_BIGDATA) ? sizeof(pgno_t) : node_dsize(n);
    if (end > limit)
        return CORRUPT_AT(p->pgno);
    return 0;
}
static inline int node_check(const MDB_env *env, const page *p, unsigned i)
{
    return node_check_in(p, i, env->psize);
}
/* Key i of a leaf page (node or packed LEAF2 key), validated. */
int leaf_key(const MDB_cursor *mc, const page *p, unsigned i, MDB_val *k);

/* ============================== L2: cmp ============================================ */
int cmp_lex(const MDB_val *a, const MDB_val *b);
int cmp_lex_rev(const MDB_val *a, const MDB_val *b);
int cmp_int(const MDB_val *a, const MDB_val *b);
int cmp_size(const MDB_val *a, const MDB_val *b);
MDB_cmp_func *cmp_for_keys(unsigned dbflags);
/* Sign of the byte-wise order of a and b, 8 bytes at a time as big-endian words: most
 * keys are decided in a compare or two, with no call.  cmp_lex's order exactly. */
static inline int cmp_lex_sign(const MDB_val *a, const MDB_val *b)
{
    const uint8_t *x = (const uint8_t *)a->mv_data, *y = (const uint8_t *)b->mv_data;
    size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
    for (; n >= 8; n -= 8, x += 8, y += 8) {
        uint64_t u, v;
        memcpy(&u, x, 8);
        memcpy(&v, y, 8);
        if (u != v)
            return __builtin_bswap64(u) < __builtin_bswap64(v) ? -1 : 1;
    }
    for (; n; n--, x++, y++)
        if (*x != *y)
            return *x < *y ? -1 : 1;
    return a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size;
}
/* What the searches call: the default order inline, any other through its pointer.  Only
 * the sign of the result may be used. */
static inline int cmp_keys(MDB_cmp_func *cmp, const MDB_val *a, const MDB_val *b)
{
    return cmp == cmp_lex ? cmp_lex_sign(a, b) : cmp(a, b);
}
MDB_cmp_func *cmp_for_dups(unsigned dbflags);

/* ============================== L2: page buffers (page_buffer.c) =================== */
/* Heap memory for n pages, contents undefined: a cached buffer when n == 1. */
page *page_buffer_get(MDB_env *env, unsigned n);
/* Give a dirty page's memory back (heap copy; nothing under WRITEMAP, where it is the map).
 * Single pages go to the env's cache for the next txn, up to PAGE_CACHE_BYTES. */
void page_release(MDB_env *env, page *p);
/* page_release of the pages of list[0..n) (a txn's whole dirty list at its end). */
void page_release_list(MDB_env *env, const dirty_entry *list, size_t n);
/* Free the cache of page buffers (env close). */
void page_cache_free(MDB_env *env);

/* ============================== L2: the dirty list (dirty.c) ====================== */
/* A tree of txn changed, or a dirty page may have moved or been given back: every saved
 * page stack (txn->edge) is stale from here on. */
static inline void txn_shape_changed(MDB_txn *txn) { txn->shape_gen++; }
/* A dirty page may have been replaced, moved or given back: no saved page pointer of this
 * txn is good any more (cursor_track.c, tree_put.c). */
static inline void txn_pages_changed(MDB_txn *txn)
{
    txn->shape_gen++;
    txn->pages_gen++;
}
page *dirty_find(MDB_txn *txn, pgno_t pgno);
/* The txn's own dirty copy, else the nearest ancestor's (nested txns), else NULL. */
page *dirty_find_chain(MDB_txn *txn, pgno_t pgno, int *own);
int dirty_add(MDB_txn *txn, page *p);
void dirty_drop(MDB_txn *txn, pgno_t pgno); /* remove the entry, free nothing */
void dirty_release_all(MDB_txn *txn);
/* Empty the list without releasing the pages (a nested commit handed them over). */
void dirty_disown(MDB_txn *txn);
/* Free the dirty list and its index (the txn is going away). */
void dirty_list_free(MDB_txn *txn);
/* Loose pages: dirty pages freed in this txn, kept in the list and reused first. */
void dirty_put_loose(MDB_txn *txn, page *p);
page *dirty_take_loose(MDB_txn *txn); /* NULL if none */
/* Drop the entries `gone` (ascending, all present) from the list and release their
 * memory: spill.c wrote them out. */
int dirty_forget(MDB_txn *txn, const dirty_entry *gone, size_t n);

/* ============================== L3: read path ====================================== */
/* page_get.c */
/* pgno -> page: the txn's dirty copy or the map; validated.  Never allocates. */
int page_get(MDB_txn *txn, pgno_t pgno, page **out);
/* page_get for a page about to be searched: a map page (not a dirty copy) is asked of
 * the CPU whole before its header is read. */
int page_get_whole(MDB_txn *txn, pgno_t pgno, page **out);
/* tree_search.c and cursor.c */
void cursor_init(MDB_cursor *mc, MDB_txn *txn, MDB_dbi dbi);
/* Descend from the root: SRCH_KEY for `key`, SRCH_FIRST / SRCH_LAST for the edges. */
#define SRCH_KEY 0
#define SRCH_FIRST 1
#define SRCH_LAST 2
int tree_descend(MDB_cursor *mc, const MDB_val *key, int mode);
/* On the leaf at the top: ki = first slot >= key; *exact set if equal. */
int leaf_search(MDB_cursor *mc, const MDB_val *key, int *exact);
/* leaf_search among slots [lo, hi) of the top leaf, the caller knowing that the key sorts
 * after slot lo - 1 and before slot hi. */
int leaf_search_in(MDB_cursor *mc, const MDB_val *key, unsigned lo, unsigned hi, int *exact);
/* Position at the first item >= key (ki may be NKEYS on the last leaf: end). */
int cursor_seek(MDB_cursor *mc, const MDB_val *key, int *exact);
/* cursor_seek that first looks at the item under the cursor, whose page stack must be
 * live (a tracked cursor's, one of a read txn, or one positioned since the last change);
 * a C_UNTRACK cursor always searches. */
int cursor_seek_here(MDB_cursor *mc, const MDB_val *key, int *exact);
int cursor_sibling(MDB_cursor *mc, int right);
int cursor_get(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op);
/* Give a cursor on a DUPSORT database its duplicate sub-cursor (storage owned by caller). */
void cursor_attach_x(MDB_cursor *mc, struct xcursor *x);
/* Point mc's sub-cursor at the duplicates of node n (not positioned). */
int xcursor_load(MDB_cursor *mc, node_header *n);
/* mc just arrived on an item: position its sub-cursor on the first/last duplicate. */
int cursor_enter(MDB_cursor *mc, int at_last);
int cursor_x_unset(MDB_cursor *mc);
int cursor_put_keeps_eof(MDB_cursor *mc, const MDB_val *key);
int cursor_count(MDB_cursor *mc, size_t *count);
/* The value of a leaf node (follows overflow runs, validated). */
int node_read(MDB_cursor *mc, node_header *n, MDB_val *data);
/* The node under the cursor, validated; MDB_NOTFOUND when not on an item. */
int cursor_node(MDB_cursor *mc, node_header **out);
static inline MDB_cmp_func *cursor_cmp(const MDB_cursor *mc) { return mc->dbinfo->cmp; }

/* ============================== L4: page lifecycle ================================= */
/* page_alloc.c */
/* A new dirty page or run of n pages.  flags: page flags; an overflow run is zeroed unless
 * or-ed with ALLOC_NOINIT (the caller fills it); tree pages never are (page_alloc.c). */
#define ALLOC_NOINIT 0x10000u
int page_alloc(MDB_txn *txn, unsigned n, unsigned flags, page **out);
/* A page (or run of npages) leaves the tree: to free_pgs, loose, or reclaimed at once. */
int page_free(MDB_txn *txn, pgno_t pgno, unsigned npages);
/* page_free of one page known to be in no dirty list of the txn or its ancestors: a
 * map page without P_DIRTY that this txn did not spill (copy-on-write knows it). */
int page_free_clean(MDB_txn *txn, pgno_t pgno);
/* page_cow.c and cursor_touch.c */
/* p may be written in place by txn: dirty, and (nested) dirty in txn itself. */
int page_writable(MDB_txn *txn, const page *p);
/* Make a private writable copy of page p for txn (copy-on-write); *np gets it. */
int page_make_writable(MDB_txn *txn, page *p, page **np);
/* cursor_touch's work from level `from` of the path down (cursor_touch.c). */
int cursor_touch_from(MDB_cursor *mc, unsigned from);
/* May a path the commit would copy anyway be copied early, for page placement
 * (cursor_touch.c's MAIN record, freelist.c's first free-list leaf)?  Only in a top-level
 * txn (a child's copy can be thrown away by its abort) whose dirty list is under half
 * full, so the early pages cannot crowd out the change that is being made. */
static inline int cursor_early_copy_ok(const MDB_txn *txn)
{
    return !txn->parent && txn->dirty[0].pgno + CURSOR_STACK < txn->env->max_dirty / 2;
}
/* Make every page on the cursor's path writable (copy-on-write).  A top-level txn owns
 * every page flagged dirty (page_writable): after its first change to a tree the path is
 * mostly such pages, stepped over here without a call. */
static inline int cursor_touch(MDB_cursor *mc)
{
    unsigned i = 0;
    if (!mc->txn->parent)
        while (i < mc->snum && (mc->pg[i]->flags & P_DIRTY))
            i++;
    if (i < mc->snum)
        return cursor_touch_from(mc, i);
    *mc->dbstate |= DBS_DIRTY;
    return 0;
}
/* pages_write.c: write dirty pages to the file (skipping loose ones, clearing P_DIRTY);
 * commit and spill.c use it. */
int pages_write(MDB_env *env, dirty_entry *list, size_t n);
/* spill.c: before a write through mc (key/data: the caller's bytes, which must stay put),
 * or before commit, write some dirty pages out early if the list could overflow. */
int spill_before_write(MDB_cursor *mc, const MDB_val *key, const MDB_val *data);
int spill_before_commit(MDB_txn *txn);
/* spill.c: make room in parent for `incoming` pages of a committing nested txn. */
int spill_before_merge(MDB_txn *parent, size_t incoming);
/* spill.c: if clean-looking p was spilled by txn, its dirty copy under the same number
 * (*out), else *out = NULL. */
int spill_take_back(MDB_txn *txn, page *p, page **out);
/* freelist.c: find n contiguous reclaimable pages among old free-list records;
 * P_INVALID if none. */
int freelist_take(MDB_txn *txn, unsigned n, pgno_t *out);
/* Drop from txn->reclaimed the pages freelist_take already handed out.  Single pages are
 * taken lowest first without shifting the list each time; anything else that reads or
 * changes the list (freeing a run, the commit's save, a child's begin and commit) calls
 * this first, and a txn's begin resets reclaimed_taken with the list. */
void freelist_settle(MDB_txn *txn);
txnid_t freelist_oldest(MDB_txn *txn);

/* ============================== L5: write path ===================================== */
/* Node flags F_SUBDATA may be or-ed into flags by dbi.c; user flags as LMDB. */
#define PUT_SUBDATA 0x01000000u /* internal: store an F_SUBDATA node (named-DB record) */
#define PUT_DUPDATA 0x02000000u /* internal: store an F_DUPDATA node (dupsort.c) */
/* internal: a search for key has just left the cursor where key goes (not found): no
 * second search */
#define PUT_PLACED 0x04000000u
/* internal: tree_edge_restore has just put the cursor on the tree's right edge */
#define PUT_AT_EDGE 0x08000000u
int tree_put(MDB_cursor *mc, const MDB_val *key, MDB_val *data, unsigned flags);
/* mdb_put's shortcut to the right edge of a tree (tree_put.c): tree_edge_restore puts a
 * fresh cursor on the saved edge of its DB when that is still current and returns 1
 * (else leaves it as it is, 0); tree_edge_remember saves the cursor's stack after a put
 * that left it on the right edge. */
int tree_edge_restore(MDB_cursor *mc);
void tree_edge_remember(const MDB_cursor *mc);
int tree_split(MDB_cursor *mc, const MDB_val *key, const MDB_val *data, pgno_t pg,
               unsigned nflags, int append);
/* Delete the item under the cursor, rebalance, leave the cursor on the next item. */
int tree_del_current(MDB_cursor *mc, int internal);
/* After a put that shrank the node under the cursor: merge its leaf if it fell under the
 * fill threshold, and stand on `key` again (tree_del.c). */
int tree_settle_after_shrink(MDB_cursor *mc, const MDB_val *key);
/* Free every page of a tree (drop). */
int tree_free_all(MDB_txn *txn, MDB_dbi dbi);
/* Free the pages of the tree described by rec (a key's duplicates). */
int tree_free_record(MDB_txn *txn, const db_record *rec);
/* dupsort.c: writes to DUPSORT databases (mc has an xcursor). */
int dup_put(MDB_cursor *mc, const MDB_val *key, MDB_val *data, unsigned flags);
/* mc stands on the key; data NULL deletes all its duplicates. */
int dup_del(MDB_cursor *mc, const MDB_val *data, int from_cursor);
int dup_put_current(MDB_cursor *mc, const MDB_val *key, MDB_val *data);
int overflow_write(MDB_txn *txn, const MDB_val *data, pgno_t *pg, void **dst);
/* tree_load.c: build the (empty) tree of mc's database bottom-up from strictly ascending
 * records that `next` hands out (0 with a record, MDB_NOTFOUND at the end, else an error).
 * On failure every page taken is freed and the database is still empty; *input_err is set
 * when the error is the one `next` returned. */
typedef int (*load_next_fn)(void *ctx, MDB_val *key, MDB_val *data);
int tree_load(MDB_cursor *mc, load_next_fn next, void *ctx, int *input_err);
int overflow_free(MDB_txn *txn, node_header *n, unsigned *npages_out);
/* cursor_track: before/after a change made through `mc`, keep the other cursors valid. */
#define TRK_NONE 0
#define TRK_SAVED 1 /* trk_key holds the key under the cursor */
#define TRK_END 2   /* cursor was past the end */
void track_before(MDB_cursor *mc);
int track_after(MDB_cursor *mc);
/* track_after for a put that returned put_rc: cursors on other leaves may stay put */
int track_after_put(MDB_cursor *mc, int put_rc);
/* Save / restore the position of one cursor by its key. */
int track_save_one(MDB_cursor *c);
int track_restore_one(MDB_cursor *c);
/* freelist_save.c: write FREE_DBI at commit (consumed records out, freed pages in). */
int freelist_save(MDB_txn *txn);

/* ============================== L6: txn, dbi, env ================================== */
int txn_begin(MDB_env *env, MDB_txn *parent, unsigned flags, MDB_txn **out);
/* A read txn with a reader slot of its own (released at abort), usable while the calling
 * thread holds another read txn on the env (readers_info.c). */
int txn_begin_own_slot(MDB_env *env, MDB_txn **out);
int txn_renew(MDB_txn *txn);
void txn_reset(MDB_txn *txn);
void txn_abort(MDB_txn *txn);
int txn_commit(MDB_txn *txn);
/* txn.c: the end of a successful commit (commit.c): publish, release, free. */
void txn_finish_commit(MDB_txn *txn);
/* Nested txns (txn_nested.c). */
/* Set up txn's state for handle dbi from the env's handle table (first use in this txn). */
void txn_dbi_setup(MDB_txn *txn, MDB_dbi dbi);
static inline void txn_dbi_ready(MDB_txn *txn, MDB_dbi dbi)
{
    if (txn->dbgen[dbi] != txn->gen)
        txn_dbi_setup(txn, dbi);
}
/* Allocate a txn object with per-dbi arrays for n handles (none set up). */
MDB_txn *txn_alloc(size_t n);
void txn_cache_free(MDB_env *env);
int txn_nested_begin(MDB_txn *parent, MDB_txn **out);
/* Free what a cursor closed inside a child keeps for its parent (txn_nested.c). */
void cursor_shadow_free(MDB_cursor *c);
/* cursor_alloc.c: the memory of cursors handed to the user */
MDB_cursor *cursor_obj_alloc(MDB_txn *txn, int with_xcursor);
void cursor_obj_retire(MDB_env *env, MDB_cursor *c);
void cursor_obj_free(MDB_cursor *c);
void cursor_pool_free(MDB_env *env);
int txn_nested_commit(MDB_txn *txn);
void txn_nested_abort(MDB_txn *txn);
/* Validate a handle in a txn and refresh its record if stale: 0, EINVAL or MDB_BAD_DBI. */
int dbi_use(MDB_txn *txn, MDB_dbi dbi);
int dbi_open(MDB_txn *txn, const char *name, unsigned flags, MDB_dbi *out);
void dbi_close(MDB_env *env, MDB_dbi dbi);
/* Empty handle slot i (name freed, out of the name index, seq bumped); dbi_mutex held. */
void dbi_slot_forget(MDB_env *env, MDB_dbi i);
int dbi_drop(MDB_txn *txn, MDB_dbi dbi, int del);
int dbi_save_all(MDB_txn *txn);
void dbi_remember_committed(MDB_txn *txn);
void dbi_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *st);
int env_open(MDB_env *env, const char *path, unsigned flags, mode_t mode);
void env_close(MDB_env *env);
int env_set_mapsize(MDB_env *env, size_t size);
int env_copyfd(MDB_env *env, int fd, unsigned flags);
int env_copy_path(MDB_env *env, const char *path, unsigned flags);
int env_reader_check(MDB_env *env, int *dead);
/* Writer mutex (no-op under NOLOCK); repairs state after a dead owner. */
int env_writer_lock(MDB_env *env);
void env_writer_unlock(MDB_env *env);

/* ---- L7 helpers shared by api_*.c ---- */
/* A txn usable for an operation: 0, EINVAL (no handle) or MDB_BAD_TXN (ended/poisoned). */
static inline int api_txn_usable(const MDB_txn *txn)
{
    if (!txn)
        return EINVAL;
    if (txn->flags & TXN_BLOCKED)
        return MDB_BAD_TXN;
    return 0;
}
/* For calls naming a database: a read txn after mdb_txn_reset has no database handles
 * (LMDB answers EINVAL there, before looking at the txn's state). */
static inline int api_txn_dbi_usable(const MDB_txn *txn)
{
    if (txn && (txn->flags & (TXN_RDONLY | TXN_FINISHED)) == (TXN_RDONLY | TXN_FINISHED))
        return EINVAL;
    return api_txn_usable(txn);
}
/* After a failed write step the txn may hold half-done changes: only abort is allowed. */
static inline int api_poison(MDB_txn *txn, int rc)
{
    switch (rc) {
    case 0: case MDB_KEYEXIST: case MDB_NOTFOUND: case EINVAL: case EACCES:
    case MDB_BAD_VALSIZE: case MDB_INCOMPATIBLE: case MDB_BAD_DBI:
        break;
    default:
        if (!(txn->flags & TXN_RDONLY))
            txn->flags |= TXN_ERROR;
    }
    return rc;
}

#define ENV_CHANGEABLE (MDB_NOSYNC | MDB_NOMETASYNC | MDB_MAPASYNC | MDB_NOMEMINIT)
#define ENV_CHANGELESS \
    (MDB_FIXEDMAP | MDB_NOSUBDIR | MDB_RDONLY | MDB_WRITEMAP | MDB_NOTLS | MDB_NOLOCK | \
     MDB_NORDAHEAD)
#define DB_PERSISTENT_FLAGS 0x7e /* REVERSEKEY..REVERSEDUP */
#define DB_DUPFLAGS (MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)
#define DEFAULT_MAPSIZE 1048576u
#define DEFAULT_READERS 126u
#define MAX_DIRTY 131071u

#endif
