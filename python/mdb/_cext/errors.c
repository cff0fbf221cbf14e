/*
 * errors.c -- turns engine return codes into Python exceptions.
 *
 * There is no table here: the one code -> class table lives in
 * mdb/errors.py (_TABLE) and is shared with the cffi backend.  This file only
 * calls mdb.errors._from_code(what, rc, mdb_strerror(rc)) and raises the result,
 * plus a few binding-side errors (closed object, forked child, value size).
 */
#include "module.h"

static PyObject *raise_instance(PyObject *exc)
{
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *err_set(const char *what, int rc)
{
    const char *reason = mdb_strerror(rc);
    return raise_instance(PyObject_CallFunction(mdb_error_factory, "sis", what, rc,
                                                reason ? reason : "unknown error"));
}

PyObject *err_msg(const char *msg)
{
    PyErr_SetString(mdb_Error, msg);
    return NULL;
}

PyObject *err_invalid(void)
{
    return err_msg("Attempt to operate on closed/deleted/dropped object.");
}

PyObject *err_forked(pid_t pid)
{
    PyObject *errors = PyImport_ImportModule("mdb.errors");
    PyObject *exc = NULL;
    if (errors) {
        exc = PyObject_CallMethod(errors, "_forked", "i", (int)pid);
        Py_DECREF(errors);
    }
    if (!exc)
        return err_msg("Environment used in a forked child; open it anew in this process.");
    return raise_instance(exc);
}

PyObject *err_typed(PyObject *cls_name, const char *what, int rc, const char *msg)
{
    PyObject *errors = PyImport_ImportModule("mdb.errors");
    if (!errors)
        return NULL;
    PyObject *cls = PyObject_GetAttr(errors, cls_name);
    Py_DECREF(errors);
    if (!cls)
        return NULL;
    PyObject *args = Py_BuildValue("(s)", msg);
    PyObject *kw = Py_BuildValue("{s:s,s:i,s:s}", "what", what, "code", rc, "reason",
                                 mdb_strerror(rc));
    PyObject *exc = NULL;
    if (args && kw)
        exc = PyObject_Call(cls, args, kw);
    Py_XDECREF(args);
    Py_XDECREF(kw);
    Py_DECREF(cls);
    return raise_instance(exc);
}

PyObject *err_badvalsize(const char *what, Py_ssize_t got, Py_ssize_t limit)
{
    char buf[256];
    if (got == 0)
        snprintf(buf, sizeof buf, "%s: %s (keys must be 1 to %zd bytes long; got an empty key)",
                 what, mdb_strerror(MDB_BAD_VALSIZE), limit);
    else
        snprintf(buf, sizeof buf, "%s: %s (%zd bytes given, the limit is %zd bytes)",
                 what, mdb_strerror(MDB_BAD_VALSIZE), got, limit);
    PyObject *name = PyUnicode_FromString("BadValsizeError");
    if (!name)
        return NULL;
    err_typed(name, what, MDB_BAD_VALSIZE, buf);
    Py_DECREF(name);
    return NULL;
}
