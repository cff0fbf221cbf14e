/*
 * cursor_touch.c -- making every page on a cursor's path writable before a change through
 * it (layer L4, on page_cow.c).
 *
 * Invariant: on return every page of mc->pg[0..snum) is dirty in mc's txn, each parent's
 * child pointer (or the database record's root) names the copy, and the database is
 * marked DBS_DIRTY.  A sub-page inline in a leaf node (mc->inline_root) is left alone: it
 * lives inside its (now writable) leaf.
 */
#include "core.h"

/* (core.h's cursor_touch has stepped over a top-level txn's dirty prefix already) */
int cursor_touch_from(MDB_cursor *mc, unsigned from)
{
    MDB_txn *txn = mc->txn;
    for (unsigned i = from; i < mc->snum; i++) {
        page *p = mc->pg[i];
        if (page_writable(txn, p) || p == mc->inline_root)
            continue;
        page *np;
        int rc = page_make_writable(txn, p, &np);
        if (rc)
            return rc;
        if (i == 0)
            mc->db->root = np->pgno;
        else
            node_set_child(PG_NODE(mc->pg[i - 1], mc->ki[i - 1]), np->pgno);
        mc->pg[i] = np;
    }
    *mc->dbstate |= DBS_DIRTY;
    return 0;
}
