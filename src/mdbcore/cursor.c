/*
 * cursor.c -- cursor navigation over non-duplicate trees (layer L3, read path).
 *
 * Cursor states: uninitialised (no C_INITIALIZED); on an item (ki < NKEYS of the top
 * leaf); past the end after a delete (ki == NKEYS, C_EOF); at the end after NEXT ran out
 * (ki on the last item, C_EOF).  C_DEL means the item under the cursor moved into place
 * because the previous one was deleted, so the next NEXT must not skip it.
 * Sorted-duplicate navigation (issue 3) plugs in at the *_DUP / *_MULTIPLE cases.
 */
#include "core.h"

int node_read(MDB_cursor *mc, node_header *n, MDB_val *data)
{
    size_t ds = node_dsize(n);
    if (!(n->flags & F_BIGDATA)) {
        data->mv_size = ds;
        data->mv_data = node_data(n);
        return 0;
    }
    MDB_txn *txn = mc->txn;
    MDB_env *env = txn->env;
    pgno_t pg;
    memcpy(&pg, node_data(n), sizeof(pg));
    page *op;
    int rc = page_get(txn, pg, &op);
    if (rc)
        return rc;
    if (!(op->flags & P_OVERFLOW))
        return CORRUPT_AT(pg);
    uint64_t npages = op->u.overflow_pages;
    if (npages == 0 || npages * env->psize - PAGEHDRSZ < ds)
        return CORRUPT_AT(pg);
    if (!(op->flags & P_DIRTY)) {
        if (pg + npages > txn->next_pgno || pg + npages > env->maxpg)
            return CORRUPT_AT(pg);
        if (pg + npages > env->file_pages) {
            datafile_refresh_size(env);
            if (pg + npages > env->file_pages)
                return CORRUPT_AT(pg);
        }
    }
    data->mv_size = ds;
    data->mv_data = (uint8_t *)op + PAGEHDRSZ;
    return 0;
}

int cursor_node(MDB_cursor *mc, node_header **out)
{
    if (!(mc->flags & C_INITIALIZED) || mc->snum == 0)
        return MDB_NOTFOUND;
    page *p = mc->pg[mc->top];
    if (mc->ki[mc->top] >= PG_NKEYS(p))
        return MDB_NOTFOUND;
    int rc = node_check(mc->txn->env, p, mc->ki[mc->top]);
    if (rc)
        return rc;
    *out = PG_NODE(p, mc->ki[mc->top]);
    return 0;
}

static int fetch(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    node_header *n;
    int rc = cursor_node(mc, &n);
    if (rc)
        return rc;
    if (key)
        node_key(n, key);
    if (data)
        return node_read(mc, n, data);
    return 0;
}

static int go_first(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    int rc = tree_descend(mc, NULL, SRCH_FIRST);
    if (rc)
        return rc;
    if (PG_NKEYS(mc->pg[mc->top]) == 0) {
        mc->flags &= ~C_INITIALIZED;
        return MDB_NOTFOUND;
    }
    return fetch(mc, key, data);
}

static int go_last(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    int rc = tree_descend(mc, NULL, SRCH_LAST);
    if (rc)
        return rc;
    if (PG_NKEYS(mc->pg[mc->top]) == 0) {
        mc->flags &= ~C_INITIALIZED;
        return MDB_NOTFOUND;
    }
    return fetch(mc, key, data);
}

static int go_next(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    if (!(mc->flags & C_INITIALIZED))
        return go_first(mc, key, data);
    page *p = mc->pg[mc->top];
    if (mc->flags & C_EOF) {
        /* still at the end unless items were appended to this page meanwhile (LMDB) */
        if ((unsigned)mc->ki[mc->top] + 1 >= PG_NKEYS(p))
            return MDB_NOTFOUND;
        mc->flags &= ~C_EOF;
    }
    if (mc->flags & C_DEL) {
        mc->flags &= ~C_DEL;
        if (mc->ki[mc->top] < PG_NKEYS(p))
            return fetch(mc, key, data);
    } else if ((unsigned)mc->ki[mc->top] + 1 < PG_NKEYS(p)) {
        mc->ki[mc->top]++;
        return fetch(mc, key, data);
    }
    int rc = cursor_sibling(mc, 1);
    if (rc == MDB_NOTFOUND)
        mc->flags |= C_EOF; /* ki stays where it was, so PREV steps back from there */
    if (rc)
        return rc;
    return fetch(mc, key, data);
}

static int go_prev(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    if (!(mc->flags & C_INITIALIZED))
        return go_last(mc, key, data);
    mc->flags &= ~(C_EOF | C_DEL);
    if (mc->ki[mc->top] > 0) {
        mc->ki[mc->top]--;
        return fetch(mc, key, data);
    }
    int rc = cursor_sibling(mc, 0);
    if (rc)
        return rc;
    return fetch(mc, key, data);
}

static int go_set(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
    if (!key)
        return EINVAL;
    if (key->mv_size == 0 || key->mv_size > mc->txn->env->maxkeysize)
        return MDB_BAD_VALSIZE;
    /* A miss leaves the cursor positioned at the insertion point, as LMDB's does: NEXT
     * then moves past the item found there, PREV to the one before it. */
    int exact, rc = cursor_seek(mc, key, &exact);
    if (rc)
        return rc;
    if (op != MDB_SET_RANGE && !exact)
        return MDB_NOTFOUND;
    if (mc->ki[mc->top] >= PG_NKEYS(mc->pg[mc->top])) {
        rc = cursor_sibling(mc, 1);
        if (rc) {
            if (rc == MDB_NOTFOUND)
                mc->flags |= C_EOF;
            return rc;
        }
    }
    if (op == MDB_SET)
        return fetch(mc, NULL, data);
    return fetch(mc, key, data);
}

int cursor_get(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
    switch (op) {
    case MDB_FIRST:
        return go_first(mc, key, data);
    case MDB_LAST:
        return go_last(mc, key, data);
    case MDB_NEXT:
    case MDB_NEXT_NODUP:
        return go_next(mc, key, data);
    case MDB_PREV:
    case MDB_PREV_NODUP:
        return go_prev(mc, key, data);
    case MDB_GET_CURRENT:
        if (!(mc->flags & C_INITIALIZED))
            return EINVAL;
        mc->flags &= ~C_DEL; /* the item is now seen: NEXT moves past it (as LMDB) */
        return fetch(mc, key, data);
    case MDB_SET:
    case MDB_SET_KEY:
    case MDB_SET_RANGE:
        return go_set(mc, key, data, op);
    case MDB_NEXT_DUP:
    case MDB_PREV_DUP:
        /* a key without duplicates has no next/previous duplicate */
        if (!(mc->flags & C_INITIALIZED))
            return EINVAL;
        return MDB_NOTFOUND;
    case MDB_FIRST_DUP:
    case MDB_LAST_DUP:
        if (!(mc->flags & C_INITIALIZED))
            return EINVAL;
        return MDB_INCOMPATIBLE;
    case MDB_GET_BOTH:
    case MDB_GET_BOTH_RANGE:
        if (!data || !key)
            return EINVAL;
        return MDB_INCOMPATIBLE;
    case MDB_GET_MULTIPLE:
    case MDB_NEXT_MULTIPLE:
    case MDB_PREV_MULTIPLE:
        if (!data)
            return EINVAL;
        return MDB_INCOMPATIBLE;
    default:
        return EINVAL;
    }
}
