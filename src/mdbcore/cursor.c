/*
 * cursor.c -- cursor navigation (layer L3, read path), including moves inside the sorted
 * duplicates of a key (their shapes: docs/design.md#duplicates-sub-pages-and-sub-trees;
 * writes to them are in dupsort.c).
 *
 * Cursor states: uninitialised (no C_INITIALIZED); on an item (ki < NKEYS of the top
 * leaf); past the end after a delete (ki == NKEYS, C_EOF); at the end after NEXT ran out
 * (C_EOF, ki unchanged).  C_DEL means the item under the cursor moved into place because
 * the previous one was deleted, so the next NEXT must not skip it.  A miss of SET leaves
 * the cursor initialised at the insertion point, as LMDB does; on a DUPSORT database it
 * also marks it C_XUNSET (no duplicate position, see objects.h) until it enters an item.
 * cursor_init, cursor_seek and cursor_sibling (below) are the positioning primitives the
 * write path uses too; cursor_get the moves of the API.
 * Duplicates: when the cursor stands on a node with F_DUPDATA, its xcursor walks the
 * sub-page (inline root) or sub-tree of that node; the value reported is the sub-cursor's
 * key.  Entering a node positions the sub-cursor on its first (moving forward) or last
 * (moving backward) duplicate.
 */
#include "core.h"

/* Every field but the page stack, which is only read below snum (0 here): mdb_get and
 * mdb_put set a cursor up per call, and clearing 320 bytes of stack each time shows. */
void cursor_init(MDB_cursor *mc, MDB_txn *txn, MDB_dbi dbi)
{
    mc->next = NULL;
    mc->xcursor = NULL;
    mc->txn = txn;
    mc->dbi = dbi;
    mc->db = &txn->dbs[dbi];
    mc->dbinfo = &txn->dbinfo[dbi];
    mc->dbstate = &txn->dbstate[dbi];
    mc->snum = 0;
    mc->top = 0;
    mc->flags = 0;
    mc->pg[0] = NULL;
    mc->ki[0] = 0;
    mc->trk_key = NULL;
    mc->trk_len = 0;
    mc->trk_cap = 0;
    mc->trk_state = 0;
    mc->inline_root = NULL;
    mc->inline_size = 0;
    mc->shadow = NULL;
}

int cursor_seek(MDB_cursor *mc, const MDB_val *key, int *exact)
{
    int rc = tree_descend(mc, key, SRCH_KEY);
    if (rc)
        return rc;
    return leaf_search(mc, key, exact);
}

/* Whether a descent for `key` would take the cursor's own path down to its leaf: at every
 * branch level the key sorts at or after the separator of the child taken and before the
 * next one's (branch_pick's choice). */
static int path_leads_here(const MDB_cursor *mc, const MDB_val *key, MDB_cmp_func *cmp)
{
    size_t psize = mc->txn->env->psize;
    if (mc->snum != mc->db->depth || mc->pg[0]->pgno != mc->db->root)
        return 0;
    for (unsigned l = 0; l < mc->top; l++) {
        page *p = mc->pg[l];
        unsigned i = mc->ki[l], nk = PG_NKEYS(p);
        MDB_val sep;
        if (i > 0) {
            if (node_check_in(p, i, psize))
                return 0;
            node_key(PG_NODE(p, i), &sep);
            if (cmp_keys(cmp, key, &sep) < 0)
                return 0;
        }
        if (i + 1 < nk) {
            if (node_check_in(p, i + 1, psize))
                return 0;
            node_key(PG_NODE(p, i + 1), &sep);
            if (cmp_keys(cmp, key, &sep) >= 0)
                return 0;
        }
    }
    return 1;
}

/* A put through a cursor that a get has just left on the same key (slapd's index updates
 * do that for every value), or a write txn's get of the key its cursor is on, needs no
 * descent; nor does a key that lies within the cursor's leaf: after the item under the
 * cursor and up to the leaf's last key, or before it and from the leaf's first key (a get
 * that missed left the cursor where the put goes; LMDB's lookup checks the first and last
 * keys of its leaf too).  A key beyond the leaf's first or last key goes there only if
 * the separators on the cursor's path say so (path_leads_here), else a descent finds it.
 * For write cursors: their leaf was just used; on a random read lookup these lines are
 * cold and the checks cost more than they save (seekrandom lost 11% to them).  An
 * internal C_UNTRACK cursor kept across other writes may hold a dead stack: it searches. */
int cursor_seek_here(MDB_cursor *mc, const MDB_val *key, int *exact)
{
    if ((mc->flags & (C_INITIALIZED | C_SUB | C_EOF | C_DEL | C_UNTRACK)) != C_INITIALIZED ||
        !mc->snum)
        return cursor_seek(mc, key, exact);
    page *leaf = mc->pg[mc->top];
    unsigned nk = PG_NKEYS(leaf), ki = mc->ki[mc->top];
    if (!IS_LEAF(leaf) || (leaf->flags & P_LEAF2) || nk == 0 || ki > nk)
        return cursor_seek(mc, key, exact);
    MDB_cmp_func *cmp = cursor_cmp(mc);
    MDB_val k;
    unsigned at = ki < nk ? ki : nk - 1; /* (past the end after a miss: from the last) */
    if (leaf_key(mc, leaf, at, &k))
        return cursor_seek(mc, key, exact);
    int c = cmp_keys(cmp, key, &k);
    if (c == 0) {
        mc->ki[mc->top] = (indx_t)at;
        *exact = 1;
        return 0;
    }
    /* the key sorts in [lo, hi) of this leaf, or past one of its ends (edge) */
    unsigned lo, hi, edge;
    unsigned end = c < 0 ? 0 : nk - 1;
    if (c < 0 ? at == 0 : at + 1 >= nk) {
        edge = c < 0 ? 0 : nk;
    } else {
        if (leaf_key(mc, leaf, end, &k))
            return cursor_seek(mc, key, exact);
        int ce = cmp_keys(cmp, key, &k);
        if (ce == 0) {
            mc->ki[mc->top] = (indx_t)end;
            *exact = 1;
            return 0;
        }
        if (c < 0 ? ce > 0 : ce < 0) {
            lo = c < 0 ? 1 : at + 1;
            hi = c < 0 ? at : nk - 1;
            return leaf_search_in(mc, key, lo, hi, exact);
        }
        edge = c < 0 ? 0 : nk;
    }
    if (!path_leads_here(mc, key, cmp))
        return cursor_seek(mc, key, exact);
    mc->ki[mc->top] = (indx_t)edge;
    *exact = 0;
    return 0;
}

int cursor_sibling(MDB_cursor *mc, int right)
{
    if (mc->snum < 2)
        return MDB_NOTFOUND;
    int level = mc->top - 1;
    while (level >= 0) {
        unsigned nk = PG_NKEYS(mc->pg[level]);
        if (right ? (unsigned)mc->ki[level] + 1 < nk : mc->ki[level] > 0)
            break;
        level--;
    }
    if (level < 0)
        return MDB_NOTFOUND;
    mc->ki[level] = (indx_t)(mc->ki[level] + (right ? 1 : -1));
    for (int l = level; l < mc->top; l++) {
        page *p = mc->pg[l];
        int rc = node_check(mc->txn->env, p, mc->ki[l]);
        if (rc)
            return rc;
        pgno_t pg = node_child(PG_NODE(p, mc->ki[l]));
        page *c;
        if ((rc = page_get(mc->txn, pg, &c)) != 0)
            return rc;
        int want_leaf = (l + 1 == mc->top);
        if ((c->flags & P_OVERFLOW) || (IS_LEAF(c) != want_leaf) || PG_NKEYS(c) == 0)
            return CORRUPT_AT(pg);
        mc->pg[l + 1] = c;
        mc->ki[l + 1] = (indx_t)(right ? 0 : PG_NKEYS(c) - 1);
    }
    return 0;
}

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
        if (pg + npages > txn->next_pgno || pg + npages > env_maxpg(env))
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
    if (p->flags & P_LEAF2)
        return CORRUPT_AT(p->pgno); /* callers wanting nodes never walk packed pages */
    size_t limit = (p == mc->inline_root) ? mc->inline_size : mc->txn->env->psize;
    int rc = node_check_in(p, mc->ki[mc->top], limit);
    if (rc)
        return rc;
    *out = PG_NODE(p, mc->ki[mc->top]);
    return 0;
}

void cursor_attach_x(MDB_cursor *mc, struct xcursor *x)
{
    memset(x, 0, sizeof(*x));
    mc->xcursor = x;
    x->mc.txn = mc->txn;
    x->mc.dbi = mc->dbi;
    x->mc.db = &x->db;
    x->mc.dbinfo = &x->info;
    x->mc.dbstate = &x->state;
    x->mc.flags = C_SUB;
    x->info.cmp = mc->dbinfo->dcmp ? mc->dbinfo->dcmp : cmp_lex;
    x->state = DBS_VALID;
}

/* Point the sub-cursor at the duplicates of node n (not yet positioned). */
int xcursor_load(MDB_cursor *mc, node_header *n)
{
    struct xcursor *x = mc->xcursor;
    size_t ds = node_dsize(n);
    x->mc.txn = mc->txn;
    x->mc.flags = C_SUB;
    x->info.cmp = mc->dbinfo->dcmp ? mc->dbinfo->dcmp : cmp_lex;
    if (n->flags & F_BIGDATA)
        return CORRUPT_AT(mc->pg[mc->top]->pgno);
    if (n->flags & F_SUBDATA) {
        if (ds != sizeof(db_record))
            return CORRUPT_AT(mc->pg[mc->top]->pgno);
        memcpy(&x->db, node_data(n), sizeof(db_record));
        if (x->db.root == P_INVALID || x->db.depth == 0 || x->db.depth > CURSOR_STACK ||
            x->db.root >= mc->txn->next_pgno)
            return CORRUPT_AT(mc->pg[mc->top]->pgno);
        x->mc.inline_root = NULL;
        return 0;
    }
    /* Read in place (page_header has alignment 1, so any offset is fine): what is
     * returned from here points into the leaf, as long-lived as the leaf's own values.
     * The caller checked that the node's data lies inside its page (node_check_in). */
    if (ds < PAGEHDRSZ || ds > mc->txn->env->psize)
        return CORRUPT_AT(mc->pg[mc->top]->pgno);
    page *sp = (page *)node_data(n);
    unsigned lo = sp->u.bounds.lower, up = sp->u.bounds.upper;
    if (!(sp->flags & P_LEAF) || !(sp->flags & P_SUBP) || lo < PAGEHDRSZ || (lo & 1) ||
        lo > up || lo == PAGEHDRSZ ||
        ((sp->flags & P_LEAF2) ? !leaf2_bounds_ok(sp, ds) : up > ds))
        return CORRUPT_AT(mc->pg[mc->top]->pgno);
    memset(&x->db, 0, sizeof(x->db));
    x->db.pad = sp->leaf2_ksize;
    x->db.depth = 1;
    x->db.leaf_pages = 1;
    x->db.entries = PG_NKEYS(sp);
    x->db.root = P_INVALID;
    x->mc.inline_root = sp;
    x->mc.inline_size = (unsigned)ds;
    return 0;
}

static int fetch(MDB_cursor *mc, MDB_val *key, MDB_val *data);
static int go_first(MDB_cursor *mc, MDB_val *key, MDB_val *data);
static int go_last(MDB_cursor *mc, MDB_val *key, MDB_val *data);
static int go_next(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op);
static int go_prev(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op);

/* The main cursor just arrived on an item: set up its duplicates, if any. */
int cursor_enter(MDB_cursor *mc, int at_last)
{
    if (!mc->xcursor)
        return 0;
    struct xcursor *x = mc->xcursor;
    x->mc.flags = C_SUB;
    mc->flags &= ~C_XUNSET;
    node_header *n;
    int rc = cursor_node(mc, &n);
    if (rc)
        return rc == MDB_NOTFOUND ? 0 : rc;
    if (!(n->flags & F_DUPDATA))
        return 0;
    if ((rc = xcursor_load(mc, n)) != 0)
        return rc;
    if (x->mc.inline_root) {
        /* A walk is about to read the sub-page's nodes one by one, from its last byte
         * down (nodes are laid out from the end): ask for all its lines now, as the copy
         * this replaced did by streaming through it.  Without this a warm DUPSORT scan
         * (16 values of 100 bytes a key) took 44 ms of user time a million records, 35
         * with the copy.  (A hint only: a prefetch never faults.) */
        const uint8_t *b = (const uint8_t *)x->mc.inline_root;
        for (unsigned off = 0; off < x->mc.inline_size; off += 64)
            __builtin_prefetch(b + off);
    }
    rc = at_last ? go_last(&x->mc, NULL, NULL) : go_first(&x->mc, NULL, NULL);
    return rc == MDB_NOTFOUND ? CORRUPT_AT(mc->pg[mc->top]->pgno) : rc;
}

/* FIRST_DUP / LAST_DUP when the duplicate cursor already reads the values of node n (the
 * item under the cursor) from a single page: a sub-page, or a sub-tree of one leaf.  The
 * end is then an index on that page, so the values are not loaded and descended again.
 * What cursor_enter would leave: initialised, on the first or the last value, the end
 * mark after the last (as LMDB's mdb_cursor_last, which does not search a one-page tree
 * either).  That the sub-cursor reads n's values is checked, not assumed: an internal
 * seek (cursor_seek) moves the main cursor without resetting it. */
static __attribute__((noinline)) int dups_end_here(MDB_cursor *mc, node_header *n, int last)
{
    struct xcursor *xc = mc->xcursor;
    MDB_cursor *x = &xc->mc;
    if ((x->flags & C_INITIALIZED) == 0 || x->snum != 1)
        return 0;
    page *p = x->pg[0];
    if (n->flags & F_SUBDATA) {
        db_record rec;
        if (x->inline_root || node_dsize(n) != sizeof(rec))
            return 0;
        memcpy(&rec, node_data(n), sizeof(rec));
        if (memcmp(&rec, &xc->db, sizeof(rec)) != 0 || rec.depth != 1 || p->pgno != rec.root)
            return 0;
    } else if (p != x->inline_root || p != (page *)node_data(n) ||
               x->inline_size != node_dsize(n)) {
        return 0;
    }
    unsigned nk = PG_NKEYS(p);
    if (nk == 0 || !IS_LEAF(p))
        return 0;
    x->ki[0] = (indx_t)(last ? nk - 1 : 0);
    x->top = 0;
    x->flags = C_SUB | C_INITIALIZED | (last ? C_EOF : 0);
    return 1;
}

/* 1 when the cursor stands, after a missed exact lookup, on a key with duplicates: the
 * calls that need a duplicate position answer EINVAL there (LMDB 0.9.36). */
int cursor_x_unset(MDB_cursor *mc)
{
    node_header *n;
    return (mc->flags & C_XUNSET) && mc->xcursor && cursor_node(mc, &n) == 0 &&
           (n->flags & F_DUPDATA);
}

/* Whether a cursor put of the new key `key` keeps the cursor's end mark, as LMDB's does:
 * its lookup answers from the page the cursor stands on without a search (which would
 * clear the mark) when the key sorts after that page's last key and no page follows it,
 * or before its first key and the tree is that one page. */
int cursor_put_keeps_eof(MDB_cursor *mc, const MDB_val *key)
{
    if (mc->db->root == P_INVALID)
        return 1; /* LMDB makes the new root without a lookup */
    if (!(mc->flags & C_INITIALIZED) || mc->snum == 0)
        return 0;
    page *p = mc->pg[mc->top];
    unsigned nk = PG_NKEYS(p);
    MDB_val first, last;
    if (nk == 0)
        return 1; /* LMDB answers from the empty page at once */
    if (leaf_key(mc, p, 0, &first) || leaf_key(mc, p, nk - 1, &last))
        return 0;
    MDB_cmp_func *cmp = cursor_cmp(mc);
    if (cmp_keys(cmp, key, &first) < 0)
        return mc->top == 0;
    if (cmp_keys(cmp, key, &last) <= 0)
        return 0;
    for (unsigned i = 0; i < mc->top; i++)
        if ((unsigned)mc->ki[i] + 1 < PG_NKEYS(mc->pg[i]))
            return 0;
    return 1;
}

static int on_dups(MDB_cursor *mc)
{
    node_header *n;
    return mc->xcursor && cursor_node(mc, &n) == 0 && (n->flags & F_DUPDATA) &&
           (mc->xcursor->mc.flags & C_INITIALIZED);
}

static int fetch(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    page *p = mc->pg[mc->top];
    if (!(mc->flags & C_INITIALIZED) || mc->snum == 0 || mc->ki[mc->top] >= PG_NKEYS(p))
        return MDB_NOTFOUND;
    if (p->flags & P_LEAF2) { /* a DUPFIXED sub-cursor: keys only */
        if (key)
            leaf_key(mc, p, mc->ki[mc->top], key);
        if (data)
            data->mv_size = 0, data->mv_data = NULL;
        return 0;
    }
    node_header *n;
    int rc = cursor_node(mc, &n);
    if (rc)
        return rc;
    if (key)
        node_key(n, key);
    if (!data)
        return 0;
    if (mc->xcursor && (n->flags & F_DUPDATA)) {
        struct xcursor *x = mc->xcursor;
        if (!(x->mc.flags & C_INITIALIZED) && (rc = cursor_enter(mc, 0)) != 0)
            return rc;
        return fetch(&x->mc, data, NULL);
    }
    return node_read(mc, n, data);
}

/* The common case fetch_plain serves: a main cursor on a DB without duplicates, on a
 * node page. */
static inline int plain_item(const MDB_cursor *mc)
{
    return !mc->xcursor && !(mc->flags & C_SUB) && !(mc->pg[mc->top]->flags & P_LEAF2);
}

/* fetch for an initialised cursor in plain_item's case, with the same checks and none
 * twice: scans and seeks take this path per item. */
static inline __attribute__((always_inline)) int fetch_plain(MDB_cursor *mc, MDB_val *key,
                                                              MDB_val *data)
{
    page *p = mc->pg[mc->top];
    unsigned i = mc->ki[mc->top];
    if (i >= PG_NKEYS(p))
        return MDB_NOTFOUND;
    int rc = node_check_in(p, i, mc->txn->env->psize);
    if (rc)
        return rc;
    node_header *n = PG_NODE(p, i);
    if (key)
        node_key(n, key);
    if (!data)
        return 0;
    if (n->flags & F_BIGDATA)
        return node_read(mc, n, data);
    data->mv_size = node_dsize(n);
    data->mv_data = node_data(n);
    return 0;
}

/* To the first (last 0) or the last (last 1) record of the tree. */
static int go_end(MDB_cursor *mc, MDB_val *key, MDB_val *data, int last)
{
    int rc = tree_descend(mc, NULL, last ? SRCH_LAST : SRCH_FIRST);
    if (rc)
        return rc;
    if (PG_NKEYS(mc->pg[mc->top]) == 0) {
        mc->flags &= ~C_INITIALIZED;
        return MDB_NOTFOUND;
    }
    if ((rc = cursor_enter(mc, last)) != 0)
        return rc;
    if (last)
        mc->flags |= C_EOF; /* as LMDB: NEXT right after LAST reports the end */
    /* entering duplicates asks for no record: the item is checked when it is read */
    return (key || data) ? fetch(mc, key, data) : 0;
}

static int go_first(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    return go_end(mc, key, data, 0);
}

static int go_last(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
    return go_end(mc, key, data, 1);
}

#define SCAN_PREFETCH_AHEAD 8

/* A scan's usual step, NEXT or PREV onto the item beside this one on the same leaf, for
 * a plain cursor with no pending delete or end mark: exactly what go_next and go_prev do
 * in that state, minus their tests.  Taken before their calls (cursor_get), so a scan's
 * step is one call deep.  1 if it stepped; 0 (nothing changed) for the general path. */
static inline int step_in_leaf(MDB_cursor *mc, int forward)
{
    if ((mc->flags & (C_INITIALIZED | C_EOF | C_DEL)) != C_INITIALIZED || !plain_item(mc))
        return 0;
    unsigned i = mc->ki[mc->top];
    if (forward ? i + 1 >= PG_NKEYS(mc->pg[mc->top]) : i == 0)
        return 0;
    mc->ki[mc->top] = (indx_t)(forward ? i + 1 : i - 1);
    /* Start loading the node SCAN_PREFETCH_AHEAD steps on.  The CPU's prefetcher does not
     * follow a scan's nodes: a leaf filled in key order holds them at falling addresses,
     * one filled at random in any order.  Measured on 1M records of 100 bytes, a warm
     * forward scan takes 16 ns a record with it, 21 without (8 to 16 ahead are alike).
     * (A hint only: a prefetch never faults, even from a corrupt slot.) */
    page *p = mc->pg[mc->top];
    unsigned ahead = forward ? i + SCAN_PREFETCH_AHEAD : i - SCAN_PREFETCH_AHEAD;
    if (ahead < PG_NKEYS(p))
        __builtin_prefetch((const uint8_t *)p + p->slots[ahead]);
    return 1;
}

static int go_next(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
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
    if ((mc->flags & C_DEL) && op == MDB_NEXT_DUP)
        return MDB_NOTFOUND; /* the key we stood on is gone */
    if (op == MDB_NEXT_DUP && !mc->xcursor)
        op = MDB_NEXT; /* LMDB 0.9: without DUPSORT, NEXT_DUP steps on like NEXT */
    if ((mc->flags & C_DEL) && mc->xcursor &&
        !(on_dups(mc) && !(mc->xcursor->mc.flags & C_DEL))) {
        /* a delete already moved us onto the next key: report it, do not skip it.  (A
         * cursor put refused by MDB_NOOVERWRITE keeps the mark but stands on the key's
         * first duplicate, unmarked: NEXT steps through the duplicates, as in LMDB.) */
        mc->flags &= ~C_DEL;
        if (mc->ki[mc->top] < PG_NKEYS(p))
            return fetch(mc, key, data);
    }
    if (op != MDB_NEXT_NODUP && on_dups(mc)) {
        int rc = go_next(&mc->xcursor->mc, NULL, NULL, MDB_NEXT);
        if (rc != MDB_NOTFOUND)
            return rc ? rc : fetch(mc, key, data);
        if (op == MDB_NEXT_DUP)
            return rc;
    } else if (op == MDB_NEXT_DUP) {
        return MDB_NOTFOUND;
    }
    int rc;
    if (mc->flags & C_DEL) {
        mc->flags &= ~C_DEL;
        if (mc->ki[mc->top] < PG_NKEYS(p))
            goto arrived;
    } else if ((unsigned)mc->ki[mc->top] + 1 < PG_NKEYS(p)) {
        mc->ki[mc->top]++;
        goto arrived;
    }
    rc = cursor_sibling(mc, 1);
    if (rc == MDB_NOTFOUND)
        mc->flags |= C_EOF; /* ki stays where it was, so PREV steps back from there */
    if (rc)
        return rc;
arrived:
    if (plain_item(mc))
        return fetch_plain(mc, key, data);
    if ((rc = cursor_enter(mc, 0)) != 0)
        return rc;
    return fetch(mc, key, data);
}

static int go_prev(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
    if (op == MDB_PREV_DUP && !mc->xcursor)
        op = MDB_PREV; /* as go_next: LMDB 0.9 steps to the previous item */
    /* A cursor standing on no item -- unpositioned, or past the end after its last item was
     * deleted -- has no duplicates to step back through: PREV_DUP acts as PREV there and
     * lands on the last value of the item before (LMDB 0.9.36; 0.9.24 answered NOTFOUND,
     * docs/compat.md) */
    if (!(mc->flags & C_INITIALIZED)) {
        /* LMDB goes to the last item and steps back from past it, which clears the end
         * mark LAST sets (a cursor put after this must not find it) */
        int rc = go_last(mc, key, data);
        mc->flags &= ~C_EOF;
        return rc;
    }
    if (op == MDB_PREV_DUP && mc->ki[mc->top] >= PG_NKEYS(mc->pg[mc->top]))
        op = MDB_PREV;
    if (op != MDB_PREV_NODUP && on_dups(mc)) {
        int rc = go_prev(&mc->xcursor->mc, NULL, NULL, MDB_PREV);
        if (rc == 0)
            mc->flags &= ~C_EOF;
        if (rc != MDB_NOTFOUND)
            return rc ? rc : fetch(mc, key, data);
        if (op == MDB_PREV_DUP)
            return rc;
    } else if (op == MDB_PREV_DUP) {
        return MDB_NOTFOUND;
    }
    mc->flags &= ~(C_EOF | C_DEL);
    int rc;
    if (mc->ki[mc->top] > 0) {
        mc->ki[mc->top]--;
    } else if ((rc = cursor_sibling(mc, 0)) != 0) {
        return rc;
    }
    if (plain_item(mc))
        return fetch_plain(mc, key, data);
    if ((rc = cursor_enter(mc, 1)) != 0)
        return rc;
    return fetch(mc, key, data);
}

/* GET_BOTH / GET_BOTH_RANGE once the key matched exactly. */
static int match_data(MDB_cursor *mc, MDB_val *data, MDB_cursor_op op)
{
    node_header *n;
    int rc = cursor_node(mc, &n);
    if (rc)
        return rc;
    if (mc->xcursor && (n->flags & F_DUPDATA)) {
        struct xcursor *x = mc->xcursor;
        int exact;
        if (data->mv_size == 0)
            return MDB_BAD_VALSIZE; /* a duplicate is a key of the sub-tree */
        if ((rc = xcursor_load(mc, n)) != 0)
            return rc;
        if ((rc = cursor_seek(&x->mc, data, &exact)) != 0)
            return rc;
        if (op == MDB_GET_BOTH && !exact)
            return MDB_NOTFOUND;
        if (x->mc.ki[x->mc.top] >= PG_NKEYS(x->mc.pg[x->mc.top]) &&
            (rc = cursor_sibling(&x->mc, 1)) != 0)
            return rc;
        return fetch(&x->mc, data, NULL);
    }
    MDB_val cur;
    if ((rc = node_read(mc, n, &cur)) != 0)
        return rc;
    MDB_cmp_func *dcmp = mc->dbinfo->dcmp ? mc->dbinfo->dcmp : cmp_lex;
    int c = dcmp(data, &cur);
    if (c > 0 || (c && op == MDB_GET_BOTH))
        return MDB_NOTFOUND;
    *data = cur;
    return 0;
}

/* After a missed MDB_SET or GET_BOTH, whether the cursor keeps the end mark it had on
 * was_leaf.  LMDB 0.9 first looks at the leaf an initialised cursor stands on and, when it
 * answers the miss from there without a search, leaves the cursor's flags alone: so a
 * cursor at the end stays there, and a NEXT after the miss (or after deleting what the
 * miss stood on) reports the end.  It answers from the leaf when the key sorts past its
 * last key with no page to its right, or before its first key in a tree of one page; a
 * key between the leaf's first and last keys is searched for in the leaf (0.9.36 clears
 * the mark there), any other in the tree, which clears it too.
 * Matched so that a program sees the same answers (fuzz_apidiff found the difference). */
static int miss_keeps_eof(const MDB_cursor *mc, const page *was_leaf, const MDB_val *key)
{
    if (!mc->snum || mc->pg[mc->top] != was_leaf)
        return 0;
    unsigned nk = PG_NKEYS(was_leaf);
    MDB_cmp_func *cmp = cursor_cmp(mc);
    MDB_val k;
    if (nk == 0 || leaf_key(mc, was_leaf, 0, &k))
        return 0;
    if (cmp_keys(cmp, key, &k) < 0)
        return mc->top == 0;
    if (leaf_key(mc, was_leaf, nk - 1, &k))
        return 0;
    if (cmp_keys(cmp, key, &k) < 0)
        return 0; /* 0.9.36 searches the leaf for it and clears the mark on the way */
    for (unsigned l = 0; l < mc->top; l++)
        if ((unsigned)mc->ki[l] + 1 < PG_NKEYS(mc->pg[l]))
            return 0;
    return 1;
}

static int go_set(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
    if (!key)
        return EINVAL;
    /* Only an empty key is refused.  A key longer than any stored key is an ordinary
     * miss (LMDB answers MDB_NOTFOUND, and SET_RANGE finds the next key), so a program
     * may look up user-supplied keys without checking their length first. */
    if (key->mv_size == 0)
        return MDB_BAD_VALSIZE;
    if (mc->xcursor)
        mc->xcursor->mc.flags = C_SUB;
    mc->flags &= ~C_XUNSET;
    /* A miss leaves the cursor positioned at the insertion point, as LMDB's does: NEXT
     * then moves past the item found there, PREV to the one before it.  A write txn's
     * cursor already on the key stays there without a descent: slapd looks up the parent's
     * key again for each child it adds.  A read cursor is rarely on the key it looks up,
     * so there the comparison would be wasted. */
    const page *eof_leaf = NULL;
    if ((mc->flags & (C_INITIALIZED | C_EOF)) == (C_INITIALIZED | C_EOF) && mc->snum)
        eof_leaf = mc->pg[mc->top];
    int exact;
    int rc = (mc->flags & C_WRITE_TXN) ? cursor_seek_here(mc, key, &exact)
                                       : cursor_seek(mc, key, &exact);
    if (rc)
        return rc;
    if (op != MDB_SET_RANGE && !exact) {
        if (mc->xcursor)
            mc->flags |= C_XUNSET;
        if (eof_leaf && miss_keeps_eof(mc, eof_leaf, key))
            mc->flags |= C_EOF;
        return MDB_NOTFOUND;
    }
    if (mc->ki[mc->top] >= PG_NKEYS(mc->pg[mc->top])) {
        rc = cursor_sibling(mc, 1);
        if (rc) {
            if (rc == MDB_NOTFOUND)
                mc->flags |= C_EOF;
            return rc;
        }
    }
    if (op == MDB_GET_BOTH || op == MDB_GET_BOTH_RANGE)
        return match_data(mc, data, op); /* the caller's key is left alone, as in LMDB */
    if (plain_item(mc))
        return fetch_plain(mc, op == MDB_SET ? NULL : key, data);
    if ((rc = cursor_enter(mc, 0)) != 0)
        return rc;
    if (op == MDB_SET)
        return fetch(mc, NULL, data);
    return fetch(mc, key, data);
}

/* DUPFIXED batch reads: the whole current page of the sub-cursor. */
static int fetch_multiple(MDB_cursor *mc, MDB_val *data)
{
    MDB_cursor *x = &mc->xcursor->mc;
    page *p = x->pg[x->top];
    if (!(p->flags & P_LEAF2))
        return MDB_INCOMPATIBLE;
    data->mv_size = (size_t)PG_NKEYS(p) * p->leaf2_ksize;
    data->mv_data = (uint8_t *)p + PAGEHDRSZ;
    x->ki[x->top] = (indx_t)(PG_NKEYS(p) - 1);
    return 0;
}

int cursor_count(MDB_cursor *mc, size_t *count)
{
    if (!mc->xcursor)
        return MDB_INCOMPATIBLE;
    if (!(mc->flags & C_INITIALIZED))
        return EINVAL;
    node_header *n;
    int rc = cursor_node(mc, &n);
    if (rc)
        return rc;
    mc->flags &= ~C_EOF; /* LMDB: counting an item revives a cursor left at the end */
    if (!(n->flags & F_DUPDATA)) {
        *count = 1;
        return 0;
    }
    if (mc->flags & C_XUNSET)
        return EINVAL;
    if (!(mc->xcursor->mc.flags & C_INITIALIZED) && (rc = cursor_enter(mc, 0)) != 0)
        return rc;
    *count = (size_t)mc->xcursor->db.entries;
    return 0;
}

int cursor_get(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
    int rc;
    if ((op == MDB_NEXT || op == MDB_PREV) && step_in_leaf(mc, op == MDB_NEXT))
        return fetch_plain(mc, key, data);
    switch (op) {
    case MDB_FIRST:
        return go_first(mc, key, data);
    case MDB_LAST:
        return go_last(mc, key, data);
    case MDB_NEXT:
    case MDB_NEXT_NODUP:
    case MDB_NEXT_DUP:
        return go_next(mc, key, data, op);
    case MDB_PREV:
    case MDB_PREV_NODUP:
    case MDB_PREV_DUP:
        return go_prev(mc, key, data, op);
    case MDB_GET_CURRENT:
        if (!(mc->flags & C_INITIALIZED))
            return EINVAL;
        if (cursor_x_unset(mc))
            return EINVAL;
        mc->flags &= ~C_DEL; /* the item is now seen: NEXT moves past it (as LMDB) */
        if (mc->xcursor)
            mc->xcursor->mc.flags &= ~C_DEL; /* the duplicate under it too */
        return fetch(mc, key, data);
    case MDB_SET:
    case MDB_SET_KEY:
    case MDB_SET_RANGE:
        return go_set(mc, key, data, op);
    case MDB_GET_BOTH:
    case MDB_GET_BOTH_RANGE:
        if (!data || !key)
            return EINVAL;
        if (!mc->xcursor)
            return MDB_INCOMPATIBLE;
        return go_set(mc, key, data, op);
    case MDB_FIRST_DUP:
    case MDB_LAST_DUP: {
        if (!data || !(mc->flags & C_INITIALIZED))
            return EINVAL;
        if (!mc->xcursor)
            return MDB_INCOMPATIBLE;
        node_header *n;
        if ((rc = cursor_node(mc, &n)) != 0)
            return rc;
        /* Standing on an item again: NEXT after LAST, FIRST_DUP moves on through the
         * duplicates (LMDB 0.9.36; 0.9.24 kept the end mark and answered NOTFOUND). */
        mc->flags &= ~C_EOF;
        if (!(n->flags & F_DUPDATA)) {
            if (key)
                node_key(n, key);
            return node_read(mc, n, data);
        }
        if (mc->flags & C_XUNSET)
            return EINVAL;
        /* A duplicate's delete mark survives FIRST_DUP and LAST_DUP: the NEXT after them
         * returns the value they returned again (LMDB 0.9.36) */
        unsigned xdel = mc->xcursor->mc.flags & C_DEL;
        int last = op == MDB_LAST_DUP;
        if (!dups_end_here(mc, n, last) && (rc = cursor_enter(mc, last)) != 0)
            return rc;
        mc->xcursor->mc.flags |= xdel;
        return fetch(mc, NULL, data); /* LMDB leaves the key alone here */
    }
    case MDB_GET_MULTIPLE:
        if (!data || !(mc->flags & C_INITIALIZED))
            return EINVAL;
        if (!mc->xcursor || !(mc->db->flags & MDB_DUPFIXED))
            return MDB_INCOMPATIBLE;
        if (!(mc->xcursor->mc.flags & C_INITIALIZED) || (mc->xcursor->mc.flags & C_EOF))
            return 0;
        mc->xcursor->mc.flags &= ~C_DEL; /* now on the page's last dup: NEXT goes past it */
        return fetch_multiple(mc, data);
    case MDB_NEXT_MULTIPLE:
        if (!data)
            return EINVAL;
        if (!mc->xcursor || !(mc->db->flags & MDB_DUPFIXED))
            return MDB_INCOMPATIBLE;
        rc = (mc->flags & C_INITIALIZED) ? go_next(mc, key, data, MDB_NEXT_DUP)
                                         : go_first(mc, key, data);
        if (rc)
            return rc;
        if (!(mc->xcursor->mc.flags & C_INITIALIZED))
            return MDB_NOTFOUND;
        return fetch_multiple(mc, data);
    case MDB_PREV_MULTIPLE:
        if (!data)
            return EINVAL;
        if (!mc->xcursor || !(mc->db->flags & MDB_DUPFIXED))
            return MDB_INCOMPATIBLE;
        /* from nowhere LMDB 0.9.24 goes to the last item, then on to the page before it */
        if (!(mc->flags & C_INITIALIZED) && (rc = go_last(mc, key, data)) != 0)
            return rc;
        if (!(mc->xcursor->mc.flags & C_INITIALIZED))
            return MDB_NOTFOUND;
        /* (the duplicate's delete mark stays: 0.9.36's page step keeps it, so the next
         * NEXT_DUP does not skip the value that slid into place) */
        if ((rc = cursor_sibling(&mc->xcursor->mc, 0)) != 0)
            return rc;
        return fetch_multiple(mc, data);
    default:
        return EINVAL;
    }
}
