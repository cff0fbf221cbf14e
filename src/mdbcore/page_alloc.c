/*
 * page_alloc.c -- a write txn's pages coming into use and leaving it (layer L4).
 *
 * page_alloc: order of preference: a loose page (freed earlier in this txn), pages
 * reclaimed from the free list (freelist.c), then new pages at next_pgno, refused with
 * MDB_MAP_FULL past the map (a growing map grows first).  Invariant: every page returned
 * is in the dirty list, flagged P_DIRTY, with a fresh header.  Under WRITEMAP the page is
 * the map page itself (safe: no reader can reach a page that is free or new), otherwise a
 * heap copy written out at commit.
 *
 * page_free: a page (or run) leaves the tree.  A clean page goes to free_pgs (older
 * snapshots may still read it); an ancestor's dirty page to parent_freed (free only if
 * this txn commits); a single dirty page of this txn becomes loose (dirty.c), a dirty run
 * is reusable at once (reclaimed).
 */
#include <stdlib.h>

#include "core.h"

int page_alloc(MDB_txn *txn, unsigned n, unsigned flags, page **out)
{
    MDB_env *env = txn->env;
    unsigned psize = env->psize;
    txn_pages_changed(txn);
    /* A tree page is not zeroed: its buffer holds an earlier page image of this file (or
     * zeros, page_buffer.c), the same as the gap a copy-on-write leaves (page_cow.c), and
     * its header is written below.  A run of overflow pages is fresh heap memory: zeroed,
     * so no stranger's bytes reach the file, unless the caller fills it or opted out. */
    int zero = (flags & P_OVERFLOW) && !(flags & ALLOC_NOINIT) && !(env->flags & MDB_NOMEMINIT);
    flags &= ~ALLOC_NOINIT;
    if (n == 1) {
        page *p = dirty_take_loose(txn);
        if (p) {
            pgno_t pg = p->pgno;
            if (zero)
                memset(p, 0, psize);
            page_init(p, pg, flags | P_DIRTY, psize);
            if (flags & P_OVERFLOW)
                p->u.overflow_pages = 1;
            *out = p;
            return 0;
        }
    }
    if (txn->dirty[0].pgno >= env->max_dirty)
        return MDB_TXN_FULL;
    pgno_t pg;
    int rc = freelist_take(txn, n, &pg);
    if (rc)
        return rc;
    int fresh = 0;
    if (pg == P_INVALID) {
        pg = txn->next_pgno;
        /* past the map: a growing map grows (datafile.c), any other is full */
        if (pg + n >= env_maxpg(env) && (rc = datafile_grow_for(env, pg + n + 1)) != 0)
            return rc;
        fresh = 1;
    }
    page *p;
    if (env->flags & MDB_WRITEMAP) {
        /* pages are written where they live; the file spans the whole map */
        p = (page *)(env_map(env) + (size_t)pg * psize);
    } else {
        if (!(p = page_buffer_get(env, n)))
            return ENOMEM;
        if (zero)
            memset(p, 0, (size_t)psize * n);
    }
    page_init(p, pg, flags | P_DIRTY, psize);
    if (flags & P_OVERFLOW)
        p->u.overflow_pages = n;
    if ((rc = dirty_add(txn, p)) != 0) {
        page_release(env, p);
        return rc; /* reclaimed pages are lost for this txn only: it must abort anyway */
    }
    if (fresh)
        txn->next_pgno = pg + n;
    *out = p;
    return 0;
}

int page_free_clean(MDB_txn *txn, pgno_t pgno)
{
    /* what page_free does once its dirty lookups come back empty */
    return idl_push(&txn->free_pgs, pgno);
}

int page_free(MDB_txn *txn, pgno_t pgno, unsigned npages)
{
    int own;
    txn_pages_changed(txn);
    page *d = dirty_find_chain(txn, pgno, &own);
    if (!d)
        return npages == 1 ? idl_push(&txn->free_pgs, pgno)
                           : idl_append_run(&txn->free_pgs, pgno, npages);
    if (!own) { /* an ancestor's page: it becomes free only if we commit */
        int rc = idl_append(&txn->parent_freed, pgno);
        return rc ? rc : idl_append(&txn->parent_freed, npages);
    }
    if (npages == 1 && !txn->saving_freelist) {
        dirty_put_loose(txn, d);
        return 0;
    }
    /* a dirty run was never visible to anyone: reusable at once */
    dirty_drop(txn, pgno);
    page_release(txn->env, d);
    freelist_settle(txn);
    pgno_t run[64];
    for (unsigned done = 0; done < npages;) {
        unsigned k = npages - done < 64 ? npages - done : 64;
        for (unsigned j = 0; j < k; j++)
            run[j] = pgno + done + j;
        int rc = idl_merge(&txn->reclaimed, run, k);
        if (rc)
            return rc;
        done += k;
    }
    return 0;
}
