/*
 * tree_load.c -- bulk loading (layer L5): a whole B+tree built bottom-up from records that
 * arrive in strictly ascending key order, into an empty database of a write txn.
 *
 * Leaves are filled in input order, each as full as the next record allows, every one a
 * fresh page from page_alloc: they are ordinary dirty pages of the txn, so the load commits
 * or aborts with it, and spill.c may write finished leaves out early (a load can be far
 * bigger than the dirty list).  Values too big for a leaf go to overflow runs through
 * overflow_write.  The first key and page number of every leaf are kept in memory; when
 * the input ends the branch levels are built from that list, one level at a time, each
 * page packed full, except that the last page of a level takes entries back from the one
 * before until it has at least two children and a quarter of a page (LMDB's rebalance
 * threshold), so no branch page is left that a delete would want to merge at once.
 *
 * Invariants:
 *  - The database record (mc->db) is written only once the whole tree is built.  Until
 *    then the pages taken are listed (pgno, run length), and on any failure every one of
 *    them is given back through page_free: the database is still empty.
 *  - Keys are compared with the database's comparator; a key not greater than the one
 *    before stops the load with MDB_KEYEXIST (what an MDB_APPEND put answers).
 *  - While records arrive, the only page that must stay in memory is the leaf being filled
 *    (the previous key lives in it): the private cursor given to spill.c holds just it.
 *  - Branch pages keep an empty key in slot 0, as everywhere in the engine.
 */
#include <stdlib.h>

#include "core.h"

typedef struct load_ent {
    size_t off;     /* first key of the page, in the key arena */
    pgno_t pgno;    /* the page */
    uint16_t ksize;
} load_ent;

typedef struct loader {
    MDB_txn *txn;
    MDB_cursor *mc;
    uint8_t *keys; /* key arena: first keys of the pages of the level below */
    size_t keys_len, keys_cap;
    load_ent *ents;
    size_t nents, ents_cap;
    pgno_t *taken; /* pairs (pgno, pages) of every page taken so far */
    size_t ntaken, taken_cap;
} loader;

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < need)
        c *= 2;
    void *p = realloc(*buf, c * elem);
    if (!p)
        return ENOMEM;
    *buf = p;
    *cap = c;
    return 0;
}

/* A new page or run (the txn's normal allocation), listed for the undo.  Before it, some
 * dirty pages may be written out early; `keep` (may be NULL) must stay in memory. */
static int take_page(loader *L, page *keep, const MDB_val *key, const MDB_val *data,
                     unsigned n, unsigned flags, page **out)
{
    MDB_cursor *mc = L->mc;
    mc->snum = keep ? 1 : 0;
    mc->top = 0;
    mc->pg[0] = keep;
    int rc = spill_before_write(mc, key, data);
    mc->snum = 0;
    if (rc)
        return rc;
    if ((rc = grow((void **)&L->taken, &L->taken_cap, L->ntaken + 2, sizeof(pgno_t))) != 0)
        return rc;
    if ((rc = page_alloc(L->txn, n, flags, out)) != 0)
        return rc;
    L->taken[L->ntaken++] = (*out)->pgno;
    L->taken[L->ntaken++] = n;
    return 0;
}

static int push_ent(loader *L, const MDB_val *key, pgno_t pgno)
{
    int rc = grow((void **)&L->ents, &L->ents_cap, L->nents + 1, sizeof(load_ent));
    if (!rc)
        rc = grow((void **)&L->keys, &L->keys_cap, L->keys_len + key->mv_size, 1);
    if (rc)
        return rc;
    load_ent *e = &L->ents[L->nents++];
    e->off = L->keys_len;
    e->ksize = (uint16_t)key->mv_size;
    e->pgno = pgno;
    memcpy(L->keys + L->keys_len, key->mv_data, key->mv_size);
    L->keys_len += key->mv_size;
    return 0;
}

/* Bytes entry i takes in a branch page: node + slot; the first of a page has no key. */
static size_t ent_size(const loader *L, size_t i, int first)
{
    return node_branch_size(first ? 0 : L->ents[i].ksize);
}

/* One branch level over L->ents; on return L->ents lists the new pages. */
static int build_level(loader *L, uint64_t *branches)
{
    MDB_env *env = L->txn->env;
    size_t n = L->nents, avail = env->psize - PAGEHDRSZ;
    size_t *starts = malloc((n + 1) * sizeof(size_t));
    if (!starts)
        return ENOMEM;
    size_t np = 0;
    for (size_t i = 0; i < n;) {
        starts[np++] = i;
        size_t used = ent_size(L, i, 1);
        for (i++; i < n && used + ent_size(L, i, 0) <= avail; i++)
            used += ent_size(L, i, 0);
    }
    if (np >= 2) {
        /* even out the tail: the last page takes entries from the end of the one before */
        size_t s = starts[np - 1], prev = starts[np - 2];
        size_t used = ent_size(L, s, 1);
        for (size_t j = s + 1; j < n; j++)
            used += ent_size(L, j, 0);
        while ((n - s < 2 || used * 4 < avail) && s - prev > 2) {
            /* entry s-1 becomes the keyless first one; entry s gets its key back */
            size_t grown = used + ent_size(L, s, 0) - ent_size(L, s, 1) + ent_size(L, s - 1, 1);
            if (grown > avail)
                break;
            used = grown;
            s--;
        }
        starts[np - 1] = s;
    }
    starts[np] = n;
    int rc = 0;
    for (size_t p = 0; p < np; p++) {
        page *bp;
        if ((rc = take_page(L, NULL, NULL, NULL, 1, P_BRANCH, &bp)) != 0)
            break;
        for (size_t i = starts[p]; i < starts[p + 1] && !rc; i++) {
            MDB_val k = {i == starts[p] ? 0 : L->ents[i].ksize, L->keys + L->ents[i].off};
            rc = page_add_node(bp, PG_NKEYS(bp), &k, NULL, L->ents[i].pgno, 0, NULL);
        }
        if (rc)
            break;
        /* p <= starts[p]: the entries still to read all lie beyond p */
        L->ents[p] = L->ents[starts[p]];
        L->ents[p].pgno = bp->pgno;
        (*branches)++;
    }
    free(starts);
    if (!rc)
        L->nents = np;
    return rc;
}

static int undo(loader *L)
{
    int rc = 0;
    for (size_t i = L->ntaken; i >= 2 && !rc; i -= 2)
        rc = page_free(L->txn, L->taken[i - 2], (unsigned)L->taken[i - 1]);
    return rc;
}

int tree_load(MDB_cursor *mc, load_next_fn next, void *ctx, int *input_err)
{
    MDB_txn *txn = mc->txn;
    MDB_env *env = txn->env;
    MDB_cmp_func *cmp = cursor_cmp(mc);
    loader L = {.txn = txn, .mc = mc};
    uint64_t leaves = 0, branches = 0, overflow = 0, entries = 0;
    page *leaf = NULL;
    MDB_val prev = {0, NULL};
    int rc;
    *input_err = 0;

    for (;;) {
        MDB_val k, d;
        rc = next(ctx, &k, &d);
        if (rc == MDB_NOTFOUND) {
            rc = 0;
            break;
        }
        if (rc) {
            *input_err = 1;
            goto fail;
        }
        if ((!k.mv_data && k.mv_size) || (!d.mv_data && d.mv_size)) {
            rc = EINVAL;
            goto fail;
        }
        if (k.mv_size == 0 || k.mv_size > env->maxkeysize || d.mv_size > UINT32_MAX) {
            rc = MDB_BAD_VALSIZE;
            goto fail;
        }
        if (leaf && cmp_keys(cmp, &k, &prev) <= 0) {
            rc = MDB_KEYEXIST;
            goto fail;
        }
        int big;
        size_t need = node_leaf_size(env, k.mv_size, d.mv_size, &big);
        pgno_t ov = 0;
        unsigned nflags = 0;
        MDB_val *dv = &d;
        if (big) {
            size_t runs = OVERFLOW_PAGES(env->psize, d.mv_size);
            page *op;
            if (runs > UINT32_MAX) {
                rc = MDB_BAD_VALSIZE;
                goto fail;
            }
            if ((rc = take_page(&L, leaf, &k, &d, (unsigned)runs, P_OVERFLOW, &op)) != 0)
                goto fail;
            if (d.mv_size)
                memcpy((uint8_t *)op + PAGEHDRSZ, d.mv_data, d.mv_size);
            ov = op->pgno;
            overflow += runs;
            nflags = F_BIGDATA;
            dv = NULL; /* copied: no need to keep the caller's bytes any more */
        }
        if (!leaf || PG_ROOM(leaf) < need) {
            if ((rc = take_page(&L, NULL, &k, dv, 1, P_LEAF, &leaf)) != 0)
                goto fail;
            if ((rc = push_ent(&L, &k, leaf->pgno)) != 0)
                goto fail;
            leaves++;
        }
        node_header *nd;
        if ((rc = page_add_node(leaf, PG_NKEYS(leaf), &k, &d, ov, nflags, &nd)) != 0)
            goto fail;
        prev.mv_size = k.mv_size;
        prev.mv_data = nd->key;
        entries++;
    }
    if (!leaves)
        goto out; /* no input: the database stays empty */
    unsigned depth = 1;
    while (L.nents > 1) {
        if (depth >= CURSOR_STACK) {
            rc = MDB_CURSOR_FULL;
            goto fail;
        }
        if ((rc = build_level(&L, &branches)) != 0)
            goto fail;
        depth++;
    }
    db_record *db = mc->db;
    db->root = L.ents[0].pgno;
    db->depth = (uint16_t)depth;
    db->branch_pages = branches;
    db->leaf_pages = leaves;
    db->overflow_pages = overflow;
    db->entries = entries;
    *mc->dbstate |= DBS_DIRTY;
    txn->flags |= TXN_DIRTY;
    /* cursors of the txn on this database stood on an empty tree: leave them unpositioned */
    for (MDB_cursor *c = txn->cursors ? txn->cursors[mc->dbi] : NULL; c; c = c->next) {
        c->flags &= ~(C_INITIALIZED | C_EOF | C_DEL);
        c->snum = 0;
    }
    goto out;
fail: {
    int urc = undo(&L);
    if (urc) {
        rc = urc;
        *input_err = 0;
    }
}
out:
    free(L.keys);
    free(L.ents);
    free(L.taken);
    return rc;
}
