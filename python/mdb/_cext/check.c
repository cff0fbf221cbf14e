/*
 * check.c -- Environment.check(): the mdb core's structural checker, and
 * Environment.freelist(): the free list read by the same walker.
 *
 * Only compiled to something when the extension links our core and its
 * mdbcore.h declares mdbcore_check_env (CMake defines MDB_HAVE_CORE_CHECK);
 * otherwise Environment.check() and freelist() raise mdb.Error ("needs the mdb
 * core") and mdb.backend_features["check"] is False.
 *
 * The report becomes a dict:
 *   ok (bool), problems_total, problems [{pgno, code, db, msg}],
 *   psize, next_pgno, txnid, meta_pages, branch_pages, leaf_pages, leaf2_pages,
 *   overflow_pages, overflow_runs, reachable_pages, free_pages, free_records,
 *   leaked_pages, twice_pages, free_and_used,
 *   dbs [{name, depth, entries, branch_pages, leaf_pages, overflow_pages}],
 *   text (the checker's own human-readable report).
 */
#include "module.h"

#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_CORE_CHECK)
#include "mdbcore.h"

static int text_cb(const char *msg, void *ctx)
{
    return list_append_new(ctx, PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace"));
}

static int set_u64(PyObject *d, const char *k, unsigned long long v)
{
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    if (!o)
        return -1;
    int r = PyDict_SetItemString(d, k, o);
    Py_DECREF(o);
    return r;
}

PyObject *mdb_core_check(EnvObject *self)
{
    mdbcore_check_report rep;
    memset(&rep, 0, sizeof rep);
    int rc;
    MDB_env *e = self->env;
    MDB_UNLOCKED(self, rc = mdbcore_check_env(e, &rep));
    if (rc && rc != MDB_CORRUPTED) {
        mdbcore_check_report_free(&rep);
        return err_set("mdbcore_check_env", rc);
    }
    PyObject *d = PyDict_New();
    PyObject *lines = PyList_New(0);
    if (!d || !lines)
        goto fail;
    if (PyDict_SetItemString(d, "ok", rc == 0 ? Py_True : Py_False) < 0)
        goto fail;
    struct {
        const char *k;
        unsigned long long v;
    } nums[] = {
        {"problems_total", rep.problems_total}, {"psize", rep.psize},
        {"next_pgno", (unsigned long long)rep.next_pgno}, {"txnid", (unsigned long long)rep.txnid},
        {"meta_pages", rep.meta_pages}, {"branch_pages", rep.branch_pages},
        {"leaf_pages", rep.leaf_pages}, {"leaf2_pages", rep.leaf2_pages},
        {"overflow_pages", rep.overflow_pages}, {"overflow_runs", rep.overflow_runs},
        {"reachable_pages", rep.reachable_pages}, {"free_pages", rep.free_pages},
        {"free_records", rep.free_records}, {"leaked_pages", rep.leaked_pages},
        {"twice_pages", rep.twice_pages}, {"free_and_used", rep.free_and_used},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (set_u64(d, nums[i].k, nums[i].v) < 0)
            goto fail;
    PyObject *probs = dict_new_list(d, "problems"), *dbs = probs ? dict_new_list(d, "dbs") : NULL;
    if (!dbs)
        goto fail;
    for (size_t i = 0; i < rep.nproblems; i++) {
        mdbcore_check_problem *p = &rep.problems[i];
        PyObject *o = Py_BuildValue("{s:K,s:i,s:s,s:s}", "pgno", (unsigned long long)p->pgno,
                                    "code", p->code, "db", p->db, "msg", p->msg);
        if (list_append_new(probs, o) < 0)
            goto fail;
    }
    for (size_t i = 0; i < rep.ndbs; i++) {
        mdbcore_check_db *db = &rep.dbs[i];
        PyObject *o = Py_BuildValue("{s:s,s:I,s:K,s:K,s:K,s:K}", "name", db->name ? db->name : "",
                                    "depth", db->depth, "entries",
                                    (unsigned long long)db->entries, "branch_pages",
                                    (unsigned long long)db->branch_pages, "leaf_pages",
                                    (unsigned long long)db->leaf_pages, "overflow_pages",
                                    (unsigned long long)db->overflow_pages);
        if (list_append_new(dbs, o) < 0)
            goto fail;
    }
    mdbcore_check_report_print(&rep, text_cb, lines);
    if (PyErr_Occurred())
        goto fail;
    {
        PyObject *text = join_strings(lines);
        if (!text || PyDict_SetItemString(d, "text", text) < 0) {
            Py_XDECREF(text);
            goto fail;
        }
        Py_DECREF(text);
    }
    Py_DECREF(lines);
    mdbcore_check_report_free(&rep);
    return d;
fail:
    Py_XDECREF(d);
    Py_XDECREF(lines);
    mdbcore_check_report_free(&rep);
    return NULL;
}

/* Environment.freelist(): mdbcore_freelist_env's list as mdb._common.freelist_dict's dict
 * (shared with cffi); a free DB that does not hold up raises CorruptedError. */
PyObject *mdb_core_freelist(EnvObject *self)
{
    mdbcore_freelist fl;
    int rc;
    MDB_env *e = self->env;
    MDB_UNLOCKED(self, rc = mdbcore_freelist_env(e, &fl));
    if (rc == MDB_CORRUPTED) {
        PyObject *exc = PyObject_CallMethod(mdb_common, "freelist_corrupted", "Ks",
                                            (unsigned long long)fl.bad_pgno, fl.bad_msg);
        mdbcore_freelist_free(&fl);
        if (exc) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
        return NULL;
    }
    if (rc) {
        mdbcore_freelist_free(&fl);
        return err_set("mdbcore_freelist_env", rc);
    }
    PyObject *out = NULL, *nums = NULL, *txns = PyList_New((Py_ssize_t)fl.nrecords);
    if (!txns)
        goto done;
    for (size_t i = 0; i < fl.nrecords; i++) {
        const mdbcore_free_record *r = &fl.records[i];
        PyObject *pages = PyList_New((Py_ssize_t)r->npages);
        if (!pages)
            goto done;
        for (size_t j = 0; j < r->npages; j++) {
            PyObject *o = PyLong_FromUnsignedLongLong((unsigned long long)r->pages[j]);
            if (!o) {
                Py_DECREF(pages);
                goto done;
            }
            PyList_SET_ITEM(pages, (Py_ssize_t)j, o);
        }
        PyObject *item = Py_BuildValue("(KN)", (unsigned long long)r->txnid, pages);
        if (!item)
            goto done;
        PyList_SET_ITEM(txns, (Py_ssize_t)i, item);
    }
    nums = Py_BuildValue("(IKKKK)", (unsigned)fl.rec.depth,
                         (unsigned long long)fl.rec.branch_pages,
                         (unsigned long long)fl.rec.leaf_pages,
                         (unsigned long long)fl.rec.overflow_pages,
                         (unsigned long long)fl.rec.entries);
    if (nums)
        out = PyObject_CallMethod(mdb_common, "freelist_dict", "OO", nums, txns);
done:
    Py_XDECREF(nums);
    Py_XDECREF(txns);
    mdbcore_freelist_free(&fl);
    return out;
}
#else
/* keep the translation unit non-empty under -Werror=pedantic compilers */
typedef int mdb_check_unused;
#endif
