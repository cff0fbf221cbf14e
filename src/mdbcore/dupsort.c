/*
 * dupsort.c -- the write side of sorted duplicates (layer L5).  Navigation lives in
 * cursor.c; this file changes the three shapes a key's values can take:
 *   one value      an ordinary leaf node;
 *   a sub-page     F_DUPDATA: the node's data is a small leaf page (P_LEAF|P_SUBP|P_DIRTY,
 *                  plus P_LEAF2 for DUPFIXED) whose keys are the values;
 *   a sub-tree     F_DUPDATA|F_SUBDATA: the node's data is the db_record of a B+tree whose
 *                  keys are the values (LEAF2 leaves for DUPFIXED).
 * A second value turns a single node into a sub-page; a sub-page that would make the node
 * larger than node_max becomes a sub-tree.  Like LMDB we never shrink a sub-tree back into
 * a sub-page, and a key keeps F_DUPDATA while it has at least one value.
 * Invariants: the main tree's `entries` counts key/value pairs; a sub-page is rebuilt from
 * a private copy of its values or bytes (its bytes live in the leaf we are about to
 * rewrite), and no value handed back points into such a copy: after the rewrite the
 * sub-cursor is loaded again from the node (stand_on_value, stand_on_index);
 * after a put the cursor stands on the pair written.
 */
#include <stdlib.h>

#include "core.h"

#define VAL_MAX MDB_MAXKEYSIZE_DEFAULT

/* A private sorted copy of a key's values. */
typedef struct valset {
    MDB_val *v;
    uint8_t *buf;
    size_t n;
} valset;

static void valset_free(valset *vs)
{
    free(vs->v);
    free(vs->buf);
}

/* Copy the values of a sub-page, leaving a hole at index `gap` (or none if gap > n). */
static int valset_from_subpage(MDB_cursor *x, page *sp, size_t gap, valset *vs)
{
    size_t n = PG_NKEYS(sp);
    vs->v = malloc((n + 1) * sizeof(MDB_val));
    vs->buf = malloc((n + 1) * VAL_MAX + 1);
    vs->n = 0;
    if (!vs->v || !vs->buf)
        return ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (i == gap)
            vs->n++;
        MDB_val k;
        int rc = leaf_key(x, sp, (unsigned)i, &k);
        if (rc)
            return rc;
        if (k.mv_size > VAL_MAX)
            return CORRUPT_AT(sp->pgno);
        uint8_t *dst = vs->buf + vs->n * VAL_MAX;
        memcpy(dst, k.mv_data, k.mv_size);
        vs->v[vs->n].mv_size = k.mv_size;
        vs->v[vs->n].mv_data = dst;
        vs->n++;
    }
    if (gap == n)
        vs->n++;
    return 0;
}

static size_t subpage_size(int fixed, size_t ks, const valset *vs)
{
    if (fixed)
        return PAGEHDRSZ + vs->n * ks;
    size_t sz = PAGEHDRSZ;
    for (size_t i = 0; i < vs->n; i++)
        sz += sizeof(indx_t) + EVEN(NODESIZE + vs->v[i].mv_size);
    return sz;
}

static void subpage_build(uint8_t *buf, size_t size, pgno_t host, int fixed, size_t ks,
                          const valset *vs)
{
    page *sp = (page *)buf;
    memset(buf, 0, size);
    page_init(sp, host, P_LEAF | P_SUBP | P_DIRTY | (fixed ? P_LEAF2 : 0), (unsigned)size);
    sp->leaf2_ksize = (uint16_t)(fixed ? ks : 0);
    MDB_val none = {0, NULL};
    for (size_t i = 0; i < vs->n; i++)
        page_add_node(sp, (unsigned)i, &vs->v[i], &none, 0, 0, NULL);
}

static int dcmp_of(MDB_cursor *mc, const MDB_val *a, const MDB_val *b)
{
    MDB_cmp_func *f = mc->dbinfo->dcmp ? mc->dbinfo->dcmp : cmp_lex;
    return f(a, b);
}

/* The main record's page counters include the pages of its keys' sub-trees. */
static void count_pages(db_record *main, const db_record *sub, int sign)
{
    main->branch_pages += (pgno_t)(sign * (int64_t)sub->branch_pages);
    main->leaf_pages += (pgno_t)(sign * (int64_t)sub->leaf_pages);
    main->overflow_pages += (pgno_t)(sign * (int64_t)sub->overflow_pages);
}

int dup_put_current(MDB_cursor *mc, const MDB_val *key, MDB_val *data);

/* Replace the key's node by one holding `vs` (sub-page, or sub-tree if too big). */
static int store_values(MDB_cursor *mc, const MDB_val *key, valset *vs, int fixed, size_t ks)
{
    MDB_env *env = mc->txn->env;
    size_t size = subpage_size(fixed, ks, vs);
    int rc;
    if (NODESIZE + key->mv_size + size <= env->node_max) {
        uint8_t *buf = malloc(size);
        if (!buf)
            return ENOMEM;
        subpage_build(buf, size, mc->pg[mc->top]->pgno, fixed, ks, vs);
        MDB_val d = {size, buf};
        rc = tree_put(mc, key, &d, PUT_DUPDATA | MDB_CURRENT);
        free(buf);
        return rc;
    }
    /* too big for the leaf: the values get a tree of their own */
    struct xcursor *x = mc->xcursor;
    memset(&x->db, 0, sizeof(x->db));
    x->db.root = P_INVALID;
    if (fixed) {
        x->db.pad = (uint32_t)ks;
        x->db.flags = MDB_DUPFIXED | ((mc->db->flags & MDB_INTEGERDUP) ? MDB_INTEGERKEY : 0);
    }
    x->mc.inline_root = NULL;
    x->mc.flags = C_SUB;
    x->mc.txn = mc->txn;
    MDB_val none = {0, NULL};
    for (size_t i = 0; i < vs->n; i++)
        if ((rc = tree_put(&x->mc, &vs->v[i], &none, MDB_APPEND)) != 0)
            return rc;
    db_record rec = x->db;
    MDB_val d = {sizeof(rec), &rec};
    count_pages(mc->db, &rec, 1);
    return tree_put(mc, key, &d, PUT_DUPDATA | PUT_SUBDATA | MDB_CURRENT);
}

/* Write the sub-tree record back into the key's node (main path already dirty). */
static void store_record(MDB_cursor *mc)
{
    node_header *n = PG_NODE(mc->pg[mc->top], mc->ki[mc->top]);
    memcpy(node_data(n), &mc->xcursor->db, sizeof(db_record));
    *mc->dbstate |= DBS_DIRTY;
}

static int reposition(MDB_cursor *mc, const MDB_val *key, const MDB_val *data)
{
    MDB_val k = *key, d = *data;
    return cursor_get(mc, &k, &d, MDB_GET_BOTH);
}

/* After a put the main cursor stands on the key's node (tree_put's promise): put the
 * duplicate cursor on `data`, which MDB_GET_BOTH would do after descending again. */
static int stand_on_value(MDB_cursor *mc, const MDB_val *data)
{
    node_header *n;
    int rc = cursor_node(mc, &n), exact;
    if (rc || !(n->flags & F_DUPDATA))
        return rc;
    if ((rc = xcursor_load(mc, n)) != 0 || (rc = cursor_seek(&mc->xcursor->mc, data, &exact)) != 0)
        return rc;
    return exact ? 0 : CORRUPT_AT(mc->pg[mc->top]->pgno);
}

/* stand_on_value when the value's index in the key's sub-page is known: no search. */
static int stand_on_index(MDB_cursor *mc, const MDB_val *data, size_t at)
{
    node_header *n;
    int rc = cursor_node(mc, &n);
    if (rc)
        return rc;
    if ((n->flags & (F_DUPDATA | F_SUBDATA)) != F_DUPDATA)
        return stand_on_value(mc, data); /* it became a sub-tree */
    MDB_cursor *xc = &mc->xcursor->mc;
    if ((rc = xcursor_load(mc, n)) != 0 || (rc = tree_descend(xc, NULL, SRCH_FIRST)) != 0)
        return rc;
    if (at >= PG_NKEYS(xc->pg[0]))
        return CORRUPT_AT(mc->pg[mc->top]->pgno);
    xc->ki[0] = (indx_t)at;
    return 0;
}

/* Sub-pages up to this size are rebuilt on the stack: all of them with 4 KiB pages
 * (node_max is 2,038 there), the bigger ones of bigger pages in a malloc'd buffer. */
#define SUBPAGE_STACK_BUF 2048

/*
 * Insert `data` at index `at` of the key's sub-page.  The sub-cursor reads the sub-page
 * where it lies, in the leaf that tree_put is about to rewrite, so the new one is built
 * in a scratch copy (xcursor_load checked the bounds), grown only by what the new value
 * lacks, and the key's node is rewritten once.  The copy is gone when this returns:
 * stand_on_index points the sub-cursor at the rewritten node.  Values that would make
 * the node larger than node_max go to a sub-tree instead (store_values).
 */
static int subpage_insert(MDB_cursor *mc, const MDB_val *key, const MDB_val *data, size_t at,
                          int fixed)
{
    struct xcursor *x = mc->xcursor;
    page *old = x->mc.inline_root;
    size_t ds = x->mc.inline_size;
    int packed = (old->flags & P_LEAF2) != 0;
    size_t need = packed ? old->leaf2_ksize : sizeof(indx_t) + EVEN(NODESIZE + data->mv_size);
    size_t room = PG_ROOM(old);
    size_t grow = room >= need ? 0 : need - room;
    int rc;
    if (NODESIZE + key->mv_size + ds + grow > mc->txn->env->node_max) {
        valset vs;
        if ((rc = valset_from_subpage(&x->mc, old, at, &vs)) == 0) {
            memcpy(vs.buf + at * VAL_MAX, data->mv_data, data->mv_size);
            vs.v[at].mv_size = data->mv_size;
            vs.v[at].mv_data = vs.buf + at * VAL_MAX;
            rc = store_values(mc, key, &vs, fixed, data->mv_size);
        }
        valset_free(&vs);
        /* the node shrank from a full sub-page to a record */
        return rc ? rc : tree_settle_after_shrink(mc, key);
    }
    _Alignas(8) uint8_t stack_buf[SUBPAGE_STACK_BUF];
    uint8_t *buf = ds + grow <= sizeof(stack_buf) ? stack_buf : malloc(ds + grow);
    if (!buf)
        return ENOMEM;
    memcpy(buf, old, ds);
    page *sp = (page *)buf;
    if (grow) {
        /* Packed values sit at the front, so the free gap just widens.  Nodes sit at the
         * back: they move up by `grow`, and so do their offsets. */
        unsigned up = sp->u.bounds.upper;
        size_t used_end; /* the free gap starts here; zeroed, as it goes to the file */
        if (!packed) {
            memmove((uint8_t *)sp + up + grow, (uint8_t *)sp + up, ds - up);
            for (unsigned j = 0; j < PG_NKEYS(sp); j++)
                sp->slots[j] = (indx_t)(sp->slots[j] + grow);
            used_end = sp->u.bounds.lower;
            memset((uint8_t *)sp + used_end, 0, up + grow - used_end);
        } else {
            used_end = PAGEHDRSZ + (size_t)PG_NKEYS(sp) * sp->leaf2_ksize;
            memset((uint8_t *)sp + used_end, 0, ds + grow - used_end);
        }
        sp->u.bounds.upper = (indx_t)(up + grow);
    }
    MDB_val none = {0, NULL};
    rc = page_add_node(sp, (unsigned)at, data, &none, 0, 0, NULL);
    if (rc == 0) {
        MDB_val d = {ds + grow, sp};
        rc = tree_put(mc, key, &d, PUT_DUPDATA | MDB_CURRENT);
    }
    if (buf != stack_buf)
        free(buf);
    return rc;
}

static int dup_put_inner(MDB_cursor *mc, const MDB_val *key_in, MDB_val *data_in, unsigned flags);
static int dup_del_inner(MDB_cursor *mc, const MDB_val *data_in, int from_cursor);
static int dup_current_inner(MDB_cursor *mc, const MDB_val *key, MDB_val *data);

/* Other cursors on this DB are saved before the first step of a change and put back after
 * the last one (the steps themselves nest their own tracking inside). */
int dup_put(MDB_cursor *mc, const MDB_val *key, MDB_val *data, unsigned flags)
{
    track_before(mc);
    int rc = dup_put_inner(mc, key, data, flags);
    int rc2 = track_after_put(mc, rc);
    return rc ? rc : rc2;
}

int dup_del(MDB_cursor *mc, const MDB_val *data, int from_cursor)
{
    txn_pages_changed(mc->txn); /* a delete may move nodes between pages (see track_after_put) */
    track_before(mc);
    int rc = dup_del_inner(mc, data, from_cursor);
    int rc2 = track_after(mc);
    return rc ? rc : rc2;
}

int dup_put_current(MDB_cursor *mc, const MDB_val *key, MDB_val *data)
{
    track_before(mc);
    int rc = dup_current_inner(mc, key, data);
    int rc2 = track_after_put(mc, rc);
    return rc ? rc : rc2;
}

/* An equal (under the DB's dup order) value is present: stand on it and store our bytes. */
static int overwrite_equal(MDB_cursor *mc, const MDB_val *key, MDB_val *data)
{
    int rc = reposition(mc, key, data);
    return rc ? rc : dup_put_current(mc, key, data);
}


/* A put refused because the pair (or a later one, for APPENDDUP) is already there.  LMDB 0.9
 * has copied the cursor's path by then, so its txn has written something and its commit
 * makes a new snapshot (txn id + 1) although nothing changed.  The txn is marked the same
 * way, so that txn ids stay LMDB's (found by fuzz/fuzz_apidiff.c). */
static int refused_existing(MDB_cursor *mc)
{
    mc->txn->flags |= TXN_DIRTY;
    return MDB_KEYEXIST;
}

static int dup_put_inner(MDB_cursor *mc, const MDB_val *key_in, MDB_val *data_in, unsigned flags)
{
    MDB_txn *txn = mc->txn;
    MDB_env *env = txn->env;
    struct xcursor *x = mc->xcursor;
    int fixed = (mc->db->flags & MDB_DUPFIXED) != 0;
    int rc, exact;

    if (!key_in || !data_in)
        return EINVAL;
    if (key_in->mv_size == 0 || key_in->mv_size > env->maxkeysize)
        return MDB_BAD_VALSIZE;
    /* A duplicate is a key of the sub-tree, and keys are never empty.  LMDB 0.9.24 took an
     * empty first value and then lost one of the two on the next put; the latest 0.9 refuses
     * it up front, and so do we, for the first value as for every later one. */
    if (data_in->mv_size == 0 || data_in->mv_size > env->maxkeysize)
        return MDB_BAD_VALSIZE;
    if (flags & MDB_RESERVE)
        return EINVAL;
    uint8_t kb[VAL_MAX], db[VAL_MAX];
    memcpy(kb, key_in->mv_data, key_in->mv_size);
    memcpy(db, data_in->mv_data, data_in->mv_size);
    MDB_val key = {key_in->mv_size, kb}, data = {data_in->mv_size, db};

    /* `last` is the key's last value once known; `after_last` says data sorts after it
     * (APPENDDUP checked), so the insert goes at the end without a search. */
    MDB_val last = {0, NULL};
    int have_last = 0, after_last = 0;
    unsigned put_flags = 0;
    exact = 0;
    if (flags & MDB_APPEND) {
        MDB_val lk;
        rc = cursor_get(mc, &lk, &last, MDB_LAST);
        if (rc == 0) {
            int c = cursor_cmp(mc)(&key, &lk);
            if (c < 0 || (c == 0 && !(flags & MDB_APPENDDUP)))
                return MDB_KEYEXIST;
            if (c > 0) { /* a new last key: the cursor already stands where it goes */
                if ((rc = tree_put(mc, &key, &data, MDB_APPEND)) != 0)
                    return rc;
                return stand_on_value(mc, &data);
            }
            exact = have_last = 1; /* on the last key, its last value in `last` */
        } else if (rc != MDB_NOTFOUND) {
            return rc;
        }
    } else {
        /* a caller's cursor (live stack) may stand on the key already: a get then a put */
        rc = cursor_seek_here(mc, &key, &exact);
        if (rc == MDB_NOTFOUND)
            exact = 0;
        else if (rc)
            return rc;
        else if (!exact)
            put_flags = PUT_PLACED; /* the search left the cursor where the key goes */
    }
    if (!exact) {
        if ((rc = tree_put(mc, &key, &data, put_flags)) != 0)
            return rc;
        return stand_on_value(mc, &data);
    }
    if (flags & MDB_NOOVERWRITE) {
        MDB_val k = key;
        if ((rc = cursor_get(mc, &k, data_in, MDB_SET)) != 0)
            return rc;
        return MDB_KEYEXIST;
    }
    if (flags & MDB_APPENDDUP) {
        /* values of this key must arrive in order */
        if (!have_last && (rc = cursor_get(mc, NULL, &last, MDB_LAST_DUP)) != 0)
            return rc;
        if (dcmp_of(mc, &data, &last) <= 0)
            return refused_existing(mc);
        after_last = 1;
    }
    node_header *n;
    if ((rc = cursor_node(mc, &n)) != 0)
        return rc;

    if (!(n->flags & F_DUPDATA)) {
        MDB_val old;
        if ((rc = node_read(mc, n, &old)) != 0)
            return rc;
        if (fixed && old.mv_size != data.mv_size)
            return MDB_BAD_VALSIZE;
        int c = dcmp_of(mc, &data, &old);
        if (c == 0) /* equal under the DB's order: LMDB stores the new bytes */
            return (flags & MDB_NODUPDATA) ? refused_existing(mc) : overwrite_equal(mc, &key, &data);
        if (data.mv_size == 0 || old.mv_size == 0 || old.mv_size > VAL_MAX)
            return MDB_BAD_VALSIZE;
        uint8_t ob[VAL_MAX];
        memcpy(ob, old.mv_data, old.mv_size);
        MDB_val two[2];
        two[c < 0 ? 1 : 0] = (MDB_val){old.mv_size, ob};
        two[c < 0 ? 0 : 1] = data;
        valset vs = {two, NULL, 2};
        if ((rc = store_values(mc, &key, &vs, fixed, data.mv_size)) != 0)
            return rc;
        mc->db->entries++;
        return stand_on_value(mc, &data);
    }

    /* After APPENDDUP's check, LAST / LAST_DUP has just entered this node's duplicates and
     * left the duplicate cursor on the last value: keep it, so that an append into a
     * sub-tree starts there instead of descending again. */
    if (!(after_last && (x->mc.flags & C_INITIALIZED)) && (rc = xcursor_load(mc, n)) != 0)
        return rc;
    if (fixed && x->db.pad && x->db.pad != data.mv_size)
        return MDB_BAD_VALSIZE;
    if (data.mv_size == 0)
        return MDB_BAD_VALSIZE;
    if (!(n->flags & F_SUBDATA)) {
        size_t at = PG_NKEYS(x->mc.inline_root);
        if (!after_last) {
            if ((rc = cursor_seek(&x->mc, &data, &exact)) != 0)
                return rc;
            if (exact)
                return (flags & MDB_NODUPDATA) ? refused_existing(mc)
                                               : overwrite_equal(mc, &key, &data);
            at = x->mc.ki[0];
        }
        if ((rc = subpage_insert(mc, &key, &data, at, fixed)) != 0)
            return rc;
        mc->db->entries++;
        return stand_on_index(mc, &data, at);
    }

    /* a sub-tree: insert into it, then rewrite its record in the (now dirty) leaf */
    if (!after_last) {
        if ((rc = cursor_seek(&x->mc, &data, &exact)) != 0)
            return rc;
        if (exact)
            return (flags & MDB_NODUPDATA) ? refused_existing(mc) : overwrite_equal(mc, &key, &data);
    }
    if ((rc = cursor_touch(mc)) != 0)
        return rc;
    MDB_val none = {0, NULL};
    db_record before = x->db;
    rc = tree_put(&x->mc, &data, &none, after_last ? MDB_APPEND : MDB_NOOVERWRITE);
    count_pages(mc->db, &before, -1);
    count_pages(mc->db, &x->db, 1);
    if (rc == MDB_KEYEXIST)
        return (flags & MDB_NODUPDATA) ? refused_existing(mc) : reposition(mc, &key, &data);
    if (rc)
        return rc;
    store_record(mc);
    mc->db->entries++;
    /* tree_put left the duplicate cursor on the value, and the main cursor is on the key */
    mc->flags &= ~(C_EOF | C_DEL);
    return 0;
}

/* Whether the sub-cursor, just reloaded from the key's node by xcursor_load, still stands
 * where it stood before (top `xtop`, index `xki`) on the very bytes `data_in` points at.
 * mdb_cursor_del reads the value under the cursor and hands it back here: its position
 * is then known, and searching the duplicates for it again would only find it again. */
static int still_on_value(MDB_cursor *mc, unsigned xtop, unsigned xki, const MDB_val *data_in)
{
    MDB_cursor *xc = &mc->xcursor->mc;
    if (xc->inline_root) {
        if (xtop != 0 || xc->pg[0] != xc->inline_root)
            return 0;
    } else if (xtop + 1 != mc->xcursor->db.depth || xc->pg[0]->pgno != mc->xcursor->db.root ||
               !IS_LEAF(xc->pg[xtop])) {
        return 0;
    }
    MDB_val here;
    if (xki >= PG_NKEYS(xc->pg[xtop]) || leaf_key(xc, xc->pg[xtop], xki, &here) != 0 ||
        here.mv_data != data_in->mv_data || here.mv_size != data_in->mv_size)
        return 0;
    xc->snum = (uint16_t)(xtop + 1);
    xc->top = (uint16_t)xtop;
    xc->ki[xtop] = (indx_t)xki;
    xc->flags |= C_INITIALIZED;
    return 1;
}

/*
 * Remove the value at index `at` of the key's sub-page (it keeps at least one).  As in
 * subpage_insert, the sub-page is edited in a scratch copy, here shrunk by all its free
 * room so that the node gets smaller, and the key's node is rewritten once.  The nodes of
 * a sub-page sit at its end and its packed values at its front: the free gap lies between
 * the slots and the nodes, or (packed) after the values.
 */
static int subpage_remove(MDB_cursor *mc, const MDB_val *key, size_t at)
{
    struct xcursor *x = mc->xcursor;
    page *old = x->mc.inline_root;
    size_t ds = x->mc.inline_size;
    _Alignas(8) uint8_t stack_buf[SUBPAGE_STACK_BUF];
    uint8_t *buf = ds <= sizeof(stack_buf) ? stack_buf : malloc(ds);
    if (!buf)
        return ENOMEM;
    memcpy(buf, old, ds);
    page *sp = (page *)buf;
    page_del_node(sp, (unsigned)at, (unsigned)ds);
    unsigned lo = sp->u.bounds.lower, up = sp->u.bounds.upper;
    size_t gap = up - lo;
    if (!(sp->flags & P_LEAF2)) {
        memmove((uint8_t *)sp + lo, (uint8_t *)sp + up, ds - up);
        for (unsigned j = 0; j < PG_NKEYS(sp); j++)
            sp->slots[j] = (indx_t)(sp->slots[j] - gap);
    }
    sp->u.bounds.upper = (indx_t)lo;
    MDB_val d = {ds - gap, sp};
    int rc = tree_put(mc, key, &d, PUT_DUPDATA | MDB_CURRENT);
    if (buf != stack_buf)
        free(buf);
    return rc;
}

static int dup_del_inner(MDB_cursor *mc, const MDB_val *data_in, int from_cursor)
{
    struct xcursor *x = mc->xcursor;
    node_header *n;
    int rc, exact;
    if ((rc = cursor_node(mc, &n)) != 0)
        return rc;
    uint8_t kb[VAL_MAX], db[VAL_MAX];
    MDB_val key, data, *dp = NULL;
    node_key(n, &key);
    memcpy(kb, key.mv_data, key.mv_size);
    key.mv_data = kb;
    if (data_in) {
        if (data_in->mv_size > VAL_MAX)
            return MDB_NOTFOUND;
        memcpy(db, data_in->mv_data, data_in->mv_size);
        data.mv_size = data_in->mv_size;
        data.mv_data = db;
        dp = &data;
    }

    if (!(n->flags & F_DUPDATA)) {
        if (dp) {
            MDB_val old;
            if ((rc = node_read(mc, n, &old)) != 0)
                return rc;
            if (dcmp_of(mc, dp, &old) != 0)
                return MDB_NOTFOUND;
        }
        return tree_del_current(mc, 0);
    }
    /* where a caller's cursor stands in the duplicates, before xcursor_load forgets it */
    int placed = from_cursor && dp &&
                 (x->mc.flags & (C_INITIALIZED | C_EOF | C_DEL)) == C_INITIALIZED &&
                 x->mc.snum > 0;
    unsigned xtop = x->mc.top, xki = placed ? x->mc.ki[xtop] : 0;
    if ((rc = xcursor_load(mc, n)) != 0)
        return rc;
    size_t count = (size_t)x->db.entries;
    if (!dp) {
        if (n->flags & F_SUBDATA) {
            db_record rec = x->db;
            if ((rc = tree_free_record(mc->txn, &rec)) != 0)
                return rc;
            count_pages(mc->db, &rec, -1);
        }
        if ((rc = tree_del_current(mc, 1)) != 0)
            return rc;
        mc->db->entries -= count - 1;
        return 0;
    }

    if (placed && still_on_value(mc, xtop, xki, data_in)) {
        exact = 1;
    } else {
        if ((rc = cursor_seek(&x->mc, dp, &exact)) != 0)
            return rc == MDB_NOTFOUND ? MDB_NOTFOUND : rc;
        if (!exact)
            return MDB_NOTFOUND;
    }
    if (count <= 1) {
        if (n->flags & F_SUBDATA) {
            db_record rec = x->db;
            if ((rc = tree_free_record(mc->txn, &rec)) != 0)
                return rc;
            count_pages(mc->db, &rec, -1);
        }
        return tree_del_current(mc, 1);
    }
    if (!(n->flags & F_SUBDATA)) {
        size_t at = x->mc.ki[0];
        if ((rc = subpage_remove(mc, &key, at)) != 0)
            return rc;
        mc->db->entries--;
        if (!from_cursor)
            return 0;
        /* tree_put left the main cursor on the key (its node only shrank): the duplicate
         * cursor goes onto the value that slid into the deleted one's index, or past the
         * end when that was the last, as the sub-tree case below leaves it */
        MDB_cursor *xc = &x->mc;
        if ((rc = cursor_node(mc, &n)) != 0 || (rc = xcursor_load(mc, n)) != 0)
            return rc;
        if ((n->flags & (F_DUPDATA | F_SUBDATA)) != F_DUPDATA)
            return CORRUPT_AT(mc->pg[mc->top]->pgno);
        xc->pg[0] = xc->inline_root;
        xc->snum = 1;
        xc->top = 0;
        xc->flags |= C_INITIALIZED | C_DEL;
        unsigned nk = PG_NKEYS(xc->inline_root);
        xc->ki[0] = (indx_t)(at < nk ? at : nk);
        if (at >= nk)
            xc->flags |= C_EOF;
        return 0;
    }
    /* A sub-tree: the main path is made writable first, so that the record can be written
     * back in place.  tree_del_current leaves the duplicate cursor on the value after the
     * deleted one (C_DEL), or past the last one (C_EOF too) with no next leaf: LMDB 0.9.36's
     * place for it, where NEXT goes on to the next key, PREV to the new last value,
     * PREV_NODUP to the previous key and GET_CURRENT answers NOTFOUND.  The main cursor
     * stays on the key with its own delete and end marks (LMDB touches only the duplicate
     * cursor's). */
    if ((rc = cursor_touch(mc)) != 0)
        return rc;
    db_record before = x->db;
    if ((rc = tree_del_current(&x->mc, 1)) != 0)
        return rc;
    count_pages(mc->db, &before, -1);
    count_pages(mc->db, &x->db, 1);
    store_record(mc);
    mc->db->entries--;
    return 0;
}

/* MDB_CURRENT on a DUPSORT DB: replace the value under the cursor.  A single value is an
 * ordinary replace; a duplicate of the same size is overwritten where it is (the caller
 * promises it sorts the same, as LMDB requires); another size is a delete plus an insert. */
static int dup_current_inner(MDB_cursor *mc, const MDB_val *key, MDB_val *data)
{
    struct xcursor *x = mc->xcursor;
    node_header *n;
    int rc = cursor_node(mc, &n);
    if (rc)
        return rc == MDB_NOTFOUND ? EINVAL : rc;
    if (!(n->flags & F_DUPDATA))
        return tree_put(mc, key, data, MDB_CURRENT);
    if (!(x->mc.flags & C_INITIALIZED) && (rc = cursor_enter(mc, 0)) != 0)
        return rc;
    MDB_cursor *xc = &x->mc;
    page *xp = xc->pg[xc->top];
    MDB_val cur;
    if ((rc = leaf_key(xc, xp, xc->ki[xc->top], &cur)) != 0)
        return rc;
    if (cur.mv_size != data->mv_size) {
        uint8_t kb[VAL_MAX], ob[VAL_MAX];
        MDB_val k = {n->ksize, kb}, old = {cur.mv_size, ob};
        memcpy(kb, n->key, n->ksize);
        memcpy(ob, cur.mv_data, cur.mv_size);
        if ((rc = dup_del(mc, &old, 0)) != 0)
            return rc;
        return dup_put(mc, &k, data, 0);
    }
    unsigned ki = mc->ki[mc->top], xki = xc->ki[xc->top];
    /* where the value sits in the sub-page, before the touch may move the leaf */
    size_t off = (xp->flags & P_LEAF2) ? PAGEHDRSZ + (size_t)xki * xp->leaf2_ksize
                                       : (size_t)xp->slots[xki] + NODESIZE;
    if ((rc = cursor_touch(mc)) != 0)
        return rc;
    n = PG_NODE(mc->pg[mc->top], ki);
    if (!(n->flags & F_SUBDATA)) {
        /* into the sub-page inside the (now private) leaf node, which the sub-cursor
         * reads in place (cursor_touch re-pointed it at the copy) */
        memcpy((uint8_t *)node_data(n) + off, data->mv_data, data->mv_size);
        *mc->dbstate |= DBS_DIRTY;
        return 0;
    }
    if ((rc = cursor_touch(xc)) != 0)
        return rc;
    xp = xc->pg[xc->top];
    uint8_t *dst = (xp->flags & P_LEAF2) ? (uint8_t *)xp + PAGEHDRSZ + (size_t)xki * xp->leaf2_ksize
                                         : PG_NODE(xp, xki)->key;
    memcpy(dst, data->mv_data, data->mv_size);
    if (n->flags & F_SUBDATA)
        store_record(mc);
    *mc->dbstate |= DBS_DIRTY;
    return 0;
}
