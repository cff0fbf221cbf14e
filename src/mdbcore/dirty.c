/*
 * dirty.c -- the write txn's dirty pages (layer L2): the sorted dirty list and its hash,
 * and the loose pages.  Copy-on-write is page_cow.c, freeing page_alloc.c, page memory
 * page_buffer.c.  Calls nothing above L2: the read path (page_get.c) looks pages up here.
 *
 * Invariants: a page is dirty iff it is in txn->dirty; dirty pages are private heap copies
 * (never inside the read-only map), flagged P_DIRTY, and are what page_get returns for their
 * pgno.  A loose page is a dirty page freed in this txn: it stays in the list (flag
 * P_LOOSE, never written) and is reused first.  A freed clean page goes to free_pgs,
 * because older snapshots may still read it.
 *
 * The list is kept sorted by pgno (commit writes it in file order) and is mirrored by an
 * open-addressing hash (txn->dirty_index, linear probing, at most half full): every page
 * a write txn reads is first looked up here, and a hash probe costs one cache miss where a
 * binary search over tens of thousands of entries costs a dozen.  Both always hold the
 * same entries; pgno 0 (a meta page, never dirty) marks an empty slot.
 */
#include <stdlib.h>

#include "core.h"

#define DL_COUNT(t) ((t)->dirty[0].pgno)
#define LOOSE_NEXT(p) (*(page **)((uint8_t *)(p) + PAGEHDRSZ))

static size_t dl_lower_bound(MDB_txn *txn, pgno_t pgno)
{
    size_t lo = 1, hi = DL_COUNT(txn) + 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (txn->dirty[mid].pgno < pgno)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#define INDEX_MIN_BITS 6

static inline size_t index_home(pgno_t pgno, unsigned bits)
{
    return (size_t)(((uint64_t)pgno * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

static void index_put(dirty_entry *ix, unsigned bits, pgno_t pgno, page *pg)
{
    size_t mask = ((size_t)1 << bits) - 1;
    size_t i = index_home(pgno, bits);
    while (ix[i].pgno && ix[i].pgno != pgno)
        i = (i + 1) & mask;
    ix[i].pgno = pgno;
    ix[i].pg = pg;
}

/* Room for `want` entries at most half full: a new table filled from the sorted list. */
static int index_reserve(MDB_txn *txn, size_t want)
{
    unsigned bits = txn->dirty_index ? txn->dirty_index_bits : INDEX_MIN_BITS;
    while (((size_t)1 << bits) < 2 * want)
        bits++;
    if (txn->dirty_index && bits == txn->dirty_index_bits)
        return 0;
    dirty_entry *ix = calloc((size_t)1 << bits, sizeof(dirty_entry));
    if (!ix)
        return ENOMEM;
    for (size_t k = 1; k <= DL_COUNT(txn); k++)
        index_put(ix, bits, txn->dirty[k].pgno, txn->dirty[k].pg);
    free(txn->dirty_index);
    txn->dirty_index = ix;
    txn->dirty_index_bits = bits;
    return 0;
}

/* Linear-probing delete: pull later entries of the probe run back over the hole, so a
 * lookup never stops early at an emptied slot. */
static void index_remove(MDB_txn *txn, pgno_t pgno)
{
    dirty_entry *ix = txn->dirty_index;
    unsigned bits = txn->dirty_index_bits;
    size_t mask = ((size_t)1 << bits) - 1;
    size_t i = index_home(pgno, bits);
    while (ix[i].pgno != pgno) {
        if (!ix[i].pgno)
            return;
        i = (i + 1) & mask;
    }
    for (size_t j = (i + 1) & mask; ix[j].pgno; j = (j + 1) & mask) {
        size_t home = index_home(ix[j].pgno, bits);
        /* ix[j] may move to the hole at i unless its home lies cyclically in (i, j] */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            ix[i] = ix[j];
            i = j;
        }
    }
    ix[i].pgno = 0;
    ix[i].pg = NULL;
}

static void index_drop(MDB_txn *txn)
{
    free(txn->dirty_index);
    txn->dirty_index = NULL;
}

/* Empty the hash for the txn object's next use, at a cost in proportion to the entries it
 * holds (a hash grown by one big txn is not wiped whole after every small one that
 * follows).  One over 1 MiB is freed instead, and so is one 64 times bigger than this
 * txn needed: small txns after a big one (a bulk load, then single puts) would otherwise
 * probe a table spread over far more cache lines than their few pages need; the next
 * txn starts a small table again.  The smallest table (1 KiB) is simply wiped, which
 * costs less than finding a handful of entries' probe runs.  Call before the list is
 * emptied. */
#define INDEX_KEEP_BITS 16
#define INDEX_SPARSE 64
static void index_clear(MDB_txn *txn)
{
    dirty_entry *ix = txn->dirty_index;
    unsigned bits = txn->dirty_index_bits;
    size_t cells = (size_t)1 << bits, mask = cells - 1, n = DL_COUNT(txn);
    if (!ix)
        return;
    if (bits > INDEX_KEEP_BITS || (bits > INDEX_MIN_BITS && INDEX_SPARSE * n < cells)) {
        index_drop(txn);
    } else if (4 * n >= cells || bits == INDEX_MIN_BITS) {
        memset(ix, 0, cells * sizeof(dirty_entry));
    } else {
        /* every entry goes: wiping each entry's whole probe run from its home on is safe,
         * since every cell of the run belongs to an entry that goes too */
        for (size_t k = 1; k <= n; k++)
            for (size_t i = index_home(txn->dirty[k].pgno, bits); ix[i].pgno; i = (i + 1) & mask)
                ix[i].pgno = 0, ix[i].pg = NULL;
    }
}

static inline page *index_find(const MDB_txn *txn, pgno_t pgno)
{
    const dirty_entry *ix = txn->dirty_index;
    if (!ix)
        return NULL; /* nothing was ever added */
    size_t mask = ((size_t)1 << txn->dirty_index_bits) - 1;
    for (size_t i = index_home(pgno, txn->dirty_index_bits);; i = (i + 1) & mask) {
        if (ix[i].pgno == pgno)
            return ix[i].pg;
        if (!ix[i].pgno)
            return NULL;
    }
}

page *dirty_find(MDB_txn *txn, pgno_t pgno)
{
    return index_find(txn, pgno);
}

/* The ancestors' part of dirty_find_chain, out of line: nested txns are rare, and the
 * top-level lookup (every page a write txn reads) stays a short leaf function. */
static __attribute__((noinline)) page *find_in_ancestors(MDB_txn *t, pgno_t pgno)
{
    for (; t; t = t->parent) {
        page *d = index_find(t, pgno);
        if (d)
            return d;
    }
    return NULL;
}

page *dirty_find_chain(MDB_txn *txn, pgno_t pgno, int *own)
{
    *own = 1;
    page *d = index_find(txn, pgno);
    if (d || !txn->parent)
        return d;
    *own = 0;
    return find_in_ancestors(txn->parent, pgno);
}

int dirty_add(MDB_txn *txn, page *p)
{
    size_t n = DL_COUNT(txn);
    if (n >= txn->env->max_dirty)
        return MDB_TXN_FULL;
    if (n + 1 >= txn->dirty_cap) {
        size_t cap = txn->dirty_cap * 2;
        dirty_entry *d = realloc(txn->dirty, cap * sizeof(dirty_entry));
        if (!d)
            return ENOMEM;
        txn->dirty = d;
        txn->dirty_cap = cap;
    }
    /* the hash has room (the usual case) unless it is missing or would pass half full */
    if (!txn->dirty_index || 2 * (n + 1) > ((size_t)1 << txn->dirty_index_bits)) {
        int rc = index_reserve(txn, n + 1);
        if (rc)
            return rc;
    }
    size_t i = n + 1;
    if (n && txn->dirty[n].pgno >= p->pgno) {
        i = dl_lower_bound(txn, p->pgno);
        memmove(&txn->dirty[i + 1], &txn->dirty[i], (n + 1 - i) * sizeof(dirty_entry));
    }
    txn->dirty[i].pgno = p->pgno;
    txn->dirty[i].pg = p;
    DL_COUNT(txn) = n + 1;
    index_put(txn->dirty_index, txn->dirty_index_bits, p->pgno, p);
    return 0;
}

void dirty_drop(MDB_txn *txn, pgno_t pgno)
{
    size_t n = DL_COUNT(txn);
    size_t i = dl_lower_bound(txn, pgno);
    if (i > n || txn->dirty[i].pgno != pgno)
        return;
    memmove(&txn->dirty[i], &txn->dirty[i + 1], (n - i) * sizeof(dirty_entry));
    DL_COUNT(txn) = n - 1;
    index_remove(txn, pgno);
}

void dirty_release_all(MDB_txn *txn)
{
    if (!txn->dirty)
        return;
    page_release_list(txn->env, txn->dirty + 1, DL_COUNT(txn));
    index_clear(txn);
    DL_COUNT(txn) = 0;
    if (txn->spill_pgs)
        txn->spill_pgs[0] = 0;
    txn->loose_pgs = NULL;
    txn->loose_count = 0;
}

int dirty_forget(MDB_txn *txn, const dirty_entry *gone, size_t n)
{
    size_t count = DL_COUNT(txn), w = 1, g = 0;
    for (size_t r = 1; r <= count; r++) {
        if (g < n && txn->dirty[r].pgno == gone[g].pgno) {
            page_release(txn->env, gone[g].pg);
            g++;
            continue;
        }
        txn->dirty[w++] = txn->dirty[r];
    }
    DL_COUNT(txn) = w - 1;
    /* rebuilt rather than n deletions: spilling is rare and takes thousands at once */
    index_drop(txn);
    return g == n ? index_reserve(txn, DL_COUNT(txn)) : CORRUPT_AT(gone[g].pgno);
}

void dirty_disown(MDB_txn *txn)
{
    DL_COUNT(txn) = 0;
    index_drop(txn);
}

void dirty_list_free(MDB_txn *txn)
{
    free(txn->dirty);
    txn->dirty = NULL;
    index_drop(txn);
    idl_free(txn->spill_pgs);
    txn->spill_pgs = NULL;
}

/* Make dirty page p loose: freed in this txn, kept in the list, reused first. */
void dirty_put_loose(MDB_txn *txn, page *p)
{
    p->flags = P_LOOSE | P_DIRTY;
    LOOSE_NEXT(p) = txn->loose_pgs;
    txn->loose_pgs = p;
    txn->loose_count++;
}

/* Pop a loose page for reuse, or NULL. */
page *dirty_take_loose(MDB_txn *txn)
{
    page *p = txn->loose_pgs;
    if (p) {
        txn->loose_pgs = LOOSE_NEXT(p);
        txn->loose_count--;
    }
    return p;
}
