/*
 * api_dbi.c -- exported database-handle functions (layer L7); the work is in dbi.c.
 */
#include "core.h"

#define txn_ok api_txn_usable

int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi)
{
    int rc = txn_ok(txn);
    if (rc)
        return rc;
    if (!dbi)
        return EINVAL;
    rc = dbi_open(txn, name, flags, dbi);
    return rc == MDB_DBS_FULL ? rc : api_poison(txn, rc);
}

int mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *st)
{
    int rc = api_txn_dbi_usable(txn);
    if (rc)
        return rc;
    if (!st)
        return EINVAL;
    if ((rc = dbi_use(txn, dbi)) != 0)
        return rc;
    dbi_stat(txn, dbi, st);
    return 0;
}

int mdb_dbi_flags(MDB_txn *txn, MDB_dbi dbi, unsigned int *flags)
{
    if (!txn || !flags)
        return EINVAL;
    int rc = api_txn_dbi_usable(txn) == EINVAL ? EINVAL : dbi_use(txn, dbi);
    if (rc)
        return rc;
    *flags = txn->dbs[dbi].flags & DB_PERSISTENT_FLAGS;
    return 0;
}

void mdb_dbi_close(MDB_env *env, MDB_dbi dbi)
{
    if (env)
        dbi_close(env, dbi);
}

int mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del)
{
    int rc = api_txn_dbi_usable(txn);
    if (rc)
        return rc;
    if (del < 0 || del > 1)
        return EINVAL;
    /* LMDB's order: a handle this txn cannot use (EINVAL), then a read-only txn */
    if ((rc = dbi_use(txn, dbi)) != 0)
        return rc;
    if (dbi == FREE_DBI)
        return EINVAL;
    if (txn->flags & TXN_RDONLY)
        return EACCES;
    return api_poison(txn, dbi_drop(txn, dbi, del));
}

int mdb_set_compare(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp)
{
    if (!txn || dbi_use(txn, dbi) || dbi == FREE_DBI)
        return EINVAL;
    txn->dbinfo[dbi].cmp = cmp ? cmp : cmp_for_keys(txn->dbs[dbi].flags);
    return 0;
}

int mdb_set_dupsort(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp)
{
    if (!txn || dbi_use(txn, dbi) || dbi == FREE_DBI)
        return EINVAL;
    txn->dbinfo[dbi].dcmp = cmp ? cmp : cmp_for_dups(txn->dbs[dbi].flags);
    return 0;
}

int mdb_set_relfunc(MDB_txn *txn, MDB_dbi dbi, MDB_rel_func *rel)
{
    if (!txn || dbi_use(txn, dbi) || dbi == FREE_DBI)
        return EINVAL;
    txn->dbinfo[dbi].rel = rel;
    return 0;
}

int mdb_set_relctx(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
    if (!txn || dbi_use(txn, dbi) || dbi == FREE_DBI)
        return EINVAL;
    txn->dbinfo[dbi].relctx = ctx;
    return 0;
}
