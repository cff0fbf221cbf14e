/*
 * api_cursor.c -- exported cursor functions (layer L7).  Cursors of a write txn are linked
 * into txn->cursors[dbi] (so cursor_track.c can keep them positioned) and are freed with
 * the txn; cursors of read txns belong to the caller and may be renewed.
 */
#include <stdlib.h>

#include "core.h"

int mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **out)
{
    int rc = api_txn_dbi_usable(txn);
    if (rc)
        return rc;
    if (!out)
        return EINVAL;
    if ((rc = dbi_use(txn, dbi)) != 0)
        return rc;
    if (dbi == FREE_DBI && !(txn->flags & TXN_RDONLY))
        return EINVAL;
    int dups = (txn->dbs[dbi].flags & MDB_DUPSORT) != 0;
    MDB_cursor *c = cursor_obj_alloc(txn, dups);
    if (!c)
        return ENOMEM;
    cursor_init(c, txn, dbi);
    if (dups)
        cursor_attach_x(c, (struct xcursor *)(c + 1));
    if (!(txn->flags & TXN_RDONLY)) {
        c->flags |= C_WRITE_TXN;
        c->next = txn->cursors[dbi];
        txn->cursors[dbi] = c;
    }
    *out = c;
    return 0;
}

void mdb_cursor_close(MDB_cursor *c)
{
    if (!c || (c->flags & C_RETIRED))
        return; /* a retired cursor went with its write txn (cursor_alloc.c) */
    if (c->flags & C_WRITE_TXN) {
        MDB_cursor **pp = &c->txn->cursors[c->dbi];
        while (*pp && *pp != c)
            pp = &(*pp)->next;
        if (*pp)
            *pp = c->next;
    }
    cursor_obj_free(c);
}

int mdb_cursor_renew(MDB_txn *txn, MDB_cursor *c)
{
    if (!txn || !c)
        return EINVAL;
    if (!(txn->flags & TXN_RDONLY) || (c->flags & C_WRITE_TXN))
        return EINVAL;
    int rc = api_txn_usable(txn);
    if (rc)
        return rc;
    if ((rc = dbi_use(txn, c->dbi)) != 0)
        return rc;
    uint8_t *k = c->trk_key;
    size_t cap = c->trk_cap;
    int dups = c->xcursor != NULL;
    cursor_init(c, txn, c->dbi);
    c->trk_key = k;
    c->trk_cap = cap;
    if (dups)
        cursor_attach_x(c, (struct xcursor *)(c + 1));
    return 0;
}

MDB_txn *mdb_cursor_txn(MDB_cursor *c)
{
    return c ? c->txn : NULL;
}

MDB_dbi mdb_cursor_dbi(MDB_cursor *c)
{
    return c ? c->dbi : 0;
}

int mdb_cursor_get(MDB_cursor *c, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
    if (!c)
        return EINVAL;
    int rc = api_txn_usable(c->txn);
    if (rc)
        return rc;
    rc = cursor_get(c, key, data, op);
    /* The "item slid into place by a delete" mark lasts one call, whatever the call and
     * whether it succeeded: after a delete and some other call, NEXT moves past the item
     * that took the deleted one's place (LMDB 0.9's rule). */
    c->flags &= ~C_DEL;
    return rc;
}

/* The checks every cursor write starts with: a cursor of a usable write txn. */
static int cursor_writable(const MDB_cursor *c)
{
    if (!c)
        return EINVAL;
    int rc = api_txn_usable(c->txn);
    if (rc)
        return rc;
    return (c->txn->flags & TXN_RDONLY) ? EACCES : 0;
}

/* After an MDB_APPEND put into a DUPSORT database answered MDB_KEYEXIST: whether LMDB
 * refused it for its key, before clearing the cursor's delete mark -- the key sorts before
 * the last key, or equals it without MDB_APPENDDUP (a duplicate out of order is refused
 * later, the mark cleared).  The failed put left the cursor on the last key. */
static int append_refused(MDB_cursor *c, const MDB_val *key, unsigned flags)
{
    if (!(flags & MDB_APPEND) || !(c->flags & C_INITIALIZED) || c->snum == 0)
        return 0;
    MDB_val last;
    if (leaf_key(c, c->pg[c->top], c->ki[c->top], &last) != 0)
        return 0;
    int cmp = cmp_keys(cursor_cmp(c), key, &last);
    return cmp < 0 || (cmp == 0 && !(flags & MDB_APPENDDUP));
}

int mdb_cursor_put(MDB_cursor *c, MDB_val *key, MDB_val *data, unsigned int flags)
{
    if (!key || !data)
        return EINVAL;
    int rc = cursor_writable(c);
    if (rc)
        return rc;
    MDB_txn *txn = c->txn;
    if (flags & ~(MDB_NOOVERWRITE | MDB_NODUPDATA | MDB_CURRENT | MDB_RESERVE | MDB_APPEND |
                  MDB_APPENDDUP | MDB_MULTIPLE))
        return EINVAL;
    /* MULTIPLE makes room value by value, below */
    /* after a missed lookup there is no duplicate to replace (LMDB would write through a
     * stale duplicate position) */
    if ((flags & MDB_CURRENT) && cursor_x_unset(c))
        return EINVAL;
    c->flags &= ~C_XUNSET; /* a put positions the cursor by its key */
    /* LMDB clears the delete mark only once the put gets past its MDB_NOOVERWRITE check:
     * after that refusal NEXT still does not skip the item it now stands on */
    unsigned del_mark = c->flags & C_DEL;
    /* LMDB keeps the end mark through a cursor put of a new key (its lookup of a missing
     * key leaves the mark; finding the key clears it): NEXT from the last item of a page
     * still answers MDB_NOTFOUND after it (0.9.24 and 0.9.36).  cursor_put_keeps_eof says
     * yes only for a key after every key of the tree, or before the first key of a tree of
     * one page: a new key, so no lookup is needed to tell (back-mdb appends to id2entry
     * right after MDB_LAST, which sets the mark, once per entry). */
    unsigned eof_mark = c->flags & C_EOF;
    /* MDB_CURRENT writes where the cursor stands: LMDB makes no lookup, so the mark stays
     * whatever the key (fuzz_apidiff, 0.9.36) */
    if (eof_mark && !(flags & MDB_CURRENT) && !cursor_put_keeps_eof(c, key))
        eof_mark = 0;
    /* MDB_APPEND into a tree that has items goes through LMDB's MDB_LAST, which sets the
     * end mark, and the insert keeps it (fuzz_apidiff, 0.9.36) */
    unsigned append_eof = ((flags & MDB_APPEND) && c->db->root != P_INVALID) ? C_EOF : 0;
    if (!(flags & MDB_MULTIPLE) && (rc = spill_before_write(c, key, data)) != 0)
        return api_poison(txn, rc);
    if (!c->xcursor) {
        if (flags & MDB_MULTIPLE)
            return MDB_INCOMPATIBLE;
        rc = tree_put(c, key, data, flags & ~(MDB_NODUPDATA | MDB_APPENDDUP));
        /* an append refused for its key (not past the last one) is a refusal before the
         * mark is cleared too */
        if (rc == MDB_KEYEXIST && (flags & (MDB_NOOVERWRITE | MDB_APPEND)))
            c->flags |= del_mark;
        /* a refused append (the key is not past the last one) leaves the cursor where
         * LMDB's MDB_LAST put it: on the last item, end mark set (fuzz_apidiff, 0.9.36) */
        if (c->flags & C_INITIALIZED)
            c->flags |= eof_mark | ((rc == 0 || rc == MDB_KEYEXIST) ? append_eof : 0);
        return api_poison(txn, rc);
    }
    if (flags & MDB_CURRENT) {
        rc = dup_put_current(c, key, data);
        if (c->flags & C_INITIALIZED)
            c->flags |= eof_mark;
        return api_poison(txn, rc);
    }
    if (flags & MDB_MULTIPLE) {
        if (!(c->db->flags & MDB_DUPFIXED))
            return MDB_INCOMPATIBLE;
        size_t n = data[1].mv_size, done = 0, sz = data[0].mv_size;
        for (; done < n; done++) {
            MDB_val one = {sz, (uint8_t *)data[0].mv_data + done * sz};
            if ((rc = spill_before_write(c, key, &one)) != 0)
                break;
            rc = dup_put(c, key, &one, flags & ~MDB_MULTIPLE);
            if (rc == MDB_KEYEXIST && !(flags & MDB_NODUPDATA))
                rc = 0;
            if (rc)
                break;
        }
        data[1].mv_size = done;
        if (c->flags & C_INITIALIZED)
            c->flags |= eof_mark;
        return api_poison(txn, rc);
    }
    rc = dup_put(c, key, data, flags);
    if (rc == MDB_KEYEXIST && ((flags & MDB_NOOVERWRITE) || (del_mark && append_refused(c, key, flags))))
        c->flags |= del_mark;
    if (c->flags & C_INITIALIZED)
        c->flags |= eof_mark;
    return api_poison(txn, rc);
}

int mdb_cursor_del(MDB_cursor *c, unsigned int flags)
{
    int rc = cursor_writable(c);
    if (rc)
        return rc;
    MDB_txn *txn = c->txn;
    if (!(c->flags & C_INITIALIZED))
        return EINVAL;
    if (c->ki[c->top] >= PG_NKEYS(c->pg[c->top]))
        return MDB_NOTFOUND;
    if (cursor_x_unset(c)) {
        /* A missed lookup left no duplicate under the cursor: nothing is deleted (LMDB
         * 0.9.36 answers EINVAL, having touched the path, so the txn counts as written;
         * with MDB_NODUPDATA it deletes the key and miscounts, which we do not copy) */
        txn->flags |= TXN_DIRTY;
        return EINVAL;
    }
    if ((rc = spill_before_write(c, NULL, NULL)) != 0)
        return api_poison(txn, rc);
    if (c->xcursor) {
        MDB_val k, cur;
        if (flags & MDB_NODUPDATA)
            return api_poison(txn, dup_del(c, NULL, 1));
        /* Deleting one of several duplicates leaves the key, and LMDB then leaves the main
         * cursor's delete and end marks as they were (reading the value here is no move
         * of the caller's either) */
        unsigned marks = c->flags & (C_DEL | C_EOF);
        if ((rc = cursor_get(c, &k, &cur, MDB_GET_CURRENT)) != 0)
            return rc;
        size_t values = 1;
        if (cursor_count(c, &values) != 0)
            values = 1;
        c->flags &= ~C_EOF;
        c->flags |= marks & C_DEL;
        rc = dup_del(c, &cur, 1);
        if (rc == 0 && values > 1)
            c->flags |= marks;
        return api_poison(txn, rc);
    }
    rc = tree_del_current(c, 0);
    if (rc == MDB_INCOMPATIBLE) /* a named database's record: as mdb_del */
        txn->flags |= TXN_ERROR;
    return api_poison(txn, rc);
}

int mdb_cursor_count(MDB_cursor *c, size_t *countp)
{
    if (!c || !countp)
        return EINVAL;
    int rc = api_txn_usable(c->txn);
    if (rc)
        return rc;
    return cursor_count(c, countp);
}
