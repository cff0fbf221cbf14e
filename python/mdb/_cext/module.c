/*
 * module.c -- initialisation of mdb._cext.
 *
 * Readies the types, imports the shared Python pieces (mdb.errors for the one
 * error table, mdb._registry for the duplicate-open guard, mdb._common for the
 * cold code both backends share: argument checks, flag mapping, the report
 * dicts, the map lookup), installs the fork hook that tells inherited objects
 * apart, and exposes version().
 * Single-phase init; all state is process-global (the engine handles are).
 */
#include "module.h"

#if defined(MDB_HAVE_MDBCORE_H)
#include "mdbcore.h"
#endif

pid_t mdb_cur_pid;
PyObject *mdb_error_factory;
PyObject *mdb_Error;
PyObject *mdb_registry;
PyObject *mdb_common;

static void after_fork_child(void)
{
    mdb_cur_pid = getpid();
}

static PyObject *mod_version(PyObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"subpatch", NULL};
    int subpatch = 0;
    (void)self;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p", kwlist, &subpatch))
        return NULL;
    return PyObject_CallMethod(mdb_common, "version_tuple", "iiiO", MDB_VERSION_MAJOR,
                               MDB_VERSION_MINOR, MDB_VERSION_PATCH,
                               subpatch ? Py_True : Py_False);
}

static PyObject *mod_engine_version(PyObject *self, PyObject *unused)
{
    int a, b, c;
    (void)self;
    (void)unused;
    const char *s = mdb_version(&a, &b, &c);
    return Py_BuildValue("(iii)s", a, b, c, s);
}

/* mdb._common maps flags with its own copy of the values: compare them with lmdb.h's. */
static int check_constants(void)
{
    PyObject *values = Py_BuildValue(
        "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "MDB_NOSUBDIR",
        MDB_NOSUBDIR, "MDB_NOSYNC", MDB_NOSYNC, "MDB_RDONLY", MDB_RDONLY, "MDB_NOMETASYNC",
        MDB_NOMETASYNC, "MDB_WRITEMAP", MDB_WRITEMAP, "MDB_MAPASYNC", MDB_MAPASYNC, "MDB_NOTLS",
        MDB_NOTLS, "MDB_NOLOCK", MDB_NOLOCK, "MDB_NORDAHEAD", MDB_NORDAHEAD, "MDB_NOMEMINIT",
        MDB_NOMEMINIT, "MDB_REVERSEKEY", MDB_REVERSEKEY, "MDB_DUPSORT", MDB_DUPSORT,
        "MDB_INTEGERKEY", MDB_INTEGERKEY, "MDB_DUPFIXED", MDB_DUPFIXED, "MDB_INTEGERDUP",
        MDB_INTEGERDUP);
    if (!values)
        return -1;
    PyObject *r = PyObject_CallMethod(mdb_common, "check_constants", "sO", "_cext", values);
    Py_DECREF(values);
    Py_XDECREF(r);
    return r ? 0 : -1;
}

static PyMethodDef mod_methods[] = {
    {"version", (PyCFunction)(void (*)(void))mod_version, METH_VARARGS | METH_KEYWORDS,
     "version(subpatch=False) -> tuple\n\n(major, minor, patch) of the engine's lmdb.h."},
    {"engine_version", (PyCFunction)mod_engine_version, METH_NOARGS,
     "engine_version() -> ((major, minor, patch), str)\n\nWhat the linked engine reports."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef mod_def = {
    PyModuleDef_HEAD_INIT, "mdb._cext",
    "CPython extension backend of mdb (use the mdb package, not this module).", -1,
    mod_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cext(void)
{
    PyTypeObject *types[] = {&MdbKeeper_Type, &MdbEnv_Type,  &MdbTxn_Type,       &MdbCursor_Type,
                             &MdbDb_Type,     &MdbIter_Type, &MdbMapBuffer_Type, NULL};
    for (int i = 0; types[i]; i++)
        if (PyType_Ready(types[i]) < 0)
            return NULL;
    PyObject *errors = PyImport_ImportModule("mdb.errors");
    if (!errors)
        return NULL;
    mdb_error_factory = PyObject_GetAttrString(errors, "_from_code");
    mdb_Error = PyObject_GetAttrString(errors, "Error");
    Py_DECREF(errors);
    if (!mdb_error_factory || !mdb_Error)
        return NULL;
    mdb_registry = PyImport_ImportModule("mdb._registry");
    if (!mdb_registry)
        return NULL;
    mdb_common = PyImport_ImportModule("mdb._common");
    if (!mdb_common || check_constants() < 0)
        return NULL;
    mdb_cur_pid = getpid();
    pthread_atfork(NULL, NULL, after_fork_child);

    PyObject *m = PyModule_Create(&mod_def);
    if (!m)
        return NULL;
    struct {
        const char *name;
        PyTypeObject *type;
    } pub[] = {{"Environment", &MdbEnv_Type}, {"Transaction", &MdbTxn_Type},
               {"Cursor", &MdbCursor_Type},   {"_Database", &MdbDb_Type},
               {"Iterator", &MdbIter_Type},   {NULL, NULL}};
    for (int i = 0; pub[i].name; i++) {
        Py_INCREF(pub[i].type);
        if (PyModule_AddObject(m, pub[i].name, (PyObject *)pub[i].type) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_CORE_CHECK)
    PyModule_AddIntConstant(m, "HAVE_CHECK", 1);
#else
    PyModule_AddIntConstant(m, "HAVE_CHECK", 0);
#endif
    return m;
}
