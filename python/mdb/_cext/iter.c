/*
 * iter.c -- the iterator returned by Cursor.iternext() and friends.
 *
 * As py-lmdb's, the iterator is a thin object that steps its cursor on each
 * __next__, with no end state of its own:
 *   - the first __next__ positions an unpositioned cursor with start_op
 *     (first/last; the _dup iterators, whose start_op is MDB_GET_CURRENT,
 *     do not position);
 *   - every __next__ raises StopIteration while the cursor is unpositioned;
 *   - otherwise it yields the current record if it has yielded nothing yet,
 *     else it steps with op (next, prev, next_dup, ...) and yields the record
 *     found, or raises StopIteration (the cursor is then unpositioned).
 * So an iterator that ended yields again once the cursor is repositioned,
 * continuing from there.  It raises mdb.Error if its cursor died meanwhile.
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
    self->begun = 0;
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
    if (!self->begun) {
        self->begun = 1;
        if (!c->positioned && self->start_op != MDB_GET_CURRENT) {
            r = cursor_do(c, self->start_op, NULL, NULL);
            if (r <= 0)
                return NULL; /* StopIteration, or the error set by cursor_do */
            self->started = 1;
            return cursor_item_tuple(c, self->keys, self->values);
        }
    }
    if (!c->positioned)
        return NULL;
    if (self->started) {
        r = cursor_do(c, self->op, NULL, NULL);
    } else {
        MDB_val k, v;
        r = mdb_cursor_get(c->cur, &k, &v, MDB_GET_CURRENT) == 0;
        if (r) {
            c->key = k;
            c->val = v;
        } else {
            c->positioned = 0;
        }
    }
    if (r <= 0)
        return NULL;
    self->started = 1;
    return cursor_item_tuple(c, self->keys, self->values);
}

PyTypeObject MdbIter_Type = {
    MDB_TYPE_HEAD("mdb._cext.Iterator", IterObject, iter_dealloc),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)iter_next,
    .tp_doc = "Iterator over a Cursor's records.",
};
