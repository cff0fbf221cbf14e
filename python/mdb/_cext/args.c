/*
 * args.c -- a small vectorcall argument parser.
 *
 * PyArg_ParseTupleAndKeywords is measurably slow on hot paths (get/put), so
 * every METH_FASTCALL|METH_KEYWORDS method describes its parameters as a
 * NULL-terminated name list and gets borrowed references in declaration order.
 * Missing arguments keep the caller's preset default.
 */
#include "module.h"

int args_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
               PyObject *kwnames, const char *const *names, PyObject **out)
{
    Py_ssize_t nnames = 0;
    while (names[nnames])
        nnames++;
    if (nargs > nnames) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %zd arguments (%zd given)", fname,
                     nnames, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        out[i] = args[i];
    if (kwnames) {
        Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t k = 0; k < nkw; k++) {
            PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
            const char *s = PyUnicode_AsUTF8(kw);
            if (!s)
                return -1;
            Py_ssize_t j;
            for (j = 0; j < nnames; j++)
                if (!strcmp(s, names[j]))
                    break;
            if (j == nnames) {
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'",
                             fname, s);
                return -1;
            }
            if (j < nargs) {
                PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'",
                             fname, s);
                return -1;
            }
            out[j] = args[nargs + k];
        }
    }
    return 0;
}

int args_bool(PyObject *obj, int *out)
{
    int r = PyObject_IsTrue(obj);
    if (r < 0)
        return -1;
    *out = r;
    return 0;
}

int args_parse_req(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                   PyObject *kwnames, const char *const *names, PyObject **out, int nreq,
                   const char *what)
{
    if (args_parse(fname, args, nargs, kwnames, names, out) < 0)
        return -1;
    for (int i = 0; i < nreq; i++) {
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument%s%s", fname,
                         what ? " " : "", what ? what : "");
            return -1;
        }
    }
    return 0;
}

int args_bools(PyObject *const *objs, int *out, int n)
{
    for (int i = 0; i < n; i++)
        if (args_bool(objs[i], &out[i]) < 0)
            return -1;
    return 0;
}

PyObject *args_enter(PyObject *self, int check)
{
    if (check < 0)
        return NULL;
    Py_INCREF(self);
    return self;
}

int list_append_new(PyObject *list, PyObject *o)
{
    if (!o)
        return -1;
    int r = PyList_Append(list, o);
    Py_DECREF(o);
    return r;
}

PyObject *dict_new_list(PyObject *d, const char *key)
{
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    int r = PyDict_SetItemString(d, key, list);
    Py_DECREF(list);
    return r < 0 ? NULL : list;
}

PyObject *join_strings(PyObject *list)
{
    PyObject *empty = PyUnicode_FromString("");
    PyObject *out = empty ? PyUnicode_Join(empty, list) : NULL;
    Py_XDECREF(empty);
    return out;
}
