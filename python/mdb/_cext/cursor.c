/*
 * cursor.c -- the Cursor type.
 *
 * A cursor is "positioned" after a successful positioning call and
 * unpositioned after a failed one; key()/value()/item() of an unpositioned
 * cursor are empty bytes.  The current record is re-read with
 * MDB_GET_CURRENT whenever it is returned, so it is never a stale pointer
 * after a write through another cursor.  A cursor dies with its transaction,
 * with its database (drop(delete=True)) and on close().
 */
#include "module.h"

#include <errno.h>
#include <stdlib.h>

#define FASTARGS PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames
#define METH_FK (METH_FASTCALL | METH_KEYWORDS)

PyObject *cursor_new(TxnObject *txn, DbObject *db)
{
    if (txn_check(txn) < 0)
        return NULL;
    if (!db->valid || db->owner != txn->env)
        return err_invalid();
    MDB_cursor *mc;
    int rc = mdb_cursor_open(txn->txn, db->dbi, &mc);
    if (rc)
        return err_set("mdb_cursor_open", rc);
    CursorObject *self = PyObject_New(CursorObject, &MdbCursor_Type);
    if (!self) {
        mdb_cursor_close(mc);
        return NULL;
    }
    self->weakreflist = NULL;
    self->txn = txn;
    Py_INCREF(txn);
    self->db = db;
    Py_INCREF(db);
    self->cur = mc;
    self->valid = 1;
    self->positioned = 0;
    self->put_only = 0;
    self->key.mv_size = self->val.mv_size = 0;
    self->key.mv_data = self->val.mv_data = NULL;
    cursor_link(txn, self);
    return (PyObject *)self;
}

static PyObject *cursor_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"db", "txn", NULL};
    PyObject *db, *txn;
    (void)type;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!", kwlist, &MdbDb_Type, &db,
                                     &MdbTxn_Type, &txn))
        return NULL;
    return cursor_new((TxnObject *)txn, (DbObject *)db);
}

static void cursor_do_close(CursorObject *self)
{
    if (self->valid) {
        if (self->cur && self->txn && self->txn->env->pid == mdb_cur_pid)
            mdb_cursor_close(self->cur);
        self->cur = NULL;
        self->valid = 0;
        self->positioned = 0;
        cursor_unlink(self);
    }
}

static void cursor_dealloc(CursorObject *self)
{
    if (self->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)self);
    cursor_do_close(self);
    Py_CLEAR(self->txn);
    Py_CLEAR(self->db);
    PyObject_Free(self);
}

/* Run one positioning op; returns 1 found, 0 not found (unpositioned), -1 error. */
int cursor_do(CursorObject *self, MDB_cursor_op op, MDB_val *k, MDB_val *v)
{
    MDB_val kk = {0, NULL}, vv = {0, NULL};
    if (k)
        kk = *k;
    if (v)
        vv = *v;
    int rc = mdb_cursor_get(self->cur, &kk, &vv, op);
    self->put_only = 0;
    if (rc == 0 && (op == MDB_FIRST_DUP || op == MDB_LAST_DUP || op == MDB_GET_BOTH ||
                    op == MDB_GET_BOTH_RANGE || op == MDB_SET))
        rc = mdb_cursor_get(self->cur, &kk, &vv, MDB_GET_CURRENT);
    if (rc == 0) {
        self->positioned = 1;
        self->key = kk;
        self->val = vv;
        return 1;
    }
    if (rc == MDB_NOTFOUND) {
        self->positioned = 0;
        self->key.mv_size = self->val.mv_size = 0;
        return 0;
    }
    /* other errors (bad argument sizes...) leave the position as it was */
    err_set("mdb_cursor_get", rc);
    return -1;
}

/* Refresh the current record (after writes it may have moved). */
static int cursor_refresh(CursorObject *self)
{
    if (!self->positioned)
        return 0;
    MDB_val k, v;
    int rc = mdb_cursor_get(self->cur, &k, &v, MDB_GET_CURRENT);
    if (rc) {
        self->positioned = 0;
        self->key.mv_size = self->val.mv_size = 0;
        return 0;
    }
    self->key = k;
    self->val = v;
    return 1;
}

static PyObject *empty_bytes(void)
{
    return PyBytes_FromStringAndSize(NULL, 0);
}

/* key(), value(), item(): -1 with an exception, 0 unpositioned, 1 on a record. */
static int cur_read_current(CursorObject *self)
{
    if (cursor_check(self) < 0)
        return -1;
    self->put_only = 0; /* read again: py-lmdb counts it positioned from here */
    return cursor_refresh(self) ? 1 : 0;
}

static PyObject *cur_key(CursorObject *self, PyObject *unused)
{
    (void)unused;
    int r = cur_read_current(self);
    return r < 0 ? NULL : r ? outval(self->txn, &self->key) : empty_bytes();
}

static PyObject *cur_value(CursorObject *self, PyObject *unused)
{
    (void)unused;
    int r = cur_read_current(self);
    return r < 0 ? NULL : r ? outval(self->txn, &self->val) : empty_bytes();
}

PyObject *cursor_item_tuple(CursorObject *self, int keys, int values)
{
    if (keys && values) {
        PyObject *k = outval(self->txn, &self->key);
        if (!k)
            return NULL;
        PyObject *v = outval(self->txn, &self->val);
        if (!v) {
            Py_DECREF(k);
            return NULL;
        }
        PyObject *t = PyTuple_New(2);
        if (!t) {
            Py_DECREF(k);
            Py_DECREF(v);
            return NULL;
        }
        PyTuple_SET_ITEM(t, 0, k);
        PyTuple_SET_ITEM(t, 1, v);
        return t;
    }
    if (keys)
        return outval(self->txn, &self->key);
    return outval(self->txn, &self->val);
}

static PyObject *cur_item(CursorObject *self, PyObject *unused)
{
    (void)unused;
    int r = cur_read_current(self);
    if (r < 0)
        return NULL;
    if (!r)
        return Py_BuildValue("(y#y#)", "", (Py_ssize_t)0, "", (Py_ssize_t)0);
    return cursor_item_tuple(self, 1, 1);
}

static PyObject *pos_op(CursorObject *self, MDB_cursor_op op)
{
    if (cursor_check(self) < 0)
        return NULL;
    int r = cursor_do(self, op, NULL, NULL);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

#define POS_METHOD(name, op)                                                  \
    static PyObject *cur_##name(CursorObject *self, PyObject *unused)         \
    {                                                                         \
        (void)unused;                                                         \
        return pos_op(self, op);                                              \
    }
POS_METHOD(first, MDB_FIRST)
POS_METHOD(last, MDB_LAST)
POS_METHOD(next, MDB_NEXT)
POS_METHOD(prev, MDB_PREV)
POS_METHOD(first_dup, MDB_FIRST_DUP)
POS_METHOD(last_dup, MDB_LAST_DUP)
POS_METHOD(next_dup, MDB_NEXT_DUP)
POS_METHOD(prev_dup, MDB_PREV_DUP)
POS_METHOD(next_nodup, MDB_NEXT_NODUP)
POS_METHOD(prev_nodup, MDB_PREV_NODUP)

static int set_key_impl(CursorObject *self, PyObject *key)
{
    MDB_val k;
    InBuf kb;
    if (inbuf_get(key, &k, &kb, "key") < 0)
        return -1;
    int r = cursor_do(self, MDB_SET_KEY, &k, NULL);
    inbuf_release(&kb);
    return r;
}

static PyObject *cur_set_key(CursorObject *self, PyObject *key)
{
    if (cursor_check(self) < 0)
        return NULL;
    int r = set_key_impl(self, key);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *two_key_op(CursorObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames, const char *fname, MDB_cursor_op op)
{
    static const char *const names[] = {"key", "value", NULL};
    PyObject *a[2] = {NULL, NULL};
    if (args_parse(fname, args, nargs, kwnames, names, a) < 0)
        return NULL;
    if (!a[0] || !a[1]) {
        PyErr_Format(PyExc_TypeError, "%s() takes key and value", fname);
        return NULL;
    }
    if (cursor_check(self) < 0)
        return NULL;
    MDB_val k, v;
    InBuf kb, vb;
    if (inbuf_get_kv(a[0], a[1], &k, &v, &kb, &vb) < 0)
        return NULL;
    int r = cursor_do(self, op, &k, &v);
    inbuf_release(&kb);
    inbuf_release(&vb);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *cur_set_key_dup(CursorObject *self, FASTARGS)
{
    return two_key_op(self, args, nargs, kwnames, "set_key_dup", MDB_GET_BOTH);
}

static PyObject *cur_set_range_dup(CursorObject *self, FASTARGS)
{
    return two_key_op(self, args, nargs, kwnames, "set_range_dup", MDB_GET_BOTH_RANGE);
}

/* set_range(key) on a live cursor: -1 error, 0 nothing at or after key, 1 found; an
 * empty key means the first record. */
static int seek_range(CursorObject *self, PyObject *key)
{
    if (cursor_check(self) < 0)
        return -1;
    MDB_val k;
    InBuf kb;
    if (inbuf_get(key, &k, &kb, "key") < 0)
        return -1;
    int r = cursor_do(self, k.mv_size ? MDB_SET_RANGE : MDB_FIRST, &k, NULL);
    inbuf_release(&kb);
    return r;
}

static PyObject *cur_set_range(CursorObject *self, PyObject *key)
{
    int r = seek_range(self, key);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *cur_get(CursorObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "default", NULL};
    PyObject *a[2] = {NULL, Py_None};
    if (args_parse_req("get", args, nargs, kwnames, names, a, 1, "'key'") < 0 ||
        cursor_check(self) < 0)
        return NULL;
    int r = set_key_impl(self, a[0]);
    if (r < 0)
        return NULL;
    if (!r) {
        Py_INCREF(a[1]);
        return a[1];
    }
    return outval(self->txn, &self->val);
}

/* One record found by getmulti's engine pass. */
typedef struct {
    MDB_val k, v;
} GmRec;

typedef struct {
    GmRec *recs;
    size_t n, cap;
    int rc;          /* engine error, or ENOMEM */
    int last_found;  /* the last cursor op found a record */
} GmOut;

static int gm_push(GmOut *o, const MDB_val *k, const MDB_val *v)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 64;
        GmRec *r = realloc(o->recs, cap * sizeof *r);
        if (!r)
            return -1;
        o->recs = r;
        o->cap = cap;
    }
    o->recs[o->n].k = *k;
    o->recs[o->n].v = *v;
    o->n++;
    return 0;
}

/* The engine pass of getmulti; runs without the GIL (no Python API here). */
static void gm_scan(MDB_cursor *mc, const MDB_val *keys, size_t nkeys, int dupdata, GmOut *o)
{
    for (size_t i = 0; i < nkeys; i++) {
        MDB_val k = keys[i], v;
        int rc = mdb_cursor_get(mc, &k, &v, MDB_SET_KEY);
        while (rc == 0) {
            if (gm_push(o, &k, &v) < 0) {
                o->rc = ENOMEM;
                return;
            }
            if (!dupdata)
                break;
            rc = mdb_cursor_get(mc, &k, &v, MDB_NEXT_DUP);
        }
        o->last_found = rc == 0;
        if (rc && rc != MDB_NOTFOUND) {
            o->rc = rc;
            return;
        }
    }
}

/*
 * getmulti: the keys' buffers are taken first, then every lookup runs in one
 * pass with the GIL released (a long scan over cold pages no longer stalls
 * other threads), and the result objects are built afterwards.
 */
static PyObject *cur_getmulti(CursorObject *self, FASTARGS)
{
    static const char *const names[] = {"keys", "dupdata", "dupfixed_bytes", "keyfixed",
                                        "values", NULL};
    PyObject *a[5] = {NULL, Py_False, Py_None, Py_False, Py_True};
    int dupdata, keyfixed, values;
    Py_ssize_t fixed = 0;
    if (args_parse_req("getmulti", args, nargs, kwnames, names, a, 1, "'keys'") < 0 ||
        args_bool(a[1], &dupdata) < 0 || args_bool(a[3], &keyfixed) < 0 ||
        args_bool(a[4], &values) < 0)
        return NULL;
    if (a[2] != Py_None) {
        size_t fx = PyLong_AsSize_t(a[2]);
        if (fx == (size_t)-1 && PyErr_Occurred())
            return NULL;
        if (fx == 0 || fx > PY_SSIZE_T_MAX) {
            PyErr_SetString(PyExc_OverflowError, "dupfixed_bytes must be a positive integer");
            return NULL;
        }
        fixed = (Py_ssize_t)fx;
        if (!dupdata) {
            PyErr_SetString(PyExc_TypeError, "dupfixed_bytes requires dupdata=True");
            return NULL;
        }
    }
    if (keyfixed && !fixed) {
        PyErr_SetString(PyExc_TypeError, "keyfixed=True requires dupfixed_bytes");
        return NULL;
    }
    if (!values && dupdata) {
        PyErr_SetString(PyExc_TypeError, "values=False cannot be combined with dupdata=True");
        return NULL;
    }
    if (cursor_check(self) < 0)
        return NULL;
    if (fixed && !(self->db->flags & MDB_DUPFIXED))
        return err_set("mdb_cursor_get", MDB_INCOMPATIBLE);

    PyObject *seq = PySequence_Fast(a[0], "getmulti() keys must be iterable");
    if (!seq)
        return NULL;
    Py_ssize_t nkeys = PySequence_Fast_GET_SIZE(seq);
    InBuf *bufs = PyMem_Calloc((size_t)nkeys + 1, sizeof *bufs);
    MDB_val *kv = PyMem_Calloc((size_t)nkeys + 1, sizeof *kv);
    GmOut o = {NULL, 0, 0, 0, 0};
    PyObject *out = NULL;
    Py_ssize_t got = 0;
    if (!bufs || !kv) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < nkeys; got++)
        if (inbuf_get(PySequence_Fast_GET_ITEM(seq, got), &kv[got], &bufs[got], "key") < 0)
            goto done;

    {
        MDB_cursor *mc = self->cur;
        TxnObject *txn = self->txn;
        txn_busy(txn, 1);
        MDB_UNLOCKED(txn->env, gm_scan(mc, kv, (size_t)nkeys, dupdata, &o));
        txn_busy(txn, -1);
    }
    if (nkeys > 0) { /* the pass moved the cursor: it rests on the last lookup */
        self->positioned = o.last_found;
        if (self->positioned)
            cursor_refresh(self);
    }
    if (o.rc == ENOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (o.rc) {
        err_set("mdb_cursor_get", o.rc);
        goto done;
    }
    if (keyfixed) {
        Py_ssize_t keylen = o.n ? (Py_ssize_t)o.recs[0].k.mv_size : 0;
        PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)o.n * (keylen + fixed));
        if (!b)
            goto done;
        char *p = PyBytes_AS_STRING(b);
        for (size_t i = 0; i < o.n; i++) {
            if ((Py_ssize_t)o.recs[i].k.mv_size != keylen ||
                (Py_ssize_t)o.recs[i].v.mv_size != fixed) {
                Py_DECREF(b);
                PyErr_Format(PyExc_ValueError,
                             "keyfixed=True needs equal-size keys and %zd-byte values", fixed);
                goto done;
            }
            memcpy(p, o.recs[i].k.mv_data, (size_t)keylen);
            memcpy(p + keylen, o.recs[i].v.mv_data, (size_t)fixed);
            p += keylen + fixed;
        }
        out = PyMemoryView_FromObject(b);
        Py_DECREF(b);
        goto done;
    }
    out = PyList_New((Py_ssize_t)o.n);
    if (!out)
        goto done;
    for (size_t i = 0; i < o.n; i++) {
        if (fixed && (Py_ssize_t)o.recs[i].v.mv_size != fixed) {
            PyErr_Format(PyExc_ValueError, "value of %zu bytes, dupfixed_bytes=%zd",
                         o.recs[i].v.mv_size, fixed);
            Py_CLEAR(out);
            goto done;
        }
        PyObject *item;
        PyObject *k = outval(self->txn, &o.recs[i].k);
        if (!k) {
            Py_CLEAR(out);
            goto done;
        }
        if (values) {
            PyObject *v = outval(self->txn, &o.recs[i].v);
            if (!v) {
                Py_DECREF(k);
                Py_CLEAR(out);
                goto done;
            }
            item = PyTuple_New(2);
            if (!item) {
                Py_DECREF(k);
                Py_DECREF(v);
                Py_CLEAR(out);
                goto done;
            }
            PyTuple_SET_ITEM(item, 0, k);
            PyTuple_SET_ITEM(item, 1, v);
        } else {
            item = k;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
    }
done:
    for (Py_ssize_t i = 0; i < got; i++)
        inbuf_release(&bufs[i]);
    PyMem_Free(bufs);
    PyMem_Free(kv);
    free(o.recs);
    Py_DECREF(seq);
    return out;
}

static int check_put_sizes(CursorObject *self, MDB_val *k, MDB_val *v)
{
    int limit = mdb_env_get_maxkeysize(self->txn->env->env);
    if (k->mv_size == 0 || k->mv_size > (size_t)limit) {
        err_badvalsize("mdb_cursor_put", (Py_ssize_t)k->mv_size, limit);
        return -1;
    }
    if ((self->db->flags & MDB_DUPSORT) && v->mv_size > (size_t)limit) {
        err_badvalsize("mdb_cursor_put", (Py_ssize_t)v->mv_size, limit);
        return -1;
    }
    return 0;
}

static unsigned int cput_flags(CursorObject *self, int dupdata, int overwrite, int append)
{
    unsigned int f = 0;
    if (!dupdata && (self->db->flags & MDB_DUPSORT))
        f |= MDB_NODUPDATA;
    if (!overwrite)
        f |= MDB_NOOVERWRITE;
    if (append)
        f |= (self->db->flags & MDB_DUPSORT) ? MDB_APPENDDUP : MDB_APPEND;
    return f;
}

/* 1 written, 0 not written (exists/out of order), -1 error */
static int cput(CursorObject *self, PyObject *key, PyObject *val, unsigned int flags)
{
    MDB_val k, v;
    InBuf kb, vb;
    if (inbuf_get_kv(key, val, &k, &v, &kb, &vb) < 0)
        return -1;
    int r;
    {
        /* the engine's checks first, as in py-lmdb; sizes told apart for the message */
        int rc = mdb_cursor_put(self->cur, &k, &v, flags);
        if (rc == 0) {
            r = 1;
            if (!self->positioned)
                self->put_only = 1;
            self->positioned = 1;
            cursor_refresh(self);
        } else if (rc == MDB_KEYEXIST) {
            r = 0;
            cursor_refresh(self);
        } else if (rc == MDB_BAD_VALSIZE && check_put_sizes(self, &k, &v) < 0) {
            r = -1;
        } else {
            err_set("mdb_cursor_put", rc);
            r = -1;
        }
    }
    inbuf_release(&kb);
    inbuf_release(&vb);
    return r;
}

static PyObject *cur_put(CursorObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "value", "dupdata", "overwrite", "append", NULL};
    PyObject *a[5] = {NULL, NULL, Py_True, Py_True, Py_False};
    int fl[3]; /* dupdata, overwrite, append */
    if (args_parse_req("put", args, nargs, kwnames, names, a, 2, "'key' or 'value'") < 0 ||
        args_bools(a + 2, fl, 3) < 0 || cursor_check(self) < 0)
        return NULL;
    int r = cput(self, a[0], a[1], cput_flags(self, fl[0], fl[1], fl[2]));
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *cur_putmulti(CursorObject *self, FASTARGS)
{
    static const char *const names[] = {"items", "dupdata", "overwrite", "append", NULL};
    PyObject *a[4] = {NULL, Py_True, Py_True, Py_False};
    int fl[3]; /* dupdata, overwrite, append */
    if (args_parse_req("putmulti", args, nargs, kwnames, names, a, 1, "'items'") < 0 ||
        args_bools(a + 1, fl, 3) < 0 || cursor_check(self) < 0)
        return NULL;
    unsigned int flags = cput_flags(self, fl[0], fl[1], fl[2]);
    PyObject *it = PyObject_GetIter(a[0]);
    if (!it)
        return NULL;
    Py_ssize_t consumed = 0, added = 0;
    PyObject *item;
    while ((item = PyIter_Next(it))) {
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) {
            Py_DECREF(item);
            Py_DECREF(it);
            PyErr_SetString(PyExc_TypeError, "putmulti() items must be 2-tuples (key, value)");
            return NULL;
        }
        int r = cput(self, PyTuple_GET_ITEM(item, 0), PyTuple_GET_ITEM(item, 1), flags);
        Py_DECREF(item);
        if (r < 0) {
            Py_DECREF(it);
            return NULL;
        }
        consumed++;
        added += r;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        return NULL;
    return Py_BuildValue("(nn)", consumed, added);
}

static PyObject *copy_val(const MDB_val *v)
{
    return PyBytes_FromStringAndSize(v->mv_data, (Py_ssize_t)v->mv_size);
}

static PyObject *cur_replace(CursorObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "value", NULL};
    PyObject *a[2] = {NULL, NULL};
    if (args_parse("replace", args, nargs, kwnames, names, a) < 0)
        return NULL;
    if (!a[0] || !a[1]) {
        PyErr_SetString(PyExc_TypeError, "replace() takes key and value");
        return NULL;
    }
    if (cursor_check(self) < 0)
        return NULL;
    MDB_val k;
    InBuf kb;
    if (inbuf_get(a[0], &k, &kb, "key") < 0)
        return NULL;
    {
        /* both arguments are converted first (TypeError), then a read-only txn is refused
         * before the lookup, in py-lmdb's order */
        MDB_val vt;
        InBuf vbt;
        if (inbuf_get(a[1], &vt, &vbt, "value") < 0) {
            inbuf_release(&kb);
            return NULL;
        }
        inbuf_release(&vbt);
    }
    if (!self->txn->write) {
        inbuf_release(&kb);
        return err_set("mdb_cursor_put", EACCES);
    }
    if (k.mv_size == 0) { /* an empty key is refused by the lookup itself */
        inbuf_release(&kb);
        return err_badvalsize("mdb_cursor_put", 0, mdb_env_get_maxkeysize(self->txn->env->env));
    }
    int found = cursor_do(self, MDB_SET_KEY, &k, NULL);
    inbuf_release(&kb);
    if (found < 0)
        return NULL;
    PyObject *old = Py_None;
    Py_INCREF(old);
    if (found) {
        Py_DECREF(old);
        old = copy_val(&self->val);
        if (!old)
            return NULL;
        if (self->db->flags & MDB_DUPSORT) {
            int rc = mdb_cursor_del(self->cur, MDB_NODUPDATA);
            if (rc) {
                Py_DECREF(old);
                return err_set("mdb_cursor_del", rc);
            }
        }
    }
    int r = cput(self, a[0], a[1], 0);
    if (r < 0) {
        Py_DECREF(old);
        return NULL;
    }
    return old;
}

static PyObject *cur_pop(CursorObject *self, PyObject *key)
{
    if (cursor_check(self) < 0)
        return NULL;
    int found = set_key_impl(self, key);
    if (found < 0)
        return NULL;
    if (!found)
        Py_RETURN_NONE;
    PyObject *old = copy_val(&self->val);
    if (!old)
        return NULL;
    /* py-lmdb's contract: on a DUPSORT database only the first value of the key goes. */
    int rc = mdb_cursor_del(self->cur, 0);
    if (rc) {
        Py_DECREF(old);
        return err_set("mdb_cursor_del", rc);
    }
    cursor_refresh(self);
    return old;
}

static PyObject *cur_delete(CursorObject *self, FASTARGS)
{
    static const char *const names[] = {"dupdata", NULL};
    PyObject *a[1] = {Py_False};
    int dupdata;
    if (args_parse("delete", args, nargs, kwnames, names, a) < 0 || args_bool(a[0], &dupdata) < 0)
        return NULL;
    if (cursor_check(self) < 0)
        return NULL;
    if (!self->positioned || self->put_only)
        Py_RETURN_FALSE;
    int rc = mdb_cursor_del(self->cur,
                            (dupdata && (self->db->flags & MDB_DUPSORT)) ? MDB_NODUPDATA : 0);
    if (rc)
        return err_set("mdb_cursor_del", rc);
    cursor_refresh(self);
    Py_RETURN_TRUE;
}

static PyObject *cur_count(CursorObject *self, PyObject *unused)
{
    (void)unused;
    if (cursor_check(self) < 0)
        return NULL;
    size_t n = 0;
    int rc = mdb_cursor_count(self->cur, &n);
    if (rc)
        return err_set("mdb_cursor_count", rc);
    return PyLong_FromSize_t(n);
}

static PyObject *make_iter(CursorObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames, const char *fname, MDB_cursor_op start,
                           MDB_cursor_op op, int dkeys, int dvalues)
{
    static const char *const names[] = {"keys", "values", NULL};
    PyObject *a[2] = {dkeys ? Py_True : Py_False, dvalues ? Py_True : Py_False};
    int keys, values;
    if (args_parse(fname, args, nargs, kwnames, names, a) < 0 || args_bool(a[0], &keys) < 0 ||
        args_bool(a[1], &values) < 0)
        return NULL;
    if (cursor_check(self) < 0)
        return NULL;
    return iter_new(self, start, op, keys, values);
}

/* iternext(), iterprev() and their _dup/_nodup forms: (start, step, default keys, values) */
#define ITER_METHOD(name, start, op, dkeys, dvalues)                                      \
    static PyObject *cur_##name(CursorObject *self, FASTARGS)                             \
    {                                                                                     \
        return make_iter(self, args, nargs, kwnames, #name, start, op, dkeys, dvalues);   \
    }
ITER_METHOD(iternext, MDB_FIRST, MDB_NEXT, 1, 1)
ITER_METHOD(iternext_dup, MDB_GET_CURRENT, MDB_NEXT_DUP, 0, 1)
ITER_METHOD(iternext_nodup, MDB_FIRST, MDB_NEXT_NODUP, 1, 0)
ITER_METHOD(iterprev, MDB_LAST, MDB_PREV, 1, 1)
ITER_METHOD(iterprev_dup, MDB_GET_CURRENT, MDB_PREV_DUP, 0, 1)
ITER_METHOD(iterprev_nodup, MDB_LAST, MDB_PREV_NODUP, 1, 0)

static PyObject *cur_iter(CursorObject *self)
{
    if (cursor_check(self) < 0)
        return NULL;
    return iter_new(self, MDB_FIRST, MDB_NEXT, 1, 1);
}

static PyObject *cur_iter_from(CursorObject *self, PyObject *args)
{
    PyObject *key;
    int reverse;
    if (!PyArg_ParseTuple(args, "Op", &key, &reverse))
        return NULL;
    int r = seek_range(self, key);
    if (r < 0)
        return NULL;
    if (!r && reverse)
        r = cursor_do(self, MDB_LAST, NULL, NULL);
    if (r < 0)
        return NULL;
    return iter_new(self, reverse ? MDB_LAST : MDB_FIRST, reverse ? MDB_PREV : MDB_NEXT, 1, 1);
}

/* close() and __exit__: refused while the txn is in use by another thread, else `ret`. */
static PyObject *cur_close_then(CursorObject *self, PyObject *ret)
{
    if (self->valid && self->txn && self->txn->busy)
        return err_msg("Cursor is in use by another thread.");
    cursor_do_close(self);
    return new_ref(ret);
}

static PyObject *cur_close(CursorObject *self, PyObject *unused)
{
    (void)unused;
    return cur_close_then(self, Py_None);
}

static PyObject *cur_enter(CursorObject *self, PyObject *unused)
{
    (void)unused;
    return args_enter((PyObject *)self, cursor_check(self));
}

static PyObject *cur_exit(CursorObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    return cur_close_then(self, Py_False);
}

static PyObject *cur_get_txn(CursorObject *self, void *c)
{
    (void)c;
    return self->txn ? new_ref(self->txn) : new_ref(Py_None);
}

static PyObject *cur_get_db(CursorObject *self, void *c)
{
    (void)c;
    return new_ref(self->db);
}

static PyGetSetDef cur_getset[] = {
    {"txn", (getter)cur_get_txn, NULL, "The Transaction of this cursor.", NULL},
    {"db", (getter)cur_get_db, NULL, "The _Database of this cursor.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

#define NOARG(name, doc) {#name, (PyCFunction)cur_##name, METH_NOARGS, doc}
#define FK(name, doc) {#name, (PyCFunction)(void (*)(void))cur_##name, METH_FK, doc}

static PyMethodDef cur_methods[] = {
    NOARG(key, "key() -> bytes\n\nKey of the current record (b'' if unpositioned)."),
    NOARG(value, "value() -> bytes\n\nValue of the current record (b'' if unpositioned)."),
    NOARG(item, "item() -> (key, value)\n\nThe current record."),
    NOARG(first, "first() -> bool\n\nMove to the first key."),
    NOARG(last, "last() -> bool\n\nMove to the last key."),
    NOARG(next, "next() -> bool\n\nMove to the next record (first if unpositioned)."),
    NOARG(prev, "prev() -> bool\n\nMove to the previous record (last if unpositioned)."),
    NOARG(first_dup, "first_dup() -> bool\n\nMove to the first value of the current key."),
    NOARG(last_dup, "last_dup() -> bool\n\nMove to the last value of the current key."),
    NOARG(next_dup, "next_dup() -> bool\n\nMove to the next value of the current key."),
    NOARG(prev_dup, "prev_dup() -> bool\n\nMove to the previous value of the current key."),
    NOARG(next_nodup, "next_nodup() -> bool\n\nMove to the first value of the next key."),
    NOARG(prev_nodup, "prev_nodup() -> bool\n\nMove to the last value of the previous key."),
    {"set_key", (PyCFunction)cur_set_key, METH_O, "set_key(key) -> bool\n\nSeek to key exactly."},
    FK(set_key_dup, "set_key_dup(key, value) -> bool\n\nSeek to the exact (key, value) pair."),
    {"set_range", (PyCFunction)cur_set_range, METH_O,
     "set_range(key) -> bool\n\nSeek to the first key >= key."},
    FK(set_range_dup, "set_range_dup(key, value) -> bool\n\nSeek to the first value >= value of "
                      "key."),
    FK(get, "get(key, default=None)\n\nSeek to key and return its value, or default."),
    FK(getmulti, "getmulti(keys, dupdata=False, dupfixed_bytes=None, keyfixed=False, "
                 "values=True) -> list\n\nLook up many keys; returns the records found."),
    FK(put, "put(key, value, dupdata=True, overwrite=True, append=False) -> bool\n\n"
            "Store a record and position on it."),
    FK(putmulti, "putmulti(items, dupdata=True, overwrite=True, append=False) -> "
                 "(consumed, added)\n\nStore many (key, value) tuples."),
    FK(replace, "replace(key, value)\n\nStore value and return the previous one (or None)."),
    {"pop", (PyCFunction)cur_pop, METH_O, "pop(key)\n\nDelete key and return its value."},
    FK(delete, "delete(dupdata=False) -> bool\n\nDelete the current record (all its values "
               "with dupdata=True) and move to the next one."),
    NOARG(count, "count() -> int\n\nNumber of values of the current key (dupsort only)."),
    FK(iternext, "iternext(keys=True, values=True)\n\nForward iterator from the current "
                 "record (the first if unpositioned)."),
    FK(iternext_dup, "iternext_dup(keys=False, values=True)\n\nForward iterator over the "
                     "values of the current key."),
    FK(iternext_nodup, "iternext_nodup(keys=True, values=False)\n\nForward iterator over "
                       "distinct keys."),
    FK(iterprev, "iterprev(keys=True, values=True)\n\nBackward iterator from the current "
                 "record (the last if unpositioned)."),
    FK(iterprev_dup, "iterprev_dup(keys=False, values=True)\n\nBackward iterator over the "
                     "values of the current key."),
    FK(iterprev_nodup, "iterprev_nodup(keys=True, values=False)\n\nBackward iterator over "
                       "distinct keys."),
    {"_iter_from", (PyCFunction)cur_iter_from, METH_VARARGS,
     "_iter_from(key, reverse)\n\nIterator starting at set_range(key)."},
    NOARG(close, "close()\n\nClose the cursor. Idempotent."),
    {"__enter__", (PyCFunction)cur_enter, METH_NOARGS, "Return self."},
    {"__exit__", (PyCFunction)(void (*)(void))cur_exit, METH_FASTCALL, "Close the cursor."},
    {NULL, NULL, 0, NULL}};

PyTypeObject MdbCursor_Type = {
    MDB_TYPE_HEAD("Cursor", CursorObject, cursor_dealloc),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_weaklistoffset = offsetof(CursorObject, weakreflist),
    .tp_iter = (getiterfunc)cur_iter,
    .tp_methods = cur_methods,
    .tp_getset = cur_getset,
    .tp_new = cursor_tp_new,
    .tp_doc = "Cursor(db, txn)\n\nA position inside a database; usually from "
              "Transaction.cursor().",
};
