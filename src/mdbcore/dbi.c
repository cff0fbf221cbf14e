/*
 * dbi.c -- database handles (layer L6).  A named database is a MAIN_DBI leaf node whose key
 * is the name and whose F_SUBDATA data is its 48-byte db_record.  The handle table
 * (env->dbinfo/dbflags/dbseq) is shared by all txns; each txn has its own copy of every
 * record (txn->dbs) and state bits (txn->dbstate).
 * Invariants: a handle opened in a txn becomes visible env-wide only when that txn
 * commits (txn.c dbis_settle); records changed in a write txn are written back into MAIN
 * at commit; env->dbseq[i] changes whenever slot i is closed, so a txn holding a stale
 * handle gets MDB_BAD_DBI instead of another database.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core.h"

/* ---- the name index: mdb_dbi_open finds a name in one probe, not by a scan of every
 * handle (with 100,000 open databases the scan was most of the cost of an open) ---- */

static size_t name_home(const void *name, size_t len, unsigned bits)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ ((const uint8_t *)name)[i]) * 0x100000001b3ull;
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* The index cell holding the handle named `name`, or the empty cell where it would go. */
static MDB_dbi *name_cell(MDB_env *env, const void *name, size_t len)
{
    size_t mask = ((size_t)1 << env->name_index_bits) - 1;
    for (size_t i = name_home(name, len, env->name_index_bits);; i = (i + 1) & mask) {
        MDB_dbi *c = &env->name_index[i];
        if (!*c)
            return c;
        const MDB_val *n = &env->dbinfo[*c].name;
        if (n->mv_size == len && !memcmp(n->mv_data, name, len))
            return c;
    }
}

static MDB_dbi name_lookup(MDB_env *env, const void *name, size_t len)
{
    return env->name_index ? *name_cell(env, name, len) : 0;
}

/* Room for one more name, the table at most half full. */
static int name_index_reserve(MDB_env *env)
{
    if (env->name_index && 2 * ((size_t)env->name_index_used + 1) <= ((size_t)1 << env->name_index_bits))
        return 0;
    unsigned bits = env->name_index ? env->name_index_bits + 1 : 6;
    MDB_dbi *ix = calloc((size_t)1 << bits, sizeof(MDB_dbi));
    if (!ix)
        return ENOMEM;
    free(env->name_index);
    env->name_index = ix;
    env->name_index_bits = bits;
    for (MDB_dbi i = CORE_DBS; i < env->maxdbs; i++) {
        const MDB_val *n = &env->dbinfo[i].name;
        if (n->mv_data)
            *name_cell(env, n->mv_data, n->mv_size) = i;
    }
    return 0;
}

/* Linear-probing delete: later cells of the run move back over the hole when their home
 * allows, so a lookup never stops early at the emptied cell. */
static void name_index_remove(MDB_env *env, MDB_dbi slot)
{
    const MDB_val *n = &env->dbinfo[slot].name;
    if (!env->name_index || !n->mv_data)
        return;
    unsigned bits = env->name_index_bits;
    size_t mask = ((size_t)1 << bits) - 1;
    MDB_dbi *ix = env->name_index;
    size_t i = (size_t)(name_cell(env, n->mv_data, n->mv_size) - ix);
    if (ix[i] != slot)
        return;
    for (size_t j = (i + 1) & mask; ix[j]; j = (j + 1) & mask) {
        const MDB_val *m = &env->dbinfo[ix[j]].name;
        size_t home = name_home(m->mv_data, m->mv_size, bits);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            ix[i] = ix[j];
            i = j;
        }
    }
    ix[i] = 0;
    env->name_index_used--;
}

void dbi_slot_forget(MDB_env *env, MDB_dbi i)
{
    name_index_remove(env, i);
    free(env->dbinfo[i].name.mv_data);
    memset(&env->dbinfo[i], 0, sizeof(env->dbinfo[i]));
    env->dbseq[i]++;
    if (i < env->free_hint)
        env->free_hint = i;
}

static int read_record(MDB_txn *txn, const MDB_val *name, db_record *rec, int *found)
{
    MDB_cursor mc;
    cursor_init(&mc, txn, MAIN_DBI);
    int exact, rc = cursor_seek(&mc, name, &exact);
    *found = 0;
    if (rc == MDB_NOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (!exact)
        return 0;
    node_header *n;
    if ((rc = cursor_node(&mc, &n)) != 0)
        return rc;
    if (!(n->flags & F_SUBDATA) || (n->flags & F_DUPDATA))
        return MDB_INCOMPATIBLE;
    if (node_dsize(n) != sizeof(db_record))
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    memcpy(rec, node_data(n), sizeof(*rec));
    if (rec->depth > CURSOR_STACK || (rec->root != P_INVALID && rec->root >= txn->next_pgno))
        return CORRUPT_AT(mc.pg[mc.top]->pgno);
    *found = 1;
    return 0;
}

int dbi_use(MDB_txn *txn, MDB_dbi dbi)
{
    if (dbi >= txn->env->maxdbs)
        return EINVAL;
    txn_dbi_ready(txn, dbi);
    if (!(txn->dbstate[dbi] & DBS_VALID))
        return EINVAL;
    if (txn->dbseq[dbi] != txn->env->dbseq[dbi])
        return MDB_BAD_DBI;
    if (txn->dbstate[dbi] & DBS_STALE) {
        int found, rc = read_record(txn, &txn->env->dbinfo[dbi].name, &txn->dbs[dbi], &found);
        if (rc)
            return rc;
        if (!found) /* opened after this txn began, for a DB its snapshot has not: the
                     * handle is not one of this txn's (LMDB answers EINVAL) */
            return EINVAL;
        txn->dbstate[dbi] &= ~DBS_STALE;
        if (txn->flags & TXN_RDONLY) {
            MDB_env *env = txn->env;
            pthread_mutex_lock(&env->dbi_mutex);
            if (env->dbseq[dbi] == txn->dbseq[dbi]) {
                db_info *d = &env->dbinfo[dbi];
                d->rec = txn->dbs[dbi];
                d->rec_txnid = txn->txnid;
                d->rec_known = 1;
            }
            pthread_mutex_unlock(&env->dbi_mutex);
        }
    }
    return 0;
}

static void set_cmp(MDB_env *env, MDB_dbi dbi, unsigned flags)
{
    if (!env->dbinfo[dbi].cmp)
        env->dbinfo[dbi].cmp = cmp_for_keys(flags);
    if (!env->dbinfo[dbi].dcmp)
        env->dbinfo[dbi].dcmp = cmp_for_dups(flags);
}

int dbi_open(MDB_txn *txn, const char *name, unsigned flags, MDB_dbi *out)
{
    MDB_env *env = txn->env;
    unsigned pflags = flags & DB_PERSISTENT_FLAGS;
    int rc;
    if (flags & ~(DB_PERSISTENT_FLAGS | MDB_CREATE))
        return EINVAL;
    if (!name) {
        db_record *m = &txn->dbs[MAIN_DBI];
        if ((m->flags | pflags) != m->flags) {
            if (txn->flags & TXN_RDONLY)
                return EACCES;
            m->flags |= (uint16_t)pflags;
            txn->flags |= TXN_DIRTY;
        }
        /* The main DB's comparators follow its flags at every open, as LMDB's do: keys
         * given MDB_INTEGERKEY or MDB_REVERSEKEY here must be ordered by them from now on,
         * so a comparator chosen for the old flags is replaced, not kept. */
        pthread_mutex_lock(&env->dbi_mutex);
        env->dbinfo[MAIN_DBI].cmp = cmp_for_keys(m->flags);
        env->dbinfo[MAIN_DBI].dcmp = cmp_for_dups(m->flags);
        pthread_mutex_unlock(&env->dbi_mutex);
        *out = MAIN_DBI;
        return 0;
    }

    if (txn->dbs[MAIN_DBI].flags & (MDB_DUPSORT | MDB_INTEGERKEY))
        return (flags & MDB_CREATE) ? MDB_INCOMPATIBLE : MDB_NOTFOUND;
    size_t len = strlen(name);
    if (len == 0 || len > env->maxkeysize)
        return MDB_BAD_VALSIZE;
    MDB_val key = {len, (void *)name};

    pthread_mutex_lock(&env->dbi_mutex);
    MDB_dbi slot = 0, match = name_lookup(env, name, len);
    MDB_dbi limit = txn->numdbs > env->numdbs ? txn->numdbs : env->numdbs;
    if (match && txn->dbgen[match] == txn->gen && (txn->dbstate[match] & DBS_VALID)) {
        pthread_mutex_unlock(&env->dbi_mutex);
        if ((rc = dbi_use(txn, match)) != 0)
            return rc;
        *out = match;
        return 0;
    }
    /* else match, if set, was opened by a txn that committed after we began.  A new handle
     * takes the lowest free slot, as LMDB's does; every slot below free_hint is in use. */
    MDB_dbi from = env->free_hint > CORE_DBS ? env->free_hint : CORE_DBS;
    for (MDB_dbi i = from; i < limit && !slot; i++)
        if (!env->dbinfo[i].name.mv_data)
            slot = i;
    env->free_hint = slot ? slot : (limit > from ? limit : from);
    if (!slot && !match) {
        if (limit >= env->maxdbs) {
            pthread_mutex_unlock(&env->dbi_mutex);
            return MDB_DBS_FULL;
        }
        slot = limit;
    }
    pthread_mutex_unlock(&env->dbi_mutex);

    db_record rec;
    int found;
    if ((rc = read_record(txn, &key, &rec, &found)) != 0)
        return rc;
    int created = 0;
    if (!found) {
        if (!(flags & MDB_CREATE))
            return MDB_NOTFOUND;
        if (txn->flags & TXN_RDONLY)
            return EACCES;
        memset(&rec, 0, sizeof(rec));
        rec.flags = (uint16_t)pflags;
        rec.root = P_INVALID;
        MDB_cursor mc;
        cursor_init(&mc, txn, MAIN_DBI);
        MDB_val data = {sizeof(rec), &rec};
        if ((rc = tree_put(&mc, &key, &data, PUT_SUBDATA)) != 0)
            return rc;
        created = 1;
    }

    pthread_mutex_lock(&env->dbi_mutex);
    if (match && env->dbinfo[match].name.mv_data) {
        if (txn->dbgen[match] != txn->gen) {
            txn->dbgen[match] = txn->gen;
            txn->touched[txn->ntouched++] = match;
        }
        txn->dbseq[match] = env->dbseq[match];
        txn->dbs[match] = rec;
        txn->dbstate[match] = DBS_VALID | DBS_USRVALID | (created ? DBS_DIRTY : 0);
        if (match >= txn->numdbs)
            txn->numdbs = match + 1;
        pthread_mutex_unlock(&env->dbi_mutex);
        *out = match;
        return 0;
    }
    if (!slot) {
        pthread_mutex_unlock(&env->dbi_mutex);
        return MDB_DBS_FULL;
    }
    /* the slot may have been taken meanwhile by another thread's txn */
    if (env->dbinfo[slot].name.mv_data) {
        pthread_mutex_unlock(&env->dbi_mutex);
        return MDB_DBS_FULL;
    }
    char *copy = malloc(len + 1);
    if (!copy || name_index_reserve(env) != 0) {
        free(copy);
        pthread_mutex_unlock(&env->dbi_mutex);
        return ENOMEM;
    }
    memcpy(copy, name, len + 1);
    db_info *d = &env->dbinfo[slot];
    d->name.mv_data = copy;
    d->name.mv_size = len;
    *name_cell(env, copy, len) = slot;
    env->name_index_used++;
    d->cmp = NULL;
    d->rec_known = 0;
    d->dcmp = NULL;
    set_cmp(env, slot, rec.flags);
    env->dbseq[slot]++;
    if (txn->dbgen[slot] != txn->gen) {
        txn->dbgen[slot] = txn->gen;
        txn->touched[txn->ntouched++] = slot;
    }
    txn->dbseq[slot] = env->dbseq[slot];
    txn->dbs[slot] = rec;
    txn->dbstate[slot] = DBS_VALID | DBS_USRVALID | DBS_NEW | (created ? DBS_DIRTY : 0);
    if (slot >= txn->numdbs)
        txn->numdbs = slot + 1;
    pthread_mutex_unlock(&env->dbi_mutex);
    *out = slot;
    return 0;
}

void dbi_close(MDB_env *env, MDB_dbi dbi)
{
    if (dbi < CORE_DBS || dbi >= env->maxdbs)
        return;
    pthread_mutex_lock(&env->dbi_mutex);
    if (env->dbinfo[dbi].name.mv_data) {
        dbi_slot_forget(env, dbi);
        env->dbflags[dbi] = 0;
    }
    pthread_mutex_unlock(&env->dbi_mutex);
}

int dbi_drop(MDB_txn *txn, MDB_dbi dbi, int del)
{
    for (MDB_cursor *c = txn->cursors[dbi]; c; c = c->next)
        c->flags &= ~(C_INITIALIZED | C_EOF | C_DEL);
    int rc = tree_free_all(txn, dbi);
    if (rc)
        return rc;
    if (del && dbi >= CORE_DBS) {
        MDB_cursor mc;
        cursor_init(&mc, txn, MAIN_DBI);
        int exact;
        rc = cursor_seek(&mc, &txn->env->dbinfo[dbi].name, &exact);
        if (rc == 0 && exact)
            rc = tree_del_current(&mc, 1);
        else if (rc == 0 || rc == MDB_NOTFOUND)
            rc = 0;
        if (rc)
            return rc;
        txn->dbstate[dbi] = 0;
        dbi_close(txn->env, dbi);
    }
    return 0;
}

int dbi_save_all(MDB_txn *txn)
{
    for (MDB_dbi j = 0; j < txn->ntouched; j++) {
        MDB_dbi i = txn->touched[j];
        if (i < CORE_DBS ||
            (txn->dbstate[i] & (DBS_DIRTY | DBS_VALID)) != (DBS_DIRTY | DBS_VALID))
            continue;
        if (txn->dbseq[i] != txn->env->dbseq[i])
            return MDB_BAD_DBI;
        MDB_cursor mc;
        cursor_init(&mc, txn, MAIN_DBI);
        MDB_val data = {sizeof(db_record), &txn->dbs[i]};
        int rc = tree_put(&mc, &txn->env->dbinfo[i].name, &data, PUT_SUBDATA);
        if (rc)
            return rc;
    }
    return 0;
}

/* After txn's meta is written: every record it holds is, from now on, that record in
 * snapshot txn->txnid, so the next write txn (whose snapshot this is) and its readers
 * take it without a search of MAIN.  A record the txn never loaded (STALE) or a handle
 * closed meanwhile is left out; the memory is keyed on the snapshot's txnid, which names
 * one committed state of the file, so a commit by another process simply misses. */
static inline int record_loaded(const MDB_txn *txn, MDB_dbi i)
{
    return i >= CORE_DBS && (txn->dbstate[i] & (DBS_VALID | DBS_STALE)) == DBS_VALID;
}

void dbi_remember_committed(MDB_txn *txn)
{
    MDB_env *env = txn->env;
    MDB_dbi j = 0;
    while (j < txn->ntouched && !record_loaded(txn, txn->touched[j]))
        j++;
    if (j == txn->ntouched) /* none: most txns touch only MAIN, and take no mutex */
        return;
    pthread_mutex_lock(&env->dbi_mutex);
    for (; j < txn->ntouched; j++) {
        MDB_dbi i = txn->touched[j];
        if (!record_loaded(txn, i) || env->dbseq[i] != txn->dbseq[i] ||
            !env->dbinfo[i].name.mv_data)
            continue;
        db_info *d = &env->dbinfo[i];
        d->rec = txn->dbs[i];
        d->rec_txnid = txn->txnid;
        d->rec_known = 1;
    }
    pthread_mutex_unlock(&env->dbi_mutex);
}

void dbi_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *st)
{
    db_record *d = &txn->dbs[dbi];
    st->ms_psize = txn->env->psize;
    st->ms_depth = d->depth;
    st->ms_branch_pages = d->branch_pages;
    st->ms_leaf_pages = d->leaf_pages;
    st->ms_overflow_pages = d->overflow_pages;
    st->ms_entries = d->entries;
}
