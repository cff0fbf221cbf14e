/*
 * gil.h -- the one way mdb._cext releases the GIL around engine calls.
 *
 * Engine calls that may block, and are therefore always wrapped:
 *   mdb_env_open, mdb_env_close (via the keeper), mdb_txn_begin of a write
 *   txn (it waits for the writer lock), mdb_txn_commit, mdb_env_copy2/copyfd2,
 *   mdb_env_sync, mdb_env_set_mapsize, mdb_drop, mdb_reader_check,
 *   batches of getmulti/putmulti.
 * Single-record calls (mdb_get, mdb_put, mdb_cursor_get, ...) keep the GIL:
 * they touch a handful of pages and releasing costs more than it saves for
 * cached data.  So do a read txn's begin and end (py-lmdb releases it for the
 * begin): the begin waits at most for the reader table's mutex, which every
 * holder keeps for a few stores (a slot claim) or one bounded sweep of the
 * slots, never while waiting on anything else, and never while calling
 * Python.  Releasing and taking back the GIL was a tenth of a short read txn.
 *
 * While the GIL is released, env->active_ops counts the call so that close()
 * waits for it, and txn->busy marks the transaction so that another thread's
 * call on the same transaction is refused instead of racing in the engine.
 */
#ifndef MDB_CEXT_GIL_H
#define MDB_CEXT_GIL_H

#define MDB_UNLOCKED(env_, stmt)         \
    do {                                 \
        (env_)->active_ops++;            \
        Py_BEGIN_ALLOW_THREADS           \
        stmt;                            \
        Py_END_ALLOW_THREADS             \
        (env_)->active_ops--;            \
    } while (0)

#endif
