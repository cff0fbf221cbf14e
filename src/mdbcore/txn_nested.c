/*
 * txn_nested.c -- child write transactions (layer L6).
 *
 * A child starts from copies of its parent's state (database records, next_pgno, the
 * reclaimed free pages) and an empty dirty list.  Reads look through the child's dirty
 * pages, then each ancestor's, then the map (page_get).  The first write to a page that an
 * ancestor has dirty makes a private copy under the same page number, so the ancestor's
 * version survives an abort.  Pages the child frees that an ancestor had dirty are only
 * noted (parent_freed); they become reusable in the parent when the child commits.
 *   commit: the child's dirty pages replace or join the parent's, its free lists, loose
 *           pages, allocation state and records become the parent's; handles opened in it
 *           stay open.
 *   abort:  the child's pages are dropped; the parent is exactly as before.
 * The parent's cursors work in the child while it lives, as in LMDB: they move to the
 * child's cursor lists (so the child's writes keep them positioned) with a shadow record of
 * where they stood.  At commit each keeps its place in the child, found again by key in
 * the merged parent; at abort each goes back to its place from before the child.  The
 * parent itself is blocked (TXN_HAS_CHILD) while the child lives.  Not with WRITEMAP
 * (EINVAL).
 */
#include <stdlib.h>

#include "core.h"

struct cursor_shadow {
    struct cursor_shadow *prev; /* the shadow of an outer child (children nest) */
    unsigned flags;             /* the cursor's flags when the child began */
    int trk_state;              /* its place then, as track_save_one recorded it */
    size_t trk_len, saved;
    uint8_t key[];              /* `saved` bytes of its tracking buffer */
};

void cursor_shadow_free(MDB_cursor *c)
{
    while (c->shadow) {
        struct cursor_shadow *s = c->shadow;
        c->shadow = s->prev;
        free(s);
    }
}

/* Point a cursor (and its sub-cursor) at txn t's copy of its database. */
static void cursor_rehome(MDB_cursor *c, MDB_txn *t)
{
    c->txn = t;
    c->db = &t->dbs[c->dbi];
    c->dbstate = &t->dbstate[c->dbi];
    if (c->xcursor)
        c->xcursor->mc.txn = t;
}

/* Hand every cursor of p to its child t, each with a shadow of where it stands.  All
 * shadows are allocated first, so a failure leaves every cursor as it was. */
static int parent_cursors_shadow(MDB_txn *p, MDB_txn *t)
{
    size_t n = 0, k = 0;
    for (MDB_dbi j = 0; j < p->ntouched; j++)
        for (MDB_cursor *c = p->cursors[p->touched[j]]; c; c = c->next)
            n++;
    if (!n)
        return 0;
    struct cursor_shadow **made = calloc(n, sizeof(*made));
    if (!made)
        return ENOMEM;
    int rc = 0;
    for (MDB_dbi j = 0; j < p->ntouched && !rc; j++) {
        for (MDB_cursor *c = p->cursors[p->touched[j]]; c && !rc; c = c->next) {
            if ((rc = track_save_one(c)) != 0)
                break;
            size_t saved = c->trk_key ? c->trk_cap : 0;
            struct cursor_shadow *s = malloc(sizeof(*s) + saved);
            if (!s) {
                rc = ENOMEM;
                break;
            }
            s->flags = c->flags;
            s->trk_state = c->trk_state;
            s->trk_len = c->trk_len;
            s->saved = saved;
            if (saved)
                memcpy(s->key, c->trk_key, saved);
            c->trk_state = TRK_NONE;
            made[k++] = s;
        }
    }
    if (rc) {
        while (k)
            free(made[--k]);
        free(made);
        return rc;
    }
    k = 0;
    for (MDB_dbi j = 0; j < p->ntouched; j++) {
        MDB_dbi i = p->touched[j];
        for (MDB_cursor *c = p->cursors[i]; c; c = c->next) {
            made[k]->prev = c->shadow;
            c->shadow = made[k++];
            cursor_rehome(c, t);
        }
        t->cursors[i] = p->cursors[i];
        p->cursors[i] = NULL;
    }
    free(made);
    return 0;
}

/* Commit: remember where each shadowed cursor stands in the child (before the merge frees
 * pages it may point into). */
static void shadowed_save(MDB_txn *t)
{
    for (MDB_dbi j = 0; j < t->ntouched; j++)
        for (MDB_cursor *c = t->cursors[t->touched[j]]; c; c = c->next)
            if (c->shadow)
                track_save_one(c);
}

/* Give the shadowed cursors back to the parent: at commit they are found again where
 * they stood in the child, at abort where they stood before it.  The child's own cursors
 * stay in its lists, to be freed with it. */
static void shadowed_return(MDB_txn *t, int committed)
{
    MDB_txn *p = t->parent;
    for (MDB_dbi j = 0; j < t->ntouched; j++) {
        MDB_dbi i = t->touched[j];
        MDB_cursor **pp = &t->cursors[i];
        while (*pp) {
            MDB_cursor *c = *pp;
            if (!c->shadow) {
                pp = &c->next;
                continue;
            }
            *pp = c->next;
            struct cursor_shadow *s = c->shadow;
            c->shadow = s->prev;
            if (!committed) {
                c->flags = s->flags;
                c->trk_state = s->trk_state;
                c->trk_len = s->trk_len;
                if (s->saved && c->trk_key && c->trk_cap >= s->saved)
                    memcpy(c->trk_key, s->key, s->saved);
                else if (s->saved)
                    c->trk_state = TRK_NONE; /* cannot happen: the buffer only grows */
            }
            free(s);
            cursor_rehome(c, p);
            c->next = p->cursors[i];
            p->cursors[i] = c;
            txn_dbi_ready(p, i);
            track_restore_one(c);
        }
    }
}

static pgno_list idl_copy(pgno_list src)
{
    pgno_list l = idl_alloc(src[0] + 16);
    if (l) {
        memcpy(l + 1, src + 1, src[0] * sizeof(pgno_t));
        l[0] = src[0];
    }
    return l;
}

static void child_free(MDB_txn *t)
{
    if (t->cursors) {
        for (MDB_dbi j = 0; j < t->ntouched; j++) {
            MDB_cursor *c = t->cursors[t->touched[j]];
            while (c) {
                MDB_cursor *next = c->next;
                cursor_obj_retire(t->env, c);
                c = next;
            }
        }
    }
    dirty_list_free(t);
    idl_free(t->free_pgs);
    idl_free(t->reclaimed);
    idl_free(t->parent_freed);
    free(t->cursors);
    free(t);
}

int txn_nested_begin(MDB_txn *parent, MDB_txn **out)
{
    MDB_env *env = parent->env;
    if (parent->flags & TXN_RDONLY)
        return EINVAL;
    if (env->flags & MDB_WRITEMAP)
        return MDB_BAD_TXN; /* pages change in place: nothing to roll back to (LMDB's code) */
    if (parent->flags & TXN_BLOCKED)
        return MDB_BAD_TXN;
    size_t n = env->maxdbs;
    MDB_txn *t = txn_alloc(n);
    if (!t)
        return ENOMEM;
    t->env = env;
    t->parent = parent;
    t->dbinfo = env->dbinfo;
    t->dirty_cap = 256;
    t->dirty = malloc(t->dirty_cap * sizeof(dirty_entry));
    t->free_pgs = idl_alloc(64);
    t->parent_freed = idl_alloc(16);
    freelist_settle(parent);
    t->reclaimed = idl_copy(parent->reclaimed);
    t->cursors = calloc(n, sizeof(MDB_cursor *));
    if (!t->dirty || !t->free_pgs || !t->parent_freed || !t->reclaimed || !t->cursors) {
        child_free(t);
        return ENOMEM;
    }
    t->dirty[0].pgno = 0;
    t->txnid = parent->txnid;
    t->next_pgno = parent->next_pgno;
    t->first_new = parent->first_new;
    t->pglast = parent->pglast;
    t->oldest = parent->oldest;
    t->numdbs = parent->numdbs;
    /* the parent's handles in use come along; the rest are set up from the env on first
     * use, as the parent would have (it is blocked while we live) */
    t->gen = 1;
    for (MDB_dbi j = 0; j < parent->ntouched; j++) {
        MDB_dbi i = parent->touched[j];
        t->dbgen[i] = t->gen;
        t->touched[t->ntouched++] = i;
        t->dbs[i] = parent->dbs[i];
        t->dbseq[i] = parent->dbseq[i];
        t->dbstate[i] = parent->dbstate[i] & ~(DBS_NEW | DBS_DIRTY);
    }
    int rc = parent_cursors_shadow(parent, t);
    if (rc) {
        child_free(t);
        return rc;
    }
    parent->child = t;
    parent->flags |= TXN_HAS_CHILD;
    /* the child's commit replaces and frees pages of the parent: its saved stacks go */
    txn_pages_changed(parent);
    *out = t;
    return 0;
}

static void detach(MDB_txn *t, int committed)
{
    MDB_txn *p = t->parent;
    p->child = NULL;
    p->flags &= ~TXN_HAS_CHILD;
    shadowed_return(t, committed);
}

void txn_nested_abort(MDB_txn *t)
{
    if (t->child)
        txn_nested_abort(t->child);
    MDB_env *env = t->env;
    /* handles first opened in the child are forgotten with it */
    pthread_mutex_lock(&env->dbi_mutex);
    MDB_txn *p = t->parent;
    for (MDB_dbi j = 0; j < t->ntouched; j++) {
        MDB_dbi i = t->touched[j];
        if (i >= CORE_DBS && (t->dbstate[i] & DBS_NEW) &&
            !(p->dbgen[i] == p->gen && (p->dbstate[i] & DBS_VALID)) &&
            env->dbseq[i] == t->dbseq[i]) {
            dbi_slot_forget(env, i);
        }
    }
    pthread_mutex_unlock(&env->dbi_mutex);
    dirty_release_all(t);
    detach(t, 0);
    child_free(t);
}

int txn_nested_commit(MDB_txn *t)
{
    MDB_txn *p = t->parent;
    int rc = 0;
    /* A live child is committed into us first, as LMDB does (its commit recurses down the
     * chain); if that fails we are aborted too and the caller sees the error. */
    if (t->child && (rc = txn_nested_commit(t->child)) != 0) {
        txn_nested_abort(t);
        return rc;
    }
    shadowed_save(t);
    /* 1. our dirty pages replace the parent's copies or join its list */
    size_t n = t->dirty[0].pgno;
    if ((rc = spill_before_merge(p, n)) != 0) {
        p->flags |= TXN_ERROR; /* a failed write: the parent can only be aborted */
        dirty_release_all(t);
        detach(t, 0);
        child_free(t);
        return rc;
    }
    for (size_t i = 1; i <= n && !rc; i++) {
        page *mine = t->dirty[i].pg;
        page *old = dirty_find(p, t->dirty[i].pgno);
        if (old) {
            dirty_drop(p, t->dirty[i].pgno);
            page_release(t->env, old);
        }
        rc = dirty_add(p, mine);
    }
    if (rc) {
        /* the parent already owns part of our pages: it can only be aborted now */
        p->flags |= TXN_ERROR;
        dirty_disown(t);
        detach(t, 1);
        child_free(t);
        return rc;
    }
    dirty_disown(t); /* the pages are now the parent's */
    /* 2. loose pages travel with their dirty entries; relink them in the parent */
    for (page *lp = t->loose_pgs; lp;) {
        page *next = *(page **)((uint8_t *)lp + PAGEHDRSZ);
        *(page **)((uint8_t *)lp + PAGEHDRSZ) = p->loose_pgs;
        p->loose_pgs = lp;
        p->loose_count++;
        lp = next;
    }
    /* 3. free lists and allocation state */
    for (size_t i = 1; !rc && i <= t->free_pgs[0]; i++)
        rc = idl_append(&p->free_pgs, t->free_pgs[i]);
    if (!rc) {
        freelist_settle(t);
        idl_free(p->reclaimed);
        p->reclaimed = t->reclaimed;
        t->reclaimed = NULL;
        /* (pgno, npages) pairs of ancestor-dirty pages we freed: free them in the parent
         * (after taking over our reclaimed list, which freed runs join) */
        for (size_t i = 1; !rc && i + 1 <= t->parent_freed[0]; i += 2)
            rc = page_free(p, t->parent_freed[i], (unsigned)t->parent_freed[i + 1]);
        p->pglast = t->pglast;
        p->oldest = t->oldest;
        p->next_pgno = t->next_pgno;
        /* 4. records, handle state */
        for (MDB_dbi j = 0; j < t->ntouched; j++) {
            MDB_dbi i = t->touched[j];
            txn_dbi_ready(p, i);
            p->dbs[i] = t->dbs[i];
            uint8_t keep = p->dbstate[i] & (DBS_NEW | DBS_DIRTY);
            p->dbstate[i] = t->dbstate[i] | keep;
            p->dbseq[i] = t->dbseq[i];
        }
        if (t->numdbs > p->numdbs)
            p->numdbs = t->numdbs;
        if (t->flags & TXN_DIRTY)
            p->flags |= TXN_DIRTY;
    } else {
        p->flags |= TXN_ERROR;
    }
    detach(t, 1);
    child_free(t);
    return rc;
}
