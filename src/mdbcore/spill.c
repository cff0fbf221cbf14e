/*
 * spill.c -- writing dirty pages out before commit when a write txn's dirty list fills up,
 * and taking them back (layer L4).  The writing itself is pages_write.c's, shared with
 * commit.
 *
 * A write txn keeps its changed pages in memory, at most env->max_dirty of them (LMDB's
 * 131,071 entries).  Before an operation could pass that, some dirty pages are written to
 * their own place in the file now and leave the list ("spilled").  That is safe because no
 * snapshot can reach them: every dirty page is either new since the last commit or was
 * taken from the free list, which hands out only pages no reader can see.  A crash leaves
 * them unreferenced, and a later commit's fdatasync covers them.
 *
 * A spilled page reads back through the map.  When the txn changes it again it is copied
 * back under the same number (nobody else can see it, so it needs no new page), found in
 * txn->spill_pgs, an ascending list.  Pages that a cursor of the txn stands on (they are
 * pointed to), loose pages (they are reused in memory) and pages holding the bytes of the
 * caller's key or data stay.  Leaves and overflow runs go first: branch pages are on every
 * path, so spilling them would only bring them straight back.
 *
 * Nested txns do not spill (their pages may still be needed by the parent on abort); they
 * get MDB_TXN_FULL as before.  A top-level txn does spill to make room for the pages of
 * a nested txn that commits into it.  Under WRITEMAP a dirty page is the map page itself: spilling
 * only forgets it (the commit's msync covers the whole map).
 */
#include <stdlib.h>

#include "core.h"

/* Room one write operation may need: a path in MAIN, one in the named DB and one in a
 * duplicate sub-tree, each split all the way up, plus an overflow run; real trees are
 * rarely deeper than 5, and a spill leaves max_dirty / 8 more.  Commit adds its own
 * writes: named-DB records into MAIN and the free list into FREE_DBI. */
#define NEED_PER_OP 64
#define NEED_AT_COMMIT 128

/* Mark a page the txn owns as not to be spilled.  Sub-page copies and pages of other txns
 * are never in this txn's list, so the pointer comparison leaves them alone. */
static void keep_page(MDB_txn *txn, page *p)
{
    if (p && (p->flags & P_DIRTY) && dirty_find(txn, p->pgno) == p)
        p->flags |= P_KEEP;
}

static void keep_cursor(MDB_txn *txn, MDB_cursor *c)
{
    for (unsigned i = 0; i < c->snum && i < CURSOR_STACK; i++)
        keep_page(txn, c->pg[i]);
    if (c->xcursor) {
        MDB_cursor *x = &c->xcursor->mc;
        for (unsigned i = 0; i < x->snum && i < CURSOR_STACK; i++)
            keep_page(txn, x->pg[i]);
    }
}

static int holds(const page *p, size_t bytes, const MDB_val *v)
{
    if (!v || !v->mv_data)
        return 0;
    const uint8_t *a = (const uint8_t *)p, *b = (const uint8_t *)v->mv_data;
    return b + v->mv_size > a && b < a + bytes;
}

static int by_pgno(const void *a, const void *b)
{
    pgno_t x = ((const dirty_entry *)a)->pgno, y = ((const dirty_entry *)b)->pgno;
    return x < y ? -1 : x > y;
}

static int spill(MDB_txn *txn, MDB_cursor *mc, const MDB_val *key, const MDB_val *data,
                 size_t need)
{
    MDB_env *env = txn->env;
    size_t count = txn->dirty[0].pgno;
    if (count + need <= env->max_dirty)
        return 0;
    if (txn->parent)
        return 0; /* see the top of the file: MDB_TXN_FULL will say so */
    txn_pages_changed(txn);
    /* spill well below the limit, so the next operations do not spill again at once */
    size_t reserve = need + env->max_dirty / 8;
    size_t target = reserve < env->max_dirty ? env->max_dirty - reserve : 0;
    size_t want = count > target ? count - target : 0;
    if (want == 0)
        return 0;

    dirty_entry *victims = malloc(want * sizeof(*victims));
    if (!victims)
        return ENOMEM;
    for (MDB_dbi d = 0; d < txn->numdbs; d++)
        for (MDB_cursor *c = txn->cursors ? txn->cursors[d] : NULL; c; c = c->next)
            keep_cursor(txn, c);
    if (mc)
        keep_cursor(txn, mc);
    size_t nv = 0;
    size_t psize = env->psize;
    /* two passes: leaves and overflow runs, then branches if still short */
    for (int pass = 0; pass < 2 && nv < want; pass++) {
        for (size_t i = 1; i <= count && nv < want; i++) {
            page *p = txn->dirty[i].pg;
            if (p->flags & (P_KEEP | P_LOOSE))
                continue;
            if ((pass == 0) == ((p->flags & P_BRANCH) != 0))
                continue;
            size_t bytes = psize * ((p->flags & P_OVERFLOW) ? p->u.overflow_pages : 1);
            if (holds(p, bytes, key) || holds(p, bytes, data))
                continue;
            victims[nv++] = txn->dirty[i];
        }
    }
    for (size_t i = 1; i <= count; i++)
        txn->dirty[i].pg->flags &= ~P_KEEP;
    if (nv == 0) {
        free(victims);
        return 0;
    }
    /* each pass took them in list order; the two runs together need sorting */
    qsort(victims, nv, sizeof(*victims), by_pgno);
    pgno_t *nums = malloc(nv * sizeof(*nums));
    int rc = nums ? 0 : ENOMEM;
    if (!rc && !txn->spill_pgs && !(txn->spill_pgs = idl_alloc(nv)))
        rc = ENOMEM;
    if (!rc) {
        for (size_t i = 0; i < nv; i++)
            nums[i] = victims[i].pgno;
        rc = idl_need(&txn->spill_pgs, nv); /* before writing: nothing can fail after it */
    }
    if (!rc)
        rc = pages_write(env, victims, nv);
    if (rc) {
        for (size_t i = 0; i < nv; i++)
            victims[i].pg->flags |= P_DIRTY;
        free(nums);
        free(victims);
        return rc;
    }
    rc = idl_merge(&txn->spill_pgs, nums, nv);
    free(nums);
    if (!rc)
        rc = dirty_forget(txn, victims, nv);
    free(victims);
    if (!rc) {
        txn->flags |= TXN_DIRTY | TXN_SPILLS;
        env->spilled += nv;
    }
    return rc;
}

/* Room enough: the answer for nearly every call, checked before entering spill(). */
static inline int roomy(const MDB_txn *txn, size_t need)
{
    return txn->dirty[0].pgno + need <= txn->env->max_dirty;
}

int spill_before_write(MDB_cursor *mc, const MDB_val *key, const MDB_val *data)
{
    return roomy(mc->txn, NEED_PER_OP) ? 0 : spill(mc->txn, mc, key, data, NEED_PER_OP);
}

int spill_before_merge(MDB_txn *parent, size_t incoming)
{
    return spill(parent, NULL, NULL, NULL, incoming + NEED_PER_OP);
}

int spill_before_commit(MDB_txn *txn)
{
    size_t need = NEED_AT_COMMIT + (size_t)txn->ntouched;
    return roomy(txn, need) ? 0 : spill(txn, NULL, NULL, NULL, need);
}

static size_t spilled_at(const pgno_list l, pgno_t pgno)
{
    size_t lo = 1, hi = l[0] + 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l[mid] < pgno)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo <= l[0] && l[lo] == pgno) ? lo : 0;
}

int spill_take_back(MDB_txn *txn, page *p, page **out)
{
    *out = NULL;
    pgno_list l = txn->spill_pgs;
    size_t at;
    if (!l || txn->parent || !(at = spilled_at(l, p->pgno)))
        return 0;
    MDB_env *env = txn->env;
    txn_pages_changed(txn);
    size_t bytes = env->psize * ((p->flags & P_OVERFLOW) ? p->u.overflow_pages : 1);
    page *np = p;
    if (!(env->flags & MDB_WRITEMAP)) {
        if (!(np = page_buffer_get(env, (unsigned)(bytes / env->psize))))
            return ENOMEM;
        memcpy(np, p, bytes);
    }
    np->flags |= P_DIRTY;
    int rc = dirty_add(txn, np);
    if (rc) {
        if (np != p)
            page_release(env, np);
        else
            p->flags &= ~P_DIRTY;
        return rc;
    }
    memmove(&l[at], &l[at + 1], (l[0] - at) * sizeof(pgno_t));
    l[0]--;
    *out = np;
    return 0;
}

uint64_t mdbcore_env_spilled_pages(MDB_env *env)
{
    return env ? env->spilled : 0;
}

int mdbcore_env_set_dirty_limit(MDB_env *env, size_t pages)
{
    if (!env || pages < 2 * NEED_AT_COMMIT || pages > MAX_DIRTY)
        return EINVAL;
    env->max_dirty = pages;
    return 0;
}
