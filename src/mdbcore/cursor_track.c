/*
 * cursor_track.c -- keeping every open cursor of a write txn on its item while another
 * cursor changes the same tree (layer L5).  This is the only place that knows about it.
 *
 * Method: before a change, each other initialised cursor on the database records the key
 * it stands on (or that it was past the end); after the change it searches for that key
 * again.  If the key is gone the cursor lands on the successor with C_DEL, exactly where a
 * cursor whose own item was deleted lands, so NEXT returns the successor and PREV the
 * predecessor.  Splits, merges, root changes and copy-on-write moves are thereby all
 * covered by one rule, at the price of one descent per tracked cursor per change.
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
    if (c->trk_cap < n->ksize) {
        uint8_t *b = realloc(c->trk_key, MDB_MAXKEYSIZE_DEFAULT);
        if (!b) {
            c->flags &= ~C_INITIALIZED;
            return ENOMEM;
        }
        c->trk_key = b;
        c->trk_cap = MDB_MAXKEYSIZE_DEFAULT;
    }
    memcpy(c->trk_key, n->key, n->ksize);
    c->trk_len = n->ksize;
    c->trk_state = TRK_SAVED;
    return 0;
}

int track_restore_one(MDB_cursor *c)
{
    int state = c->trk_state;
    unsigned keep = c->flags & (C_EOF | C_DEL);
    c->trk_state = TRK_NONE;
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
        } else if (rc == 0) {
            if (c->ki[c->top] >= PG_NKEYS(c->pg[c->top])) {
                rc = cursor_sibling(c, 1);
                if (rc == MDB_NOTFOUND) {
                    c->flags |= C_EOF;
                    rc = 0;
                }
            }
            c->flags |= C_DEL;
        }
    }
    if (rc == MDB_NOTFOUND) {
        c->flags &= ~C_INITIALIZED;
        rc = 0;
    }
    return rc;
}

void track_before(MDB_cursor *mc)
{
    MDB_txn *txn = mc->txn;
    if (!txn->cursors || (mc->flags & C_SUB))
        return;
    for (MDB_cursor *c = txn->cursors[mc->dbi]; c; c = c->next)
        if (c != mc)
            track_save_one(c);
}

int track_after(MDB_cursor *mc)
{
    MDB_txn *txn = mc->txn;
    int rc = 0;
    if (!txn->cursors || (mc->flags & C_SUB))
        return 0;
    for (MDB_cursor *c = txn->cursors[mc->dbi]; c; c = c->next)
        if (c != mc) {
            int r = track_restore_one(c);
            if (r && !rc)
                rc = r;
        }
    return rc;
}
