/*
 * cursor_touch.c -- making every page on a cursor's path writable before a change through
 * it (layer L4, on page_cow.c).
 *
 * Invariant: on return every page of mc->pg[0..snum) is dirty in mc's txn, each parent's
 * child pointer (or the database record's root) names the copy, and the database is
 * marked DBS_DIRTY.  A sub-page inline in a leaf node (mc->inline_root) is left alone: it
 * lives inside its (now writable) leaf.  The duplicate cursor of mc, when it reads a
 * sub-page of the leaf that was copied, is moved to the same place in the copy (it reads
 * sub-pages in place; rebase_subpage).  A named database's first touch in a txn may also
 * copy MAIN's path to its record (touch_db_record): a placement choice only, the commit
 * copies whatever is still clean.
 */
#include "core.h"

/* A named database's first change in a txn: the commit will rewrite its record in MAIN
 * (dbi_save_all), copying MAIN's path then, onto new pages at the end of the file.  The
 * next commit reads that leaf again through the map, and a new page there is a page
 * fault the kernel's fault-around did not cover.  Copied now, the path takes pages the
 * free list has just given back, which this process has mapped already (LMDB also copies
 * it at the first change).  Not while a caller's cursor is open on MAIN (it would keep
 * pointing at the old page), nor where cursor_early_copy_ok says no; the commit copies
 * the path then, as before.  (An empty MAIN: tree_descend's MDB_NOTFOUND.) */
static int touch_db_record(MDB_txn *txn, MDB_dbi dbi)
{
    MDB_env *env = txn->env;
    if (!cursor_early_copy_ok(txn) || (txn->cursors && txn->cursors[MAIN_DBI]) ||
        txn->dbseq[dbi] != env->dbseq[dbi])
        return 0;
    MDB_cursor m2;
    cursor_init(&m2, txn, MAIN_DBI);
    m2.flags |= C_UNTRACK;
    int rc = tree_descend(&m2, &env->dbinfo[dbi].name, SRCH_KEY);
    if (rc)
        return rc == MDB_NOTFOUND ? 0 : rc;
    return cursor_touch(&m2);
}

/* The leaf `from` was copied to `to` (same bytes): a duplicate cursor reading a sub-page
 * inside it follows, so that it sees the writes about to go into the copy. */
static void rebase_subpage(MDB_cursor *mc, const page *from, page *to)
{
    MDB_cursor *x = &mc->xcursor->mc;
    const uint8_t *sp = (const uint8_t *)x->inline_root, *base = (const uint8_t *)from;
    if (!sp || sp < base || sp >= base + mc->txn->env->psize)
        return;
    page *moved = (page *)((uint8_t *)to + (sp - base));
    if (x->snum && x->pg[0] == x->inline_root)
        x->pg[0] = moved;
    x->inline_root = moved;
}

/* (core.h's cursor_touch has stepped over a top-level txn's dirty prefix already) */
int cursor_touch_from(MDB_cursor *mc, unsigned from)
{
    MDB_txn *txn = mc->txn;
    if (mc->dbi >= CORE_DBS && !(*mc->dbstate & DBS_DIRTY) && !(mc->flags & C_SUB)) {
        int rc = touch_db_record(txn, mc->dbi);
        if (rc)
            return rc;
    }
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
        if (mc->xcursor && i + 1 == mc->snum)
            rebase_subpage(mc, p, np);
        mc->pg[i] = np;
    }
    *mc->dbstate |= DBS_DIRTY;
    return 0;
}
