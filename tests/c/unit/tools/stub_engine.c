/* stub_engine.c -- stand-ins for the two engine calls check.c makes (mdb_txn_begin and
 * mdb_txn_abort), so that mdbcheck links without the engine (tests/compat builds it so). */
#include <errno.h>
#include <stddef.h>
#include "lmdb.h"

int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned flags, MDB_txn **txn)
{
    (void)env;
    (void)parent;
    (void)flags;
    *txn = NULL;
    return ENOSYS;
}

void mdb_txn_abort(MDB_txn *txn)
{
    (void)txn;
}
