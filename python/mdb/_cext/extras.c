/*
 * extras.c -- Environment features beyond LMDB that need the mdb core (mdbcore.h):
 * the reader table with each slot's snapshot age and held-back pages (issue 13).
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
        PyObject *txnid = v[i].txnid == (txnid_t)-1
                              ? (Py_INCREF(Py_None), Py_None)
                              : PyLong_FromUnsignedLongLong(v[i].txnid);
        PyObject *d = txnid ? Py_BuildValue("{s:k,s:K,s:N,s:K,s:K}", "pid",
                                            (unsigned long)v[i].pid, "thread",
                                            (unsigned long long)v[i].tid, "txnid", txnid,
                                            "age", (unsigned long long)v[i].age, "pages_held",
                                            (unsigned long long)v[i].pages_held)
                            : NULL;
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

int mdb_core_info_extras(EnvObject *self, PyObject *dict)
{
    /* No read txn here: info() must not take a reader slot (that would raise the table's
     * high-water mark, num_readers).  The pages each reader holds are in readers(detail). */
    size_t n = 0;
    mdbcore_reader_info *v = reader_table(self, &n, MDBCORE_RINFO_NO_PAGES);
    if (!v)
        return -1;
    unsigned long long age = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].txnid != (txnid_t)-1 && v[i].age > age)
            age = v[i].age;
    PyMem_Free(v);
    PyObject *a = PyLong_FromUnsignedLongLong(age);
    int rc = (a && PyDict_SetItemString(dict, "reader_age", a) == 0) ? 0 : -1;
    Py_XDECREF(a);
    return rc;
}
#endif
