/*
 * cursor_track.c -- keeping every open cursor of a write txn on its item while another
 * cursor changes the same tree (layer L5).  This is the only place that knows about it.
 *
 * Method: before a change, each other initialised cursor on the database records the key
 * it stands on (or that it was past the end); after the change it searches for that key
 * again.  If the key is gone the cursor lands on the successor with C_DEL, exactly where a
 * cursor whose own item was deleted lands, so NEXT returns the successor and PREV the
 * predecessor.  On a DUPSORT database the duplicate under the cursor is saved too: if it
 * is gone the cursor lands on the next one (C_DEL), or, when none follows, stays on the
 * key with its duplicate cursor past the end, as the cursor that deleted it does.
 * Splits, merges, root changes and copy-on-write moves are thereby all
 * covered by one rule, at the price of one descent per tracked cursor per change.
 * One exception (track_after_put): a put that allocated, freed and spilled nothing wrote
 * only into the leaf its cursor stands on (and that key's duplicates), so a cursor
 * standing on any other leaf still holds live pages and right indexes, and stays.
 * Invariant: after track_after no cursor holds a pointer to a page that may have been
 * freed or moved.
 */
#include <stdlib.h>

#include "core.h"

int track_save_one(MDB_cursor *c)
{
    c->trk_state = TRK_NONE;
    if (!(c->flags & C_INITIALIZED) || c->snum == 0)
        return 0;
    page *p = c->pg[c->top];
    if (c->ki[c->top] >= PG_NKEYS(p)) {
        c->trk_state = TRK_END;
        return 0;
    }
    node_header *n = PG_NODE(p, c->ki[c->top]);
    if (c->trk_cap < 2 * MDB_MAXKEYSIZE_DEFAULT + 2) {
        /* room for the key and, on a DUPSORT DB, the duplicate under the cursor */
        uint8_t *b = realloc(c->trk_key, 2 * MDB_MAXKEYSIZE_DEFAULT + 2);
        if (!b) {
            c->flags &= ~C_INITIALIZED;
            return ENOMEM;
        }
        c->trk_key = b;
        c->trk_cap = 2 * MDB_MAXKEYSIZE_DEFAULT + 2;
    }
    memcpy(c->trk_key, n->key, n->ksize);
    c->trk_len = n->ksize;
    c->trk_state = TRK_SAVED;
    c->trk_key[2 * MDB_MAXKEYSIZE_DEFAULT + 1] = 0; /* no duplicate saved */
    if (c->xcursor && (n->flags & F_DUPDATA) && (c->xcursor->mc.flags & C_INITIALIZED)) {
        MDB_cursor *x = &c->xcursor->mc;
        MDB_val d;
        if (x->ki[x->top] < PG_NKEYS(x->pg[x->top]) &&
            leaf_key(x, x->pg[x->top], x->ki[x->top], &d) == 0 &&
            d.mv_size <= MDB_MAXKEYSIZE_DEFAULT) {
            memcpy(c->trk_key + MDB_MAXKEYSIZE_DEFAULT, d.mv_data, d.mv_size);
            c->trk_key[2 * MDB_MAXKEYSIZE_DEFAULT] = (uint8_t)(d.mv_size & 0xff);
            c->trk_key[2 * MDB_MAXKEYSIZE_DEFAULT + 1] = (uint8_t)(1 | ((d.mv_size >> 8) << 1));
        }
    } else if (c->xcursor && !(n->flags & (F_DUPDATA | F_BIGDATA | F_SUBDATA)) &&
               node_dsize(n) <= MDB_MAXKEYSIZE_DEFAULT) {
        /* A key's only value is plain node data.  Save it as the duplicate too: a put
         * under this key turns the node into a sub-page, and the cursor must stay on this
         * value rather than land on whichever sorts first. */
        size_t sz = node_dsize(n);
        memcpy(c->trk_key + MDB_MAXKEYSIZE_DEFAULT, node_data(n), sz);
        c->trk_key[2 * MDB_MAXKEYSIZE_DEFAULT] = (uint8_t)(sz & 0xff);
        c->trk_key[2 * MDB_MAXKEYSIZE_DEFAULT + 1] = (uint8_t)(1 | ((sz >> 8) << 1));
    }
    return 0;
}

/* Back on the saved key of a DUPSORT DB: find the saved duplicate (or its successor). */
static int restore_dup(MDB_cursor *c)
{
    int rc = cursor_enter(c, 0);
    uint8_t tag = c->trk_key[2 * MDB_MAXKEYSIZE_DEFAULT + 1];
    if (rc || !(tag & 1) || !(c->xcursor->mc.flags & C_INITIALIZED))
        return rc;
    MDB_cursor *x = &c->xcursor->mc;
    MDB_val d = {c->trk_key[2 * MDB_MAXKEYSIZE_DEFAULT] | ((size_t)(tag >> 1) << 8),
                 c->trk_key + MDB_MAXKEYSIZE_DEFAULT};
    int exact;
    if ((rc = cursor_seek(x, &d, &exact)) != 0)
        return rc;
    if (exact)
        return 0;
    if (x->ki[x->top] < PG_NKEYS(x->pg[x->top]) || cursor_sibling(x, 1) == 0) {
        x->flags |= C_DEL;
        return 0;
    }
    /* The saved value and all after it are gone, the key stays: the cursor stays on it
     * with the duplicate cursor past its end, where the cursor that made the delete
     * stands too (dup_del_inner) and where LMDB 0.9.36 leaves both: NEXT goes on to the
     * next key, PREV to the new last value, PREV_NODUP to the key before, GET_CURRENT
     * answers MDB_NOTFOUND. */
    x->ki[x->top] = (indx_t)PG_NKEYS(x->pg[x->top]);
    x->flags |= C_EOF | C_DEL;
    return 0;
}

int track_restore_one(MDB_cursor *c)
{
    int state = c->trk_state;
    unsigned keep = c->flags & (C_EOF | C_DEL);
    c->trk_state = TRK_NONE;
    if (c->xcursor)
        c->xcursor->mc.flags = C_SUB; /* its pages may be gone: re-entered below */
    if (state == TRK_NONE) {
        c->flags &= ~C_INITIALIZED;
        c->snum = 0;
        return 0;
    }
    int rc;
    if (state == TRK_END) {
        rc = tree_descend(c, NULL, SRCH_LAST);
        if (rc == 0) {
            c->ki[c->top] = (indx_t)PG_NKEYS(c->pg[c->top]);
            c->flags |= C_EOF;
        }
    } else {
        MDB_val k = {c->trk_len, c->trk_key};
        int exact;
        rc = cursor_seek(c, &k, &exact);
        if (rc == 0 && exact) {
            c->flags |= keep;
            if (c->xcursor)
                rc = restore_dup(c);
        } else if (rc == 0) {
            if (c->ki[c->top] >= PG_NKEYS(c->pg[c->top])) {
                rc = cursor_sibling(c, 1);
                if (rc == MDB_NOTFOUND) {
                    c->flags |= C_EOF;
                    rc = 0;
                }
            }
            c->flags |= C_DEL;
            if (rc == 0 && c->xcursor && !(c->flags & C_EOF))
                rc = cursor_enter(c, 0);
        }
    }
    if (rc == MDB_NOTFOUND) {
        c->flags &= ~C_INITIALIZED;
        rc = 0;
    }
    return rc;
}

/* Are there cursors on mc's database other than mc?  (mdb_put's own cursor is in no
 * list, and most puts have no other cursor to keep.)  The answer cannot change in the
 * middle of a change, so track_before and restore_others agree on it. */
static inline int others_open(const MDB_cursor *mc)
{
    MDB_cursor *const *lists = mc->txn->cursors;
    if (!lists || (mc->flags & C_SUB))
        return 0;
    const MDB_cursor *first = lists[mc->dbi];
    return first && (first != mc || first->next);
}

static __attribute__((noinline)) void save_others(MDB_cursor *mc)
{
    MDB_txn *txn = mc->txn;
    /* a change made of several steps (dupsort.c) brackets them all: save once */
    if (txn->track_depth++ > 0)
        return;
    txn->track_pages_gen = txn->pages_gen;
    for (MDB_cursor *c = txn->cursors[mc->dbi]; c; c = c->next)
        if (c != mc)
            track_save_one(c);
}

void track_before(MDB_cursor *mc)
{
    txn_shape_changed(mc->txn);
    if (others_open(mc))
        save_others(mc);
}

/* Put the other cursors back.  After a put that returned put_rc == 0 and moved no page
 * (`put`), those standing on another leaf than mc's keep their place as it is. */
static __attribute__((noinline)) int restore_others(MDB_cursor *mc, int put, int put_rc)
{
    MDB_txn *txn = mc->txn;
    int rc = 0;
    if (--txn->track_depth > 0)
        return 0;
    const page *kept_leaf = NULL;
    if (put && put_rc == 0 && txn->pages_gen == txn->track_pages_gen &&
        (mc->flags & C_INITIALIZED) && mc->snum > 0)
        kept_leaf = mc->pg[mc->top];
    for (MDB_cursor *c = txn->cursors[mc->dbi]; c; c = c->next) {
        if (c == mc)
            continue;
        if (kept_leaf && c->trk_state != TRK_NONE && c->snum > 0 &&
            c->pg[c->top] != kept_leaf) {
            c->trk_state = TRK_NONE;
            continue;
        }
        int r = track_restore_one(c);
        if (r && !rc)
            rc = r;
    }
    return rc;
}

int track_after(MDB_cursor *mc)
{
    return others_open(mc) ? restore_others(mc, 0, 0) : 0;
}

int track_after_put(MDB_cursor *mc, int put_rc)
{
    return others_open(mc) ? restore_others(mc, 1, put_rc) : 0;
}
