/*
 * page_cow.c -- copy-on-write of a write txn's pages (layer L4): whether a page may be
 * written in place, and making a private writable copy of one that may not.
 *
 * Invariants: a page is written in place only when it is dirty in this very txn (a nested
 * txn shadows its ancestors' dirty pages under the same number, so an abort leaves the
 * ancestor's copy intact); a clean page is copied to a newly allocated page and the old
 * number is freed (page_free), except a page this txn spilled, which comes back under its
 * own number (spill.c).
 */
#include "core.h"

int page_writable(MDB_txn *txn, const page *p)
{
    if (!(p->flags & P_DIRTY))
        return 0;
    return !txn->parent || dirty_find(txn, p->pgno) == p;
}

/* Copy a tree page without the free gap between its pointer array and its nodes: a random
 * fill copies a page per put, and the gap is a third of a page on average.  The gap of the
 * copy keeps what its buffer held (an earlier page image of this file, or zeros). */
static void page_copy(page *dst, const page *src, unsigned psize)
{
    unsigned lo = src->u.bounds.lower, up = src->u.bounds.upper;
    int tree = (src->flags & (P_BRANCH | P_LEAF)) && !(src->flags & (P_LEAF2 | P_OVERFLOW));
    if (tree && lo <= up && up <= psize && up - lo >= 64) {
        memcpy(dst, src, lo);
        memcpy((uint8_t *)dst + up, (const uint8_t *)src + up, psize - up);
    } else {
        memcpy(dst, src, psize);
    }
}

int page_make_writable(MDB_txn *txn, page *p, page **out)
{
    MDB_env *env = txn->env;
    page *np;
    int rc;
    if (p->flags & P_DIRTY) {
        /* dirty in an ancestor: shadow it under the same number, the ancestor keeps its
         * version in case we abort.  From now on this txn reads the page from the copy:
         * a cursor holding the ancestor's version (another cursor's change made the
         * copy) must be put back on its item (cursor_track.c), not kept as standing on
         * another leaf, or a write through it would go to a stale image of the page. */
        txn_pages_changed(txn);
        size_t n = (p->flags & P_OVERFLOW) ? p->u.overflow_pages : 1;
        if (!(np = page_buffer_get(env, (unsigned)n)))
            return ENOMEM;
        memcpy(np, p, n * env->psize);
        if ((rc = dirty_add(txn, np)) != 0) {
            page_release(env, np);
            return rc;
        }
        *out = np;
        return 0;
    }
    /* written out early by this txn (spill.c): nobody else can see it, keep its number */
    if (txn->spill_pgs && ((rc = spill_take_back(txn, p, &np)) != 0 || np)) {
        *out = np;
        return rc;
    }
    if ((rc = page_alloc(txn, 1, ALLOC_NOINIT, &np)) != 0)
        return rc;
    pgno_t newpg = np->pgno, oldpg = p->pgno;
    page_copy(np, p, env->psize);
    np->pgno = newpg;
    np->flags |= P_DIRTY;
    /* p is a map page (no P_DIRTY) not spilled by this txn: in no dirty list */
    if ((rc = page_free_clean(txn, oldpg)) != 0)
        return rc;
    *out = np;
    return 0;
}
