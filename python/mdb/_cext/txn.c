/*
 * txn.c -- the Transaction type.
 *
 * A transaction is live from begin() until commit()/abort() (or the end of its
 * parent, or the close of its environment); afterwards every method but
 * abort() raises mdb.Error.  One top-level write transaction per environment:
 * a second begin(write=True) from another thread waits for the writer lock with
 * the GIL released; from the same thread it raises instead of deadlocking.
 * Read transactions are reset and kept as a spare for the next begin() when
 * max_spare_txns > 0.
 */
#include "module.h"

#include <errno.h>

#define FASTARGS PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames
#define METH_FK (METH_FASTCALL | METH_KEYWORDS)

PyObject *txn_new(EnvObject *env, DbObject *db, TxnObject *parent, int write, int buffers)
{
    int rc;
    if (env_check(env) < 0)
        return NULL;
    if (db && (!db->valid || db->owner != env))
        return err_invalid();
    if (parent) { /* py-lmdb's order of checks, and its messages */
        if (!parent->write)
            return err_set("Read-only transactions cannot be nested.", EINVAL);
        if (txn_check(parent) < 0)
            return NULL;
        if (parent->env != env)
            return err_set("Parent transaction belongs to another environment.", EINVAL);
        if (!write)
            return err_set("Read-only child transactions require the LMDB 1.0 engine.", EINVAL);
    }
    if (write && env->readonly)
        return err_set("mdb_txn_begin", EACCES);
    if (write && !parent && env->write_txns > 0 && pthread_equal(env->writer, pthread_self()))
        return err_msg("mdb_txn_begin: this thread already has an active write transaction "
                       "in this Environment (it would deadlock)");

    TxnObject *self = PyObject_GC_New(TxnObject, &MdbTxn_Type);
    if (!self)
        return NULL;
    self->weakreflist = NULL;
    self->env = env;
    Py_INCREF(env);
    self->parent = parent;
    Py_XINCREF(parent);
    self->db = db ? db : env->main_db;
    Py_INCREF(self->db);
    self->txn = NULL;
    self->valid = 0;
    self->write = write;
    self->buffers = buffers;
    self->busy = 0;
    self->loading = 0;
    self->created_dbs = 0;
    self->next = self->prev = NULL;
    self->cursors = NULL;
    PyObject_GC_Track(self);

    MDB_txn *txn = NULL;
    if (!write && env->spare) {
        txn = env->spare;
        env->spare = NULL;
        rc = mdb_txn_renew(txn);
        if (rc) {
            mdb_txn_abort(txn);
            txn = NULL;
        }
    }
    if (!txn) {
        MDB_env *e = env->env;
        MDB_txn *p = parent ? parent->txn : NULL;
        unsigned int fl = write ? 0 : MDB_RDONLY;
        if (parent)
            txn_busy(parent, 1);
        if (write)
            MDB_UNLOCKED(env, rc = mdb_txn_begin(e, p, fl, &txn));
        else
            rc = mdb_txn_begin(e, p, fl, &txn); /* never waits long: see gil.h */
        if (parent)
            txn_busy(parent, -1);
        if (rc) {
            Py_DECREF(self);
            return err_set("mdb_txn_begin", rc);
        }
        if (!env->valid) { /* closed by another thread while we waited */
            mdb_txn_abort(txn);
            Py_DECREF(self);
            return err_invalid();
        }
    }
    self->txn = txn;
    self->valid = 1;
    txn_link(env, self);
    if (write && !parent) {
        env->write_txns++;
        env->writer = pthread_self();
    }
    return (PyObject *)self;
}

static PyObject *txn_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"env", "db", "parent", "write", "buffers", NULL};
    PyObject *env, *db = Py_None, *parent = Py_None;
    int write = 0, buffers = 0;
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!|OOpp", kwlist, &MdbEnv_Type, &env, &db,
                                     &parent, &write, &buffers))
        return NULL;
    if (db != Py_None && !PyObject_TypeCheck(db, &MdbDb_Type)) {
        PyErr_SetString(PyExc_TypeError, "db must be a _Database");
        return NULL;
    }
    if (parent != Py_None && !PyObject_TypeCheck(parent, &MdbTxn_Type)) {
        PyErr_SetString(PyExc_TypeError, "parent must be a Transaction");
        return NULL;
    }
    return txn_new((EnvObject *)env, db == Py_None ? NULL : (DbObject *)db,
                   parent == Py_None ? NULL : (TxnObject *)parent, write, buffers);
}

static int txn_traverse(TxnObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->env);
    Py_VISIT(self->parent);
    return 0;
}

static int txn_clear(TxnObject *self)
{
    if (self->valid && self->env)
        txn_end(self, 0);
    Py_CLEAR(self->parent);
    Py_CLEAR(self->db);
    Py_CLEAR(self->env);
    return 0;
}

static void txn_dealloc(TxnObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)self);
    txn_clear(self);
    PyObject_GC_Del(self);
}

DbObject *txn_resolve_db(TxnObject *txn, PyObject *db)
{
    if (db == NULL || db == Py_None)
        return txn->db;
    if (!PyObject_TypeCheck(db, &MdbDb_Type)) {
        PyErr_Format(PyExc_TypeError, "db must be a _Database, not %.100s",
                     Py_TYPE(db)->tp_name);
        return NULL;
    }
    DbObject *d = (DbObject *)db;
    if (d->owner != txn->env || !d->valid) {
        /* a dropped handle or one of another environment: what the engine
         * answers for an unknown dbi */
        err_set("mdb_dbi", EINVAL);
        return NULL;
    }
    return d;
}

/* The start of most methods: the txn is live and db (None: the txn's default) is one of
 * its environment's open handles.  NULL with an exception otherwise. */
static DbObject *txn_db_arg(TxnObject *self, PyObject *db)
{
    if (txn_check(self) < 0)
        return NULL;
    return txn_resolve_db(self, db);
}

static int key_ok(TxnObject *txn, const char *what, MDB_val *k)
{
    int limit = mdb_env_get_maxkeysize(txn->env->env);
    if (k->mv_size == 0 || k->mv_size > (size_t)limit) {
        err_badvalsize(what, (Py_ssize_t)k->mv_size, limit);
        return -1;
    }
    return 0;
}

static int dupval_ok(TxnObject *txn, DbObject *db, const char *what, MDB_val *v)
{
    if (!(db->flags & MDB_DUPSORT))
        return 0;
    int limit = mdb_env_get_maxkeysize(txn->env->env);
    if (v->mv_size > (size_t)limit) {
        err_badvalsize(what, (Py_ssize_t)v->mv_size, limit);
        return -1;
    }
    return 0;
}

static PyObject *txn_get(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "default", "db", NULL};
    PyObject *a[3] = {NULL, Py_None, Py_None};
    if (nargs == 1 && !kwnames)
        a[0] = args[0];
    else if (args_parse_req("get", args, nargs, kwnames, names, a, 1, "'key'") < 0)
        return NULL;
    DbObject *db = txn_db_arg(self, a[2]);
    if (!db)
        return NULL;
    MDB_val k, v;
    InBuf kb;
    if (inbuf_get(a[0], &k, &kb, "key") < 0)
        return NULL;
    int rc = mdb_get(self->txn, db->dbi, &k, &v);
    inbuf_release(&kb);
    if (rc == MDB_NOTFOUND) {
        Py_INCREF(a[1]);
        return a[1];
    }
    if (rc)
        return err_set("mdb_get", rc);
    return outval(self, &v);
}

static unsigned int put_flags(DbObject *db, int dupdata, int overwrite, int append)
{
    unsigned int f = 0;
    if (!dupdata && (db->flags & MDB_DUPSORT))
        f |= MDB_NODUPDATA;
    if (!overwrite)
        f |= MDB_NOOVERWRITE;
    if (append)
        f |= (db->flags & MDB_DUPSORT) ? MDB_APPENDDUP : MDB_APPEND;
    return f;
}

static PyObject *txn_put(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "value", "dupdata", "overwrite", "append",
                                        "db", NULL};
    PyObject *a[6] = {NULL, NULL, Py_True, Py_True, Py_False, Py_None};
    int fl[3] = {1, 1, 0}; /* dupdata, overwrite, append */
    if (nargs == 2 && !kwnames) {
        a[0] = args[0];
        a[1] = args[1];
    } else if (args_parse("put", args, nargs, kwnames, names, a) < 0 ||
               args_bools(a + 2, fl, 3) < 0) {
        return NULL;
    }
    if (!a[0] || !a[1]) {
        PyErr_SetString(PyExc_TypeError, "put() missing required argument 'key' or 'value'");
        return NULL;
    }
    DbObject *db = txn_db_arg(self, a[5]);
    if (!db)
        return NULL;
    MDB_val k, v;
    InBuf kb, vb;
    if (inbuf_get_kv(a[0], a[1], &k, &v, &kb, &vb) < 0)
        return NULL;
    PyObject *ret = NULL;
    {
        /* the engine's checks come first (read-only, bad txn...), as in py-lmdb; a size
         * refusal is then told apart for the message */
        int rc = mdb_put(self->txn, db->dbi, &k, &v, put_flags(db, fl[0], fl[1], fl[2]));
        if (rc == MDB_KEYEXIST)
            ret = Py_False, Py_INCREF(ret);
        else if (rc == MDB_BAD_VALSIZE && (key_ok(self, "mdb_put", &k) < 0 ||
                                           dupval_ok(self, db, "mdb_put", &v) < 0))
            ;
        else if (rc)
            err_set("mdb_put", rc);
        else
            ret = Py_True, Py_INCREF(ret);
    }
    inbuf_release(&kb);
    inbuf_release(&vb);
    return ret;
}

/* Close and drop the temporary cursor of replace/pop/putmulti and hand back `result`; an
 * exception already raised by the operation survives the close (which cannot fail on a
 * live txn, but must not replace the caller's error if it did). */
static PyObject *close_temp_cursor(PyObject *cur, PyObject *result)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    PyObject *cr = PyObject_CallMethod(cur, "close", NULL);
    Py_XDECREF(cr);
    PyErr_Restore(et, ev, tb);
    Py_DECREF(cur);
    return result;
}

/* replace/pop/putmulti: the cursor method `meth` called with the tuple `pa` (stolen; NULL
 * passes the error on) on a temporary cursor over db. */
static PyObject *via_temp_cursor(TxnObject *self, DbObject *db, const char *meth, PyObject *pa)
{
    if (!db || !pa) {
        Py_XDECREF(pa);
        return NULL;
    }
    PyObject *cur = cursor_new(self, db);
    if (!cur) {
        Py_DECREF(pa);
        return NULL;
    }
    PyObject *fn = PyObject_GetAttrString(cur, meth);
    PyObject *r = fn ? PyObject_Call(fn, pa, NULL) : NULL;
    Py_XDECREF(fn);
    Py_DECREF(pa);
    return close_temp_cursor(cur, r);
}

static PyObject *txn_putmulti(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"items", "dupdata", "overwrite", "append", "db", NULL};
    PyObject *a[5] = {NULL, Py_True, Py_True, Py_False, Py_None};
    if (args_parse("putmulti", args, nargs, kwnames, names, a) < 0)
        return NULL;
    DbObject *db = txn_db_arg(self, a[4]);
    return via_temp_cursor(self, db, "putmulti",
                           db ? PyTuple_Pack(4, a[0] ? a[0] : Py_None, a[1], a[2], a[3]) : NULL);
}

/* Beyond py-lmdb: build an empty database from sorted records (extras.c). */
static PyObject *txn_load_sorted(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"iterable", "db", NULL};
    PyObject *a[2] = {NULL, Py_None};
    if (args_parse_req("load_sorted", args, nargs, kwnames, names, a, 1, "'iterable'") < 0)
        return NULL;
    DbObject *db = txn_db_arg(self, a[1]);
    if (!db)
        return NULL;
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
    return mdb_core_load_sorted(self, db, a[0]);
#else
    return err_msg("load_sorted() needs the mdb core (this build links the system liblmdb)");
#endif
}

/* The buffer arguments are converted before anything else happens (a TypeError comes
 * first), as py-lmdb's argument parser does. */
static int args_are_buffers(PyObject *key, PyObject *value)
{
    PyObject *objs[2] = {key, value};
    const char *names[2] = {"key", "value"};
    for (int i = 0; i < 2; i++) {
        if (!objs[i])
            continue;
        MDB_val v;
        InBuf b;
        if (inbuf_get(objs[i], &v, &b, names[i]) < 0)
            return -1;
        inbuf_release(&b);
    }
    return 0;
}

static PyObject *txn_replace(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "value", "db", NULL};
    PyObject *a[3] = {NULL, NULL, Py_None};
    if (args_parse_req("replace", args, nargs, kwnames, names, a, 2, NULL) < 0 ||
        txn_check(self) < 0 || args_are_buffers(a[0], a[1]) < 0)
        return NULL;
    DbObject *db = txn_resolve_db(self, a[2]);
    return via_temp_cursor(self, db, "replace", db ? PyTuple_Pack(2, a[0], a[1]) : NULL);
}

static PyObject *txn_pop(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "db", NULL};
    PyObject *a[2] = {NULL, Py_None};
    if (args_parse_req("pop", args, nargs, kwnames, names, a, 1, "'key'") < 0 ||
        txn_check(self) < 0 || args_are_buffers(a[0], NULL) < 0)
        return NULL;
    DbObject *db = txn_resolve_db(self, a[1]);
    return via_temp_cursor(self, db, "pop", db ? PyTuple_Pack(1, a[0]) : NULL);
}

static PyObject *txn_delete(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "value", "db", NULL};
    PyObject *a[3] = {NULL, NULL, Py_None};
    if (args_parse_req("delete", args, nargs, kwnames, names, a, 1, "'key'") < 0)
        return NULL;
    DbObject *db = txn_db_arg(self, a[2]);
    if (!db)
        return NULL;
    MDB_val k, v;
    InBuf kb, vb = {.have_view = 0};
    if (inbuf_get(a[0], &k, &kb, "key") < 0)
        return NULL;
    MDB_val *vp = NULL;
    if (a[1] && a[1] != Py_None) {
        if (inbuf_get(a[1], &v, &vb, "value") < 0) {
            inbuf_release(&kb);
            return NULL;
        }
        if (v.mv_size)
            vp = &v;
    }
    int rc = mdb_del(self->txn, db->dbi, &k, vp);
    inbuf_release(&kb);
    inbuf_release(&vb);
    if (rc == MDB_NOTFOUND)
        Py_RETURN_FALSE;
    if (rc)
        return err_set("mdb_del", rc);
    Py_RETURN_TRUE;
}

/* cursor(db=None) and stat(db=None): their one argument, resolved. */
static DbObject *txn_only_db_arg(TxnObject *self, const char *fname, FASTARGS)
{
    static const char *const names[] = {"db", NULL};
    PyObject *a[1] = {Py_None};
    if (args_parse(fname, args, nargs, kwnames, names, a) < 0)
        return NULL;
    return txn_db_arg(self, a[0]);
}

static PyObject *txn_cursor(TxnObject *self, FASTARGS)
{
    DbObject *db = txn_only_db_arg(self, "cursor", args, nargs, kwnames);
    return db ? cursor_new(self, db) : NULL;
}

static PyObject *txn_stat(TxnObject *self, FASTARGS)
{
    DbObject *db = txn_only_db_arg(self, "stat", args, nargs, kwnames);
    if (!db)
        return NULL;
    MDB_stat st;
    int rc = mdb_stat(self->txn, db->dbi, &st);
    if (rc)
        return err_set("mdb_stat", rc);
    return stat_dict(&st);
}

static PyObject *txn_drop(TxnObject *self, FASTARGS)
{
    static const char *const names[] = {"db", "delete", NULL};
    PyObject *a[2] = {NULL, Py_True};
    int del, rc;
    if (args_parse("drop", args, nargs, kwnames, names, a) < 0 || args_bool(a[1], &del) < 0)
        return NULL;
    if (!a[0]) {
        PyErr_SetString(PyExc_TypeError, "drop() missing required argument 'db'");
        return NULL;
    }
    DbObject *db = txn_db_arg(self, a[0]);
    if (!db)
        return NULL;
    /* py-lmdb closes this txn's cursors on the database whenever delete=True is asked,
     * before the engine is called (so even when it then refuses, and for the main
     * database); other txns' cursors are left alone (see below) */
    if (del)
        txn_invalidate_db(self, db->dbi, 1);
    else
        env_invalidate_db(self->env, db->dbi, 0);
    if (del && db == self->env->main_db)
        del = 0; /* the main database can only be emptied */
    MDB_txn *t = self->txn;
    MDB_dbi dbi = db->dbi;
    txn_busy(self, 1);
    MDB_UNLOCKED(self->env, rc = mdb_drop(t, dbi, del));
    txn_busy(self, -1);
    if (rc)
        return err_set("mdb_drop", rc);
    if (del) {
        /* the handle is gone: other txns' cursors on it would reach a closed slot of the
         * engine (py-lmdb leaves them be; an intended difference, pylmdb_differences.py) */
        env_invalidate_db(self->env, dbi, 1);
        db->valid = 0;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(self->env->dbs, &pos, &k, &v)) {
            if (v == (PyObject *)db) {
                Py_INCREF(k);
                PyDict_DelItem(self->env->dbs, k);
                Py_DECREF(k);
                break;
            }
        }
    }
    Py_RETURN_NONE;
}

static PyObject *txn_id(TxnObject *self, PyObject *unused)
{
    (void)unused;
    if (txn_check(self) < 0)
        return NULL;
    return PyLong_FromSize_t(mdb_txn_id(self->txn));
}

static PyObject *txn_commit(TxnObject *self, PyObject *unused)
{
    (void)unused;
    if (txn_check(self) < 0)
        return NULL;
    int rc = txn_end(self, 1);
    if (rc)
        return err_set("mdb_txn_commit", rc);
    Py_RETURN_NONE;
}

static PyObject *txn_abort(TxnObject *self, PyObject *unused)
{
    (void)unused;
    if (self->valid && self->env->pid != mdb_cur_pid)
        return err_forked(self->env->pid);
    if (self->busy)
        return err_msg("Transaction is in use by another thread.");
    txn_end(self, 0);
    Py_RETURN_NONE;
}

static PyObject *txn_enter(TxnObject *self, PyObject *unused)
{
    (void)unused;
    return args_enter((PyObject *)self, txn_check(self));
}

/* METH_FASTCALL: a `with` block's end passes its three arguments without a tuple. */
static PyObject *txn_exit(TxnObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *et = nargs > 0 ? args[0] : Py_None;
    if (!self->valid)
        Py_RETURN_FALSE;
    if (et == Py_None) {
        PyObject *r = txn_commit(self, NULL);
        if (!r)
            return NULL;
        Py_DECREF(r);
    } else {
        txn_end(self, 0);
    }
    Py_RETURN_FALSE;
}

static PyObject *txn_get_env(TxnObject *self, void *c)
{
    (void)c;
    return new_ref(self->env);
}

static PyGetSetDef txn_getset[] = {
    {"env", (getter)txn_get_env, NULL, "The Environment of this transaction.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef txn_methods[] = {
    {"get", (PyCFunction)(void (*)(void))txn_get, METH_FK,
     "get(key, default=None, db=None)\n\nThe (first) value of key, or default."},
    {"put", (PyCFunction)(void (*)(void))txn_put, METH_FK,
     "put(key, value, dupdata=True, overwrite=True, append=False, db=None) -> bool\n\n"
     "Store a record; False if it was not written (exists, or out of order with append)."},
    {"putmulti", (PyCFunction)(void (*)(void))txn_putmulti, METH_FK,
     "putmulti(items, dupdata=True, overwrite=True, append=False, db=None) -> (consumed, added)\n\n"
     "Store many (key, value) tuples."},
    {"load_sorted", (PyCFunction)(void (*)(void))txn_load_sorted, METH_FK,
     "load_sorted(iterable, db=None) -> int\n\n"
     "Fill an empty database from (key, value) pairs in strictly ascending key order,\n"
     "building its pages bottom-up; returns the number of records.  Out-of-order or\n"
     "repeated keys raise KeyExistsError and leave the database empty."},
    {"replace", (PyCFunction)(void (*)(void))txn_replace, METH_FK,
     "replace(key, value, db=None)\n\nStore value and return the previous one (or None)."},
    {"pop", (PyCFunction)(void (*)(void))txn_pop, METH_FK,
     "pop(key, db=None)\n\nDelete key and return its value (or None)."},
    {"delete", (PyCFunction)(void (*)(void))txn_delete, METH_FK,
     "delete(key, value=b'', db=None) -> bool\n\nDelete key (or just one duplicate value)."},
    {"cursor", (PyCFunction)(void (*)(void))txn_cursor, METH_FK,
     "cursor(db=None) -> Cursor\n\nA cursor over db."},
    {"stat", (PyCFunction)(void (*)(void))txn_stat, METH_FK,
     "stat(db=None) -> dict\n\nStatistics of db as seen by this transaction."},
    {"drop", (PyCFunction)(void (*)(void))txn_drop, METH_FK,
     "drop(db, delete=True)\n\nEmpty db, and with delete=True remove it."},
    {"id", (PyCFunction)txn_id, METH_NOARGS, "id() -> int\n\nThe transaction id."},
    {"commit", (PyCFunction)txn_commit, METH_NOARGS, "commit()\n\nCommit the transaction."},
    {"abort", (PyCFunction)txn_abort, METH_NOARGS,
     "abort()\n\nAbandon the transaction. Idempotent."},
    {"__enter__", (PyCFunction)txn_enter, METH_NOARGS, "Return self."},
    {"__exit__", (PyCFunction)(void (*)(void))txn_exit, METH_FASTCALL,
     "Commit on normal exit, abort on exception."},
    {NULL, NULL, 0, NULL}};

PyTypeObject MdbTxn_Type = {
    MDB_TYPE_HEAD("Transaction", TxnObject, txn_dealloc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)txn_traverse,
    .tp_clear = (inquiry)txn_clear,
    .tp_weaklistoffset = offsetof(TxnObject, weakreflist),
    .tp_methods = txn_methods,
    .tp_getset = txn_getset,
    .tp_new = txn_tp_new,
    .tp_doc = "Transaction(env, db=None, parent=None, write=False, buffers=False)\n\n"
              "A read or write transaction; usually from Environment.begin().",
};
