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
    for (TxnObject *t = txn; t; t = t->parent) {
        if (t->loading) {
            /* the engine answers MDB_BAD_TXN to such calls too (cffi backend) */
            PyObject *name = PyUnicode_FromString("BadTxnError");
            if (name) {
                err_typed(name, "load_sorted", MDB_BAD_TXN,
                          "this transaction is running load_sorted(): its iterable may not "
                          "use it");
                Py_DECREF(name);
            }
            return -1;
        }
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

void txn_busy(TxnObject *txn, int delta)
{
    for (TxnObject *t = txn; t; t = t->parent)
        t->busy += delta;
}

/* The live transactions of an environment and the cursors of a transaction are doubly
 * linked lists through the objects' prev/next, headed by `head`. */
#define LIST_PUSH(head, node)                                                             \
    do {                                                                                  \
        (node)->prev = NULL;                                                              \
        (node)->next = (head);                                                            \
        if (head)                                                                         \
            (head)->prev = (node);                                                        \
        (head) = (node);                                                                  \
    } while (0)
/* owner may be NULL (then the node is no list's head) */
#define LIST_REMOVE(owner, field, node)                                                   \
    do {                                                                                  \
        if ((node)->prev)                                                                 \
            (node)->prev->next = (node)->next;                                            \
        else if ((owner) && (owner)->field == (node))                                     \
            (owner)->field = (node)->next;                                                \
        if ((node)->next)                                                                 \
            (node)->next->prev = (node)->prev;                                            \
        (node)->next = (node)->prev = NULL;                                               \
    } while (0)

void txn_link(EnvObject *env, TxnObject *txn)
{
    LIST_PUSH(env->txns, txn);
}

void txn_unlink(TxnObject *txn)
{
    LIST_REMOVE(txn->env, txns, txn);
}

void cursor_link(TxnObject *txn, CursorObject *cur)
{
    LIST_PUSH(txn->cursors, cur);
}

void cursor_unlink(CursorObject *cur)
{
    LIST_REMOVE(cur->txn, cursors, cur);
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

void env_invalidate_db(EnvObject *env, MDB_dbi dbi, int close)
{
    for (TxnObject *t = env->txns; t; t = t->next)
        txn_invalidate_db(t, dbi, close);
}

void txn_invalidate_db(TxnObject *t, MDB_dbi dbi, int close)
{
    {
        CursorObject *c = t->cursors;
        while (c) {
            CursorObject *n = c->next;
            if (c->db && c->db->dbi == dbi) {
                if (close) {
                    cursor_invalidate(c);
                    cursor_unlink(c);
                } else {
                    c->positioned = 0;
                }
            }
            c = n;
        }
    }
}

/* Databases opened inside txn: on commit they pass to the parent (or become
 * permanent); on abort the engine forgets them, so the cache must too. */
static void txn_settle_dbs(TxnObject *txn, int committed)
{
    EnvObject *env = txn->env;
    if (!txn->created_dbs || !env->dbs)
        return;
    txn->created_dbs = 0;
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    PyObject *gone = PyList_New(0);
    if (!gone) {
        PyErr_Clear();
        return;
    }
    while (PyDict_Next(env->dbs, &pos, &k, &v)) {
        DbObject *db = (DbObject *)v;
        if (db->creator != txn)
            continue;
        if (committed) {
            db->creator = txn->parent;
            if (txn->parent)
                txn->parent->created_dbs++;
        } else {
            db->creator = NULL;
            db->valid = 0;
            if (PyList_Append(gone, k) < 0)
                PyErr_Clear();
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gone); i++)
        if (PyDict_DelItem(env->dbs, PyList_GET_ITEM(gone, i)) < 0)
            PyErr_Clear();
    Py_DECREF(gone);
}

int txn_end(TxnObject *txn, int commit)
{
    EnvObject *env = txn->env;
    int rc = 0;
    if (!txn->valid)
        return 0;
    /* children first: a parent's end discards its unfinished children (their
     * writes are not committed with the parent) */
    for (;;) {
        TxnObject *child = NULL;
        for (TxnObject *t = env->txns; t; t = t->next)
            if (t->parent == txn && t->valid) {
                child = t;
                break;
            }
        if (!child)
            break;
        txn_end(child, 0);
    }
    txn_close_cursors(txn);
    txn->valid = 0;
    MDB_txn *t = txn->txn;
    txn->txn = NULL;
    txn_unlink(txn);
    if (txn->write && !txn->parent)
        env->write_txns--;
    if (!t || env->pid != mdb_cur_pid) {
        txn_settle_dbs(txn, 0);
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
        txn_settle_dbs(txn, crc == 0);
        return crc;
    }
    txn_settle_dbs(txn, 0);
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
