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
