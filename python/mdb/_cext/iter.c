/*
 * iter.c -- the iterator returned by Cursor.iternext() and friends.
 *
 * The first step yields the cursor's current record, or positions it with
 * start_op (first/last) if it is unpositioned (the _dup iterators, whose
 * start_op is MDB_GET_CURRENT, yield nothing then); every later step runs op
 * (next, prev, next_dup, ...).  The iterator stops when the step fails and
 * raises mdb.Error if its cursor died meanwhile.
 */
#include "module.h"

PyObject *iter_new(CursorObject *cur, MDB_cursor_op start_op, MDB_cursor_op op, int keys,
                   int values)
{
    IterObject *self = PyObject_New(IterObject, &MdbIter_Type);
    if (!self)
        return NULL;
    self->cursor = cur;
    Py_INCREF(cur);
    self->start_op = start_op;
    self->op = op;
    self->started = 0;
    self->keys = keys;
    self->values = values;
    return (PyObject *)self;
}

static void iter_dealloc(IterObject *self)
{
    Py_CLEAR(self->cursor);
    PyObject_Free(self);
}

static PyObject *iter_next(IterObject *self)
{
    CursorObject *c = self->cursor;
    if (cursor_check(c) < 0)
        return NULL;
    int r;
    if (!self->started) {
        self->started = 1;
        if (c->positioned) {
            MDB_val k, v;
            r = mdb_cursor_get(c->cur, &k, &v, MDB_GET_CURRENT) == 0;
            if (r) {
                c->key = k;
                c->val = v;
            } else {
                c->positioned = 0;
            }
        } else if (self->start_op == MDB_GET_CURRENT) {
            r = 0; /* the _dup iterators need a current key */
        } else {
            r = cursor_do(c, self->start_op, NULL, NULL);
        }
    } else {
        r = cursor_do(c, self->op, NULL, NULL);
    }
    if (r <= 0)
        return NULL; /* StopIteration, or the error set by cursor_do */
    return cursor_item_tuple(c, self->keys, self->values);
}

PyTypeObject MdbIter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mdb._cext.Iterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)iter_next,
    .tp_doc = "Iterator over a Cursor's records.",
};
