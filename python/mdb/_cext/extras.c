/*
 * extras.c -- Environment features beyond LMDB that need the mdb core (mdbcore.h):
 * the reader table with each slot's snapshot age and held-back pages, and bulk loading
 * (Transaction.load_sorted).
 * Built only when CMake links our core (MDB_ENGINE_CORE + MDB_HAVE_MDBCORE_H); with the
 * system liblmdb env.c reports these as unavailable.
 */
#include "module.h"

#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
#include <stdlib.h>

#include "mdbcore.h"

/* The slots in use; *n gets their number.  NULL with an exception set on error. */
static mdbcore_reader_info *reader_table(EnvObject *self, size_t *n, unsigned flags)
{
    MDB_env *e = self->env;
    size_t cap = 16;
    for (int tries = 0; tries < 4; tries++) {
        mdbcore_reader_info *v = PyMem_Malloc(cap * sizeof *v);
        if (!v) {
            PyErr_NoMemory();
            return NULL;
        }
        size_t count = 0;
        int rc;
        MDB_UNLOCKED(self, rc = mdbcore_reader_info_list(e, v, cap, &count, flags));
        if (rc) {
            PyMem_Free(v);
            err_set("mdbcore_reader_info_list", rc);
            return NULL;
        }
        if (count <= cap) {
            *n = count;
            return v;
        }
        PyMem_Free(v);
        cap = count + 16;
    }
    err_msg("readers(): the reader table kept changing");
    return NULL;
}

PyObject *mdb_core_readers_detail(EnvObject *self)
{
    size_t n = 0;
    mdbcore_reader_info *v = reader_table(self, &n, 0);
    if (!v)
        return NULL;
    PyObject *list = PyList_New(0);
    for (size_t i = 0; list && i < n; i++) {
        /* the row is mdb._common's (all-ones fields become None), as the cffi backend's */
        PyObject *d = PyObject_CallMethod(
            mdb_common, "reader_dict", "KKKKK", (unsigned long long)v[i].pid,
            (unsigned long long)v[i].tid,
            v[i].txnid == (txnid_t)-1 ? ~0ULL : (unsigned long long)v[i].txnid,
            (unsigned long long)v[i].age, (unsigned long long)v[i].pages_held);
        if (!d || PyList_Append(list, d) < 0) {
            Py_XDECREF(d);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(d);
    }
    PyMem_Free(v);
    return list;
}

/* info()'s reader_age: the age of the oldest snapshot a reader holds (0 if none). */
int mdb_core_reader_age(EnvObject *self, unsigned long long *age)
{
    /* No read txn here: info() must not take a reader slot (that would raise the table's
     * high-water mark, num_readers).  The pages each reader holds are in readers(detail). */
    size_t n = 0;
    mdbcore_reader_info *v = reader_table(self, &n, MDBCORE_RINFO_NO_PAGES);
    if (!v)
        return -1;
    *age = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].txnid != (txnid_t)-1 && v[i].age > *age)
            *age = v[i].age;
    PyMem_Free(v);
    return 0;
}
/* info()'s meta: mdbcore_env_meta_status as mdb._common.meta_dict's dict. */
PyObject *mdb_core_meta_status(EnvObject *self)
{
    mdbcore_meta_status st;
    int rc = mdbcore_env_meta_status(self->env, &st);
    if (rc)
        return err_set("mdbcore_env_meta_status", rc);
    return PyObject_CallMethod(mdb_common, "meta_dict", "IiKiKz", st.flags, st.used_page,
                               (unsigned long long)st.used_txnid, st.damaged_page,
                               (unsigned long long)st.damaged_txnid, st.damaged_reason);
}
/* ---- Transaction.load_sorted: mdbcore_bulk_load fed from a Python iterable ---- */

/* What the load callback keeps between calls: the item handed out last (its buffers
 * must stay valid until the next call) and why it stopped, if it did. */
typedef struct {
    PyObject *iter;
    PyObject *item;      /* strong: the (key, value) pair handed out last */
    InBuf kb, vb;
    int have_bufs;
    Py_ssize_t count;    /* records handed out */
    int py_error;        /* a Python exception is pending (iteration or a bad item) */
} load_feed;

/* Returned to the core when Python raised: any code the core does not make itself. */
#define LOAD_PY_ERROR ECANCELED

static void feed_release(load_feed *f)
{
    if (f->have_bufs) {
        inbuf_release(&f->kb);
        inbuf_release(&f->vb);
        f->have_bufs = 0;
    }
    Py_CLEAR(f->item);
}

static int feed_next(void *ctx, MDB_val *key, MDB_val *data)
{
    load_feed *f = ctx;
    feed_release(f);
    PyObject *item = PyIter_Next(f->iter);
    if (!item) {
        if (PyErr_Occurred()) {
            f->py_error = 1;
            return LOAD_PY_ERROR;
        }
        return MDB_NOTFOUND;
    }
    f->item = item;
    if (!PyTuple_Check(item) && !PyList_Check(item)) {
        PyErr_Format(PyExc_TypeError,
                     "load_sorted(): items must be (key, value) pairs, got %.80s at #%zd",
                     Py_TYPE(item)->tp_name, f->count);
        f->py_error = 1;
        return LOAD_PY_ERROR;
    }
    if (PySequence_Fast_GET_SIZE(item) != 2) {
        PyErr_Format(PyExc_TypeError,
                     "load_sorted(): items must be (key, value) pairs, got %zd elements at #%zd",
                     PySequence_Fast_GET_SIZE(item), f->count);
        f->py_error = 1;
        return LOAD_PY_ERROR;
    }
    PyObject *k = PySequence_Fast_GET_ITEM(item, 0), *v = PySequence_Fast_GET_ITEM(item, 1);
    if (inbuf_get_kv(k, v, key, data, &f->kb, &f->vb) < 0) {
        f->py_error = 1;
        return LOAD_PY_ERROR;
    }
    f->have_bufs = 1;
    f->count++;
    return 0;
}

static PyObject *load_error(const char *cls, int rc, const char *msg)
{
    PyObject *name = PyUnicode_FromString(cls);
    if (!name)
        return NULL;
    err_typed(name, "load_sorted", rc, msg);
    Py_DECREF(name);
    return NULL;
}

PyObject *mdb_core_load_sorted(TxnObject *txn, DbObject *db, PyObject *iterable)
{
    if (!txn->write) {
        err_set("load_sorted", EACCES);
        return NULL;
    }
    load_feed f = {0};
    f.iter = PyObject_GetIter(iterable);
    if (!f.iter)
        return NULL;
    /* The callback runs Python code with the GIL held; nothing else may use this txn
     * (or its parents) until the load returns. */
    txn_busy(txn, 1);
    txn->loading = 1;
    int rc = mdbcore_bulk_load(txn->txn, db->dbi, feed_next, &f, 0);
    txn->loading = 0;
    txn_busy(txn, -1);
    Py_ssize_t n = f.count;
    feed_release(&f);
    Py_DECREF(f.iter);
    if (f.py_error) {
        /* the core gave every page back; the database is still empty */
        return NULL;
    }
    if (rc == MDB_KEYEXIST) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "load_sorted: record #%zd is not after the one before it (keys must be "
                 "strictly ascending in the database's order); nothing was loaded",
                 n - 1);
        return load_error("KeyExistsError", rc, msg);
    }
    if (rc == EINVAL) {
        return load_error("InvalidParameterError", rc,
                          "load_sorted: the target database must be empty");
    }
    if (rc == MDB_INCOMPATIBLE) {
        return load_error("IncompatibleError", rc,
                          "load_sorted: DUPSORT databases are not supported (use putmulti "
                          "with append=True)");
    }
    if (rc == MDB_BAD_VALSIZE) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "load_sorted: record #%zd has an empty or too long key, or a value over "
                 "4 GiB; nothing was loaded",
                 n - 1);
        return load_error("BadValsizeError", rc, msg);
    }
    if (rc)
        return err_set("load_sorted", rc);
    return PyLong_FromSsize_t(n);
}
#endif
