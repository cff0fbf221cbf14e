/*
 * txn.c -- transaction lifecycle (layer L6).
 *
 *   read:  begin/renew --> ACTIVE --reset--> FINISHED --renew--> ACTIVE; abort/commit frees
 *   write: begin (writer mutex) --> ACTIVE --error--> ERROR (only abort accepted)
 *          ACTIVE --commit (commit.c)--> freed;  any --abort--> freed, mutex released
 *
 * A read txn publishes its snapshot txnid in its reader slot and re-reads the lock file's
 * txnid until both agree, so a writer scanning the slots never misses it.  The slot is
 * per thread (TLS key, released by the thread-exit destructor) or, under NOTLS, per txn.
 * A write txn starts from the newer meta under the writer mutex.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core.h"
#include "lockfile.h"
#include "readers.h"

static int bind_slot(MDB_txn *txn)
{
    MDB_env *env = txn->env;
    reader_slot *slot = txn->reader;
    if (!slot && !(env->flags & MDB_NOTLS) && !txn->owns_slot)
        slot = pthread_getspecific(env->reader_key);
    if (!slot) {
        /* the liveness lock is taken once per env, as LMDB does: under MDB_NOTLS every
         * read txn claims a slot, and an fcntl per txn was a third of a short one's time.
         * Threads racing here both take it, which is harmless. */
        int rc;
        if (__atomic_load_n(&env->pidlock_pid, __ATOMIC_RELAXED) != env->pid) {
            if ((rc = readers_pidlock(env->lock, env->pid)) != 0)
                return rc;
            __atomic_store_n(&env->pidlock_pid, env->pid, __ATOMIC_RELAXED);
        }
        rc = readers_acquire(env->lock, env->pid, pthread_self(), &slot);
        if (rc)
            return rc;
        if ((env->flags & MDB_NOTLS) || txn->owns_slot) {
            txn->owns_slot = 1;
        } else if ((rc = pthread_setspecific(env->reader_key, slot)) != 0) {
            readers_release(slot);
            return rc;
        }
    }
    if (slot->pid != (uint32_t)env->pid || slot->txnid != (txnid_t)-1)
        return MDB_BAD_RSLOT;
    txn->reader = slot;
    return 0;
}

static int renew_inner(MDB_txn *txn)
{
    MDB_env *env = txn->env;
    meta_record *m;
    int rc;
    if (env->flags & ENV_FATAL)
        return MDB_PANIC;
    if (txn->flags & TXN_RDONLY) {
        if (env->lock) {
            if ((rc = bind_slot(txn)) != 0)
                return rc;
            txnid_t t;
            do {
                t = env->lock->head->txnid;
                txn->reader->txnid = t;
                __sync_synchronize();
            } while (t != env->lock->head->txnid);
            m = __atomic_load_n(&env->metas[t & 1], __ATOMIC_RELAXED);
            if (m->txnid != t) /* lock file older than the metas: trust the metas */
                m = meta_newest(env);
            if (meta_is_damaged(env, m)) {
                /* another process published the txnid of a page this env found damaged:
                 * read the meta in force, and pin no more than it */
                m = meta_newest(env);
                t = m->txnid;
                txn->reader->txnid = t;
            }
            txn->txnid = t;
        } else {
            m = meta_newest(env);
            txn->txnid = m->txnid;
        }
    } else {
        if ((rc = env_writer_lock(env)) != 0)
            return rc;
        meta_refresh(env);
        m = meta_newest(env);
        if (env->lock && env->lock->head->txnid != m->txnid)
            env->lock->head->txnid = m->txnid;
        txn->txnid = m->txnid + 1;
        env->write_txn = txn;
        txn->dirty[0].pgno = 0;
        txn->free_pgs[0] = 0;
        txn->reclaimed[0] = 0;
        txn->reclaimed_taken = 0;
        txn->pglast = 0;
        txn->oldest = 0;
        txn->drained_at = 0;
        txn->saving_freelist = 0;
        txn->loose_pgs = NULL;
        txn->loose_count = 0;
    }
    txn->dbs[FREE_DBI] = m->dbs[FREE_DBI];
    txn->dbs[MAIN_DBI] = m->dbs[MAIN_DBI];
    txn->next_pgno = m->last_pg + 1;
    txn->first_new = txn->next_pgno;
    txn->flags &= TXN_RDONLY;
    /* a new generation forgets every handle's state at once; they come back on first use */
    if (++txn->gen == 0) {
        memset(txn->dbgen, 0, env->maxdbs * sizeof(uint32_t));
        txn->gen = 1;
    }
    txn->ntouched = 0;
    for (MDB_dbi i = 0; i < CORE_DBS; i++) {
        txn->dbgen[i] = txn->gen;
        txn->touched[txn->ntouched++] = i;
        txn->dbseq[i] = env->dbseq[i];
        txn->dbstate[i] = DBS_VALID;
    }
    /* env->numdbs only grows, and is stored with release order under dbi_mutex after the
     * handles below it were set up: an acquire load sees them as the mutex would */
    txn->numdbs = __atomic_load_n(&env->numdbs, __ATOMIC_ACQUIRE);
    if (txn->dbs[MAIN_DBI].root != P_INVALID && txn->dbs[MAIN_DBI].root >= txn->next_pgno)
        return CORRUPT_AT(txn->dbs[MAIN_DBI].root);
    /* Another process grew the map (the size is in the meta): follow it, in place within
     * the reservation or in a new one, with no error and no call from the application.
     * A map that cannot follow (FIXEDMAP past its reservation, no address space left)
     * reports MAP_RESIZED once the data no longer fits, as in LMDB; until then the
     * snapshot is read in the map there is. */
    if (m->mapsize > __atomic_load_n(&env->mapsize, __ATOMIC_RELAXED)) {
        rc = datafile_grow(env, (size_t)m->mapsize);
        if (rc && txn->next_pgno > env_maxpg(env))
            return rc;
    }
    if (txn->next_pgno > env_maxpg(env))
        return MDB_MAP_RESIZED;
    if (txn->next_pgno > env->file_pages)
        datafile_refresh_size(env);
    return 0;
}

void txn_dbi_setup(MDB_txn *txn, MDB_dbi dbi)
{
    MDB_env *env = txn->env;
    txn->dbgen[dbi] = txn->gen;
    txn->touched[txn->ntouched++] = dbi;
    pthread_mutex_lock(&env->dbi_mutex);
    txn->dbseq[dbi] = env->dbseq[dbi];
    /* a handle the env holds now, even one opened after this txn began: its record is
     * read from this txn's snapshot on use (STALE), so it works wherever the DB exists */
    if (dbi < CORE_DBS)
        txn->dbstate[dbi] = DBS_VALID;
    else if (dbi < env->numdbs && env->dbinfo[dbi].name.mv_data) {
        const db_info *d = &env->dbinfo[dbi];
        /* same committed snapshot, same MAIN: the record another txn found or committed
         * is ours (a write txn's snapshot is the one before its own txnid; a child's
         * parent has not touched this handle, or the child would have its record) */
        txnid_t snapshot = (txn->flags & TXN_RDONLY) ? txn->txnid : txn->txnid - 1;
        if (d->rec_known && d->rec_txnid == snapshot) {
            txn->dbs[dbi] = d->rec;
            txn->dbstate[dbi] = DBS_VALID | DBS_USRVALID;
        } else {
            txn->dbstate[dbi] = DBS_VALID | DBS_USRVALID | DBS_STALE;
        }
    } else
        txn->dbstate[dbi] = 0;
    if (txn->dbstate[dbi] && dbi >= txn->numdbs)
        txn->numdbs = dbi + 1;
    pthread_mutex_unlock(&env->dbi_mutex);
}

MDB_txn *txn_alloc(size_t n)
{
    /* calloc: dbgen starts at 0, never a live generation */
    MDB_txn *txn = calloc(1, sizeof(*txn) + n * (sizeof(db_record) + sizeof(unsigned) +
                                                 sizeof(uint32_t) + sizeof(MDB_dbi) + 1));
    if (!txn)
        return NULL;
    txn->dbs = (db_record *)(txn + 1);
    txn->dbseq = (unsigned *)(txn->dbs + n);
    txn->dbgen = (uint32_t *)(txn->dbseq + n);
    txn->touched = (MDB_dbi *)(txn->dbgen + n);
    txn->dbstate = (uint8_t *)(txn->touched + n);
    return txn;
}

/* Reset a cached txn object for reuse: every field cleared but its per-dbi arrays and
 * their generation (so no handle of the last use reads as set up). */
static void txn_clear_keep_dbis(MDB_txn *txn)
{
    MDB_txn keep = *txn;
    memset(txn, 0, sizeof(*txn));
    txn->dbs = keep.dbs;
    txn->dbseq = keep.dbseq;
    txn->dbgen = keep.dbgen;
    txn->touched = keep.touched;
    txn->dbstate = keep.dbstate;
    txn->gen = keep.gen;
}

#define RTXN_CACHE_MAX 4

/* A read txn object from the env's cache (arrays and generation kept), else a new one. */
static MDB_txn *rtxn_get(MDB_env *env)
{
    pthread_mutex_lock(&env->dbi_mutex);
    MDB_txn *txn = env->rtxn_cache;
    if (txn) {
        env->rtxn_cache = txn->child;
        env->rtxn_cached--;
    }
    pthread_mutex_unlock(&env->dbi_mutex);
    if (!txn)
        return txn_alloc(env->maxdbs);
    txn_clear_keep_dbis(txn);
    return txn;
}

static void rtxn_put(MDB_env *env, MDB_txn *txn)
{
    pthread_mutex_lock(&env->dbi_mutex);
    if (env->rtxn_cached < RTXN_CACHE_MAX) {
        txn->child = env->rtxn_cache;
        env->rtxn_cache = txn;
        env->rtxn_cached++;
        txn = NULL;
    }
    pthread_mutex_unlock(&env->dbi_mutex);
    free(txn);
}

/* A cached write txn object (arrays kept, emptied), else NULL.  The cache is one
 * pointer, taken and given back with atomic swaps: a mutex round trip on each begin and
 * commit was a measurable part of a small txn. */
static MDB_txn *wtxn_get(MDB_env *env)
{
    MDB_txn *txn = __atomic_exchange_n(&env->wtxn_cache, NULL, __ATOMIC_ACQUIRE);
    if (!txn)
        return NULL;
    MDB_txn keep = *txn;
    txn_clear_keep_dbis(txn);
    txn->dirty = keep.dirty;
    txn->dirty_cap = keep.dirty_cap;
    txn->dirty[0].pgno = 0;
    txn->dirty_index = keep.dirty_index;
    txn->dirty_index_bits = keep.dirty_index_bits;
    txn->free_pgs = keep.free_pgs;
    txn->free_pgs[0] = 0;
    txn->reclaimed = keep.reclaimed;
    txn->reclaimed[0] = 0; /* (reclaimed_taken: 0 with the rest, cleared above) */
    txn->cursors = keep.cursors;
    return txn;
}

static void wtxn_free(MDB_txn *txn)
{
    dirty_list_free(txn);
    idl_free(txn->free_pgs);
    idl_free(txn->reclaimed);
    free(txn->cursors);
    free(txn);
}

/* Keep an ended write txn object for the next begin (its cursors are all closed). */
static void wtxn_put(MDB_env *env, MDB_txn *txn)
{
    idl_free(txn->spill_pgs); /* rare, and sized for that txn */
    txn->spill_pgs = NULL;
    MDB_txn *none = NULL;
    if (!__atomic_compare_exchange_n(&env->wtxn_cache, &none, txn, 0, __ATOMIC_RELEASE,
                                     __ATOMIC_RELAXED))
        wtxn_free(txn);
}

void txn_cache_free(MDB_env *env)
{
    if (env->wtxn_cache) {
        wtxn_free(env->wtxn_cache);
        env->wtxn_cache = NULL;
    }
    while (env->rtxn_cache) {
        MDB_txn *next = env->rtxn_cache->child;
        free(env->rtxn_cache);
        env->rtxn_cache = next;
    }
    env->rtxn_cached = 0;
}

/* Give back what a txn holds; the handle itself survives (reset) unless free_it. */
static void txn_end(MDB_txn *txn, int free_it)
{
    MDB_env *env = txn->env;
    if (txn->flags & TXN_RDONLY) {
        if (txn->reader) {
            txn->reader->txnid = (txnid_t)-1;
            if (txn->owns_slot && free_it) {
                readers_release(txn->reader);
                txn->reader = NULL;
                txn->owns_slot = 0;
            } else if (!txn->owns_slot) {
                txn->reader = NULL;
            }
        }
    } else if (!(txn->flags & TXN_FINISHED)) {
        for (MDB_dbi j = 0; j < txn->ntouched; j++) {
            MDB_dbi i = txn->touched[j];
            MDB_cursor *c = txn->cursors[i];
            while (c) {
                MDB_cursor *next = c->next;
                cursor_obj_retire(env, c);
                c = next;
            }
            txn->cursors[i] = NULL;
        }
        dirty_release_all(txn);
        env->write_txn = NULL;
        env_writer_unlock(env);
    }
    txn->flags |= TXN_FINISHED;
    if (!free_it)
        return;
    if (!(txn->flags & TXN_RDONLY))
        wtxn_put(env, txn);
    else
        rtxn_put(env, txn);
}

/* Handles opened in this txn: keep them env-wide (commit) or forget them (abort). */
static void dbis_settle(MDB_txn *txn, int keep)
{
    MDB_env *env = txn->env;
    /* Most txns open no handle: then there is nothing to publish and the mutex is not
     * taken (env->numdbs only grows, so a count already covering ours stays so). */
    int any_new = 0;
    for (MDB_dbi j = 0; j < txn->ntouched && !any_new; j++) {
        MDB_dbi i = txn->touched[j];
        any_new = i >= CORE_DBS && (txn->dbstate[i] & DBS_NEW);
    }
    if (!any_new && (!keep || txn->numdbs <= __atomic_load_n(&env->numdbs, __ATOMIC_ACQUIRE)))
        return;
    pthread_mutex_lock(&env->dbi_mutex);
    for (MDB_dbi j = 0; j < txn->ntouched; j++) {
        MDB_dbi i = txn->touched[j];
        if (i < CORE_DBS || !(txn->dbstate[i] & DBS_NEW))
            continue;
        if (keep) {
            env->dbflags[i] = txn->dbs[i].flags;
        } else if (env->dbseq[i] == txn->dbseq[i]) {
            dbi_slot_forget(env, i);
        }
    }
    if (keep && txn->numdbs > env->numdbs)
        __atomic_store_n(&env->numdbs, txn->numdbs, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&env->dbi_mutex);
}

/* own_slot: a read txn with a slot of its own, as under NOTLS, whatever the thread holds. */
static int begin_impl(MDB_env *env, MDB_txn *parent, unsigned flags, int own_slot, MDB_txn **out)
{
    if (env->flags & ENV_FATAL)
        return MDB_PANIC;
    int rdonly = (flags & MDB_RDONLY) != 0;
    if (parent)
        return rdonly ? EINVAL : txn_nested_begin(parent, out);
    if (!rdonly && (env->flags & MDB_RDONLY))
        return EACCES;
    size_t n = env->maxdbs;
    MDB_txn *cached = rdonly ? NULL : wtxn_get(env);
    MDB_txn *txn = rdonly ? rtxn_get(env) : cached ? cached : txn_alloc(n);
    if (!txn)
        return ENOMEM;
    txn->env = env;
    txn->dbinfo = env->dbinfo;
    txn->flags = rdonly ? TXN_RDONLY : 0;
    txn->owns_slot = rdonly && own_slot;
    if (!rdonly && !cached) {
        txn->dirty_cap = 1024;
        txn->dirty = malloc(txn->dirty_cap * sizeof(dirty_entry));
        txn->free_pgs = idl_alloc(256);
        txn->reclaimed = idl_alloc(256);
        txn->cursors = calloc(n, sizeof(MDB_cursor *));
        if (!txn->dirty || !txn->free_pgs || !txn->reclaimed || !txn->cursors) {
            dirty_list_free(txn);
            idl_free(txn->free_pgs);
            idl_free(txn->reclaimed);
            free(txn->cursors);
            free(txn);
            return ENOMEM;
        }
        txn->dirty[0].pgno = 0;
    }
    int rc = renew_inner(txn);
    if (rc) {
        if (!rdonly && env->write_txn == txn) {
            txn_end(txn, 1);
        } else {
            if (rdonly && txn->reader) {
                txn->reader->txnid = (txnid_t)-1;
                if (txn->owns_slot)
                    readers_release(txn->reader);
            }
            if (rdonly)
                rtxn_put(env, txn);
            else
                wtxn_put(env, txn);
        }
        return rc;
    }
    *out = txn;
    return 0;
}

int txn_begin(MDB_env *env, MDB_txn *parent, unsigned flags, MDB_txn **out)
{
    return begin_impl(env, parent, flags, 0, out);
}

int txn_begin_own_slot(MDB_env *env, MDB_txn **out)
{
    return begin_impl(env, NULL, MDB_RDONLY, 1, out);
}

int txn_renew(MDB_txn *txn)
{
    int rc = renew_inner(txn);
    if (rc) {
        if (txn->reader)
            txn->reader->txnid = (txnid_t)-1;
        txn->flags |= TXN_FINISHED;
    }
    return rc;
}

void txn_reset(MDB_txn *txn)
{
    if (!(txn->flags & TXN_FINISHED))
        dbis_settle(txn, 0);
    txn_end(txn, 0);
}

void txn_abort(MDB_txn *txn)
{
    if (txn->parent) {
        txn_nested_abort(txn);
        return;
    }
    if (txn->child)
        txn_nested_abort(txn->child);
    if (!(txn->flags & TXN_FINISHED))
        dbis_settle(txn, 0);
    txn_end(txn, 1);
}

/* commit.c calls these once the data is durable (or for read txns at once). */
void txn_finish_commit(MDB_txn *txn)
{
    dbis_settle(txn, 1);
    txn_end(txn, 1);
}
