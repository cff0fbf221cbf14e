/*
 * db.c -- the _Database type: an opaque named-database handle.
 *
 * Handles are created by Environment.open_db(), cached per name in the
 * environment, and never closed in the engine (mdb_dbi_close is not exposed).
 * A handle is invalidated when its database is dropped with delete=True or
 * its environment is closed.
 */
#include "module.h"

/* The dict of _Database.flags(): built by mdb._common, as the cffi backend's. */
PyObject *db_flags_dict(unsigned int f)
{
    return PyObject_CallMethod(mdb_common, "db_flags_dict", "I", f);
}

DbObject *db_new(EnvObject *env, MDB_dbi dbi, unsigned int flags)
{
    DbObject *db = PyObject_New(DbObject, &MdbDb_Type);
    if (!db)
        return NULL;
    db->dbi = dbi;
    db->flags = flags;
    db->valid = 1;
    db->owner = env;
    db->creator = NULL;
    return db;
}

static PyObject *db_flags(DbObject *self, PyObject *args, PyObject *kwds)
{
    PyObject *txn = NULL;
    static char *kwlist[] = {"txn", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:flags", kwlist, &txn))
        return NULL;
    return db_flags_dict(self->flags);
}

static void db_dealloc(DbObject *self)
{
    PyObject_Free(self);
}

static PyMethodDef db_methods[] = {
    {"flags", (PyCFunction)(void (*)(void))db_flags, METH_VARARGS | METH_KEYWORDS,
     "flags(txn=None) -> dict\n\nThe database's flags: reverse_key, dupsort, integerkey, "
     "integerdup, dupfixed."},
    {NULL, NULL, 0, NULL}};

PyTypeObject MdbDb_Type = {
    MDB_TYPE_HEAD("_Database", DbObject, db_dealloc),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = db_methods,
    .tp_doc = "Handle of a database inside an Environment (from Environment.open_db()).",
};
