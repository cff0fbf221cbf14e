/*
 * api_misc.c -- exported version, error text, comparators and reader-table functions,
 * and the entries of the structural checker and the free-list reader on a live environment
 * (layer L7).
 */
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "mdbcore.h"
#include "readers.h"

char *mdb_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = MDB_VERSION_MAJOR;
    if (minor)
        *minor = MDB_VERSION_MINOR;
    if (patch)
        *patch = MDB_VERSION_PATCH;
    return (char *)MDB_VERSION_STRING;
}

char *mdb_strerror(int err)
{
    const char *t = errors_text(err);
    if (t)
        return (char *)t;
    return strerror(err);
}

int mdb_cmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b)
{
    return txn->dbinfo[dbi].cmp(a, b);
}

int mdb_dcmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b)
{
    MDB_cmp_func *f = txn->dbinfo[dbi].dcmp;
    return f ? f(a, b) : cmp_lex(a, b);
}

int mdb_reader_list(MDB_env *env, MDB_msg_func *func, void *ctx)
{
    if (!env || !func)
        return -1;
    if (!env->lock)
        return func("(no reader locks)\n", ctx);
    return readers_list(env->lock, func, ctx);
}

int mdb_reader_check(MDB_env *env, int *dead)
{
    if (!env)
        return EINVAL;
    return env_reader_check(env, dead);
}

/* check.c works on a txn it is given; opening one is the API's job (check.c calls no
 * engine function, so it links without the engine). */
int mdbcore_check_env(MDB_env *env, mdbcore_check_report *rep)
{
    MDB_txn *txn = NULL;
    if (!env || !rep)
        return EINVAL;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc) {
        memset(rep, 0, sizeof *rep);
        return rc;
    }
    rc = mdbcore_check_txn(txn, rep);
    mdb_txn_abort(txn);
    return rc;
}

/* The free list of a fresh read txn (check.c reads it; opening the txn is the API's job). */
int mdbcore_freelist_env(MDB_env *env, mdbcore_freelist *out)
{
    MDB_txn *txn = NULL;
    if (!env || !out)
        return EINVAL;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc) {
        memset(out, 0, sizeof *out);
        out->bad_pgno = P_INVALID;
        return rc;
    }
    rc = mdbcore_freelist_txn(txn, out);
    mdb_txn_abort(txn);
    return rc;
}
