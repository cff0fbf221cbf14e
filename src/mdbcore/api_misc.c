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
 * engine function, so it links without the engine).  The readers below run on a fresh
 * read txn, which they never keep. */
typedef int (*txn_reader)(MDB_txn *txn, void *out);

static int on_fresh_read_txn(MDB_env *env, txn_reader read, void *out)
{
    MDB_txn *txn = NULL;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return rc;
    rc = read(txn, out);
    mdb_txn_abort(txn);
    return rc;
}

static int check_reader(MDB_txn *txn, void *out)
{
    return mdbcore_check_txn(txn, out);
}

static int freelist_reader(MDB_txn *txn, void *out)
{
    return mdbcore_freelist_txn(txn, out);
}

int mdbcore_check_env(MDB_env *env, mdbcore_check_report *rep)
{
    if (!env || !rep)
        return EINVAL;
    memset(rep, 0, sizeof *rep); /* what a caller sees if the txn cannot begin */
    return on_fresh_read_txn(env, check_reader, rep);
}

/* The free list of a fresh read txn (check.c reads it). */
int mdbcore_freelist_env(MDB_env *env, mdbcore_freelist *out)
{
    if (!env || !out)
        return EINVAL;
    memset(out, 0, sizeof *out);
    out->bad_pgno = P_INVALID;
    return on_fresh_read_txn(env, freelist_reader, out);
}
