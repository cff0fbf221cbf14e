/*
 * lifetime.c -- the parent/child registry of environments, transactions and
 * cursors.
 *
 * Invariants:
 *   - env->txns lists exactly the live (not yet ended) transactions;
 *   - txn->cursors lists exactly the open cursors of a live transaction;
 *   - ending a transaction first ends its live children (same operation:
 *     a commit commits them, an abort aborts them), then closes its cursors
 *     in the engine, then ends the engine transaction, and marks every
 *     affected object invalid before anything is freed;
 *   - an object whose environment was opened by another process (fork) never
 *     calls into the engine: its handles are leaked.
 */
#include "module.h"

int env_check(EnvObject *env)
{
    if (!env->valid) {
        err_invalid();
        return -1;
    }
    if (env->pid != mdb_cur_pid) {
        err_forked(env->pid);
        return -1;
    }
    return 0;
}

int txn_check(TxnObject *txn)
{
    if (!txn->valid || !txn->env->valid) {
        err_invalid();
        return -1;
    }
    if (txn->env->pid != mdb_cur_pid) {
        err_forked(txn->env->pid);
        return -1;
    }
    if (txn->busy) {
        err_msg("Transaction is in use by another thread.");
        return -1;
    }
    return 0;
}

int cursor_check(CursorObject *cur)
{
    if (!cur->valid || !cur->txn) {
        err_invalid();
        return -1;
    }
    return txn_check(cur->txn);
}

void txn_link(EnvObject *env, TxnObject *txn)
{
    txn->prev = NULL;
    txn->next = env->txns;
    if (env->txns)
        env->txns->prev = txn;
    env->txns = txn;
}

void txn_unlink(TxnObject *txn)
{
    EnvObject *env = txn->env;
    if (txn->prev)
        txn->prev->next = txn->next;
    else if (env && env->txns == txn)
        env->txns = txn->next;
    if (txn->next)
        txn->next->prev = txn->prev;
    txn->next = txn->prev = NULL;
}

void cursor_link(TxnObject *txn, CursorObject *cur)
{
    cur->prev = NULL;
    cur->next = txn->cursors;
    if (txn->cursors)
        txn->cursors->prev = cur;
    txn->cursors = cur;
}

void cursor_unlink(CursorObject *cur)
{
    TxnObject *txn = cur->txn;
    if (cur->prev)
        cur->prev->next = cur->next;
    else if (txn && txn->cursors == cur)
        txn->cursors = cur->next;
    if (cur->next)
        cur->next->prev = cur->prev;
    cur->next = cur->prev = NULL;
}

static void cursor_invalidate(CursorObject *cur)
{
    if (cur->cur && cur->txn && cur->txn->env->pid == mdb_cur_pid)
        mdb_cursor_close(cur->cur);
    cur->cur = NULL;
    cur->valid = 0;
    cur->positioned = 0;
}

void txn_close_cursors(TxnObject *txn)
{
    while (txn->cursors) {
        CursorObject *c = txn->cursors;
        cursor_invalidate(c);
        cursor_unlink(c);
    }
}

void env_invalidate_db(EnvObject *env, MDB_dbi dbi)
{
    for (TxnObject *t = env->txns; t; t = t->next) {
        CursorObject *c = t->cursors;
        while (c) {
            CursorObject *n = c->next;
            if (c->db && c->db->dbi == dbi) {
                cursor_invalidate(c);
                cursor_unlink(c);
            }
            c = n;
        }
    }
}

int txn_end(TxnObject *txn, int commit)
{
    EnvObject *env = txn->env;
    int rc = 0;
    if (!txn->valid)
        return 0;
    /* children first */
    for (;;) {
        TxnObject *child = NULL;
        for (TxnObject *t = env->txns; t; t = t->next)
            if (t->parent == txn && t->valid) {
                child = t;
                break;
            }
        if (!child)
            break;
        int crc = txn_end(child, commit);
        if (crc && !rc)
            rc = crc;
    }
    txn_close_cursors(txn);
    txn->valid = 0;
    MDB_txn *t = txn->txn;
    txn->txn = NULL;
    txn_unlink(txn);
    if (txn->write && !txn->parent)
        env->write_txns--;
    if (!t || env->pid != mdb_cur_pid)
        return rc;
    if (rc && commit) {
        /* a child failed to commit: the parent cannot be committed either */
        mdb_txn_abort(t);
        return rc;
    }
    if (commit && txn->write) {
        /* the GIL is released: keep other threads off this txn's ancestors */
        int crc;
        for (TxnObject *p = txn->parent; p; p = p->parent)
            p->busy++;
        MDB_UNLOCKED(env, crc = mdb_txn_commit(t));
        for (TxnObject *p = txn->parent; p; p = p->parent)
            p->busy--;
        return crc;
    }
    if (!txn->write && !env->spare && env->max_spare_txns > 0 && env->valid) {
        mdb_txn_reset(t);
        env->spare = t;
        return 0;
    }
    if (txn->write) {
        MDB_UNLOCKED(env, mdb_txn_abort(t));
    } else {
        mdb_txn_abort(t);
    }
    return 0;
}

void env_end_all_txns(EnvObject *env)
{
    while (env->txns) {
        TxnObject *top = env->txns;
        while (top->parent && top->parent->valid)
            top = top->parent;
        Py_INCREF(top);
        txn_end(top, 0);
        Py_DECREF(top);
    }
    if (env->spare) {
        if (env->pid == mdb_cur_pid)
            mdb_txn_abort(env->spare);
        env->spare = NULL;
    }
}
