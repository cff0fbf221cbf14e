/*
 * buffers.c -- values in and out of the engine, and the map's lifetime.
 *
 * In: keys and values are taken without a copy from bytes (fast path) or from
 * any object with the buffer protocol (bytearray, memoryview, numpy arrays).
 * The Py_buffer is held until the engine call returns.  str is rejected.
 *
 * Out: bytes copies, or with buffers=True a read-only memoryview whose
 * exporter (MapBuffer) holds a strong reference to the MapKeeper that owns the
 * MDB_env.  The map therefore stays mapped as long as any such view is alive,
 * even after Environment.close() (the real mdb_env_close is deferred to the
 * keeper's deallocation).  The bytes seen through a view are those of the
 * transaction's snapshot while it lives; after it ends they may change (the
 * page may be reused by later writes) but reading them is always memory-safe.
 * Values outside the map (dirty pages of a write transaction live on the
 * heap and are freed at commit) are always returned as copies.
 */
#include "module.h"

int inbuf_get(PyObject *obj, MDB_val *val, InBuf *buf, const char *argname)
{
    buf->have_view = 0;
    if (PyBytes_CheckExact(obj)) {
        val->mv_data = PyBytes_AS_STRING(obj);
        val->mv_size = (size_t)PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyUnicode_Check(obj) || !PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a bytes-like object, not %.100s", argname,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(obj, &buf->view, PyBUF_SIMPLE) < 0)
        return -1;
    buf->have_view = 1;
    val->mv_data = buf->view.buf;
    val->mv_size = (size_t)buf->view.len;
    return 0;
}

void inbuf_release(InBuf *buf)
{
    if (buf->have_view) {
        PyBuffer_Release(&buf->view);
        buf->have_view = 0;
    }
}

int inbuf_get_kv(PyObject *key, PyObject *value, MDB_val *k, MDB_val *v, InBuf *kb, InBuf *vb)
{
    if (inbuf_get(key, k, kb, "key") < 0)
        return -1;
    if (inbuf_get(value, v, vb, "value") < 0) {
        inbuf_release(kb);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ MapKeeper */

static void keeper_dealloc(MapKeeper *self)
{
    if (self->env) {
        if (self->pid == mdb_cur_pid) {
            MDB_env *env = self->env;
            Py_BEGIN_ALLOW_THREADS
            mdb_env_close(env);
            Py_END_ALLOW_THREADS
        }
        /* else: inherited across fork; leak rather than touch the parent's
         * reader slots and locks. */
        self->env = NULL;
    }
    if (self->reg_key) {
        if (self->pid == mdb_cur_pid && mdb_registry) {
            /* may run while an exception is being raised (failed open) */
            PyObject *et, *ev, *tb;
            PyErr_Fetch(&et, &ev, &tb);
            PyObject *r = PyObject_CallMethod(mdb_registry, "release", "(O)", self->reg_key);
            if (!r)
                PyErr_WriteUnraisable(NULL);
            Py_XDECREF(r);
            PyErr_Restore(et, ev, tb);
        }
        Py_CLEAR(self->reg_key);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject MdbKeeper_Type = {
    MDB_TYPE_HEAD("mdb._cext._MapKeeper", MapKeeper, keeper_dealloc),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Owns an engine environment handle; closes it when the last user goes.",
};

/* ------------------------------------------------------------ MapBuffer */

static int mapbuf_getbuffer(MapBuffer *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->len, 1, flags);
}

static void mapbuf_dealloc(MapBuffer *self)
{
    if (self->keeper) {
        self->keeper->exports--;
        Py_CLEAR(self->keeper);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyBufferProcs mapbuf_as_buffer = {
    .bf_getbuffer = (getbufferproc)mapbuf_getbuffer,
};

PyTypeObject MdbMapBuffer_Type = {
    MDB_TYPE_HEAD("mdb._cext._MapBuffer", MapBuffer, mapbuf_dealloc),
    .tp_as_buffer = &mapbuf_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only view of a value inside the memory map; keeps the map alive.",
};

/* Values spanning several pages are faulted in with the GIL released, so a
 * cold page does not stall every other thread (only when the value is
 * actually returned: positioning alone never touches value pages). */
#define PREFAULT_MIN 8192

static void prefault(EnvObject *env, const char *p, size_t n)
{
    volatile char sink = 0;
    MDB_UNLOCKED(env, {
        for (size_t i = 0; i < n; i += 4096)
            sink ^= p[i];
        sink ^= p[n - 1];
    });
    (void)sink;
}

PyObject *outval_buffers(EnvObject *env, int buffers, const MDB_val *val)
{
    char *p = (char *)val->mv_data;
    if (!buffers || !env->keeper || p < env->map_lo || p + val->mv_size > env->map_hi) {
        if (buffers) {
            /* heap page (dirty in a write txn): a private copy, still a memoryview */
            PyObject *b = PyBytes_FromStringAndSize(p, (Py_ssize_t)val->mv_size);
            if (!b)
                return NULL;
            PyObject *mv = PyMemoryView_FromObject(b);
            Py_DECREF(b);
            return mv;
        }
        return PyBytes_FromStringAndSize(p, (Py_ssize_t)val->mv_size);
    }
    if (val->mv_size > PREFAULT_MIN)
        prefault(env, p, val->mv_size);
    MapBuffer *mb = PyObject_New(MapBuffer, &MdbMapBuffer_Type);
    if (!mb)
        return NULL;
    mb->keeper = env->keeper;
    Py_INCREF(mb->keeper);
    mb->keeper->exports++;
    mb->data = p;
    mb->len = (Py_ssize_t)val->mv_size;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)mb);
    Py_DECREF(mb);
    return mv;
}

PyObject *outval(TxnObject *txn, const MDB_val *val)
{
    if (txn->buffers)
        return outval_buffers(txn->env, 1, val);
    if (val->mv_size < (1u << 16))
        return PyBytes_FromStringAndSize((const char *)val->mv_data, (Py_ssize_t)val->mv_size);
    /* large copy: do it (and its page faults) without the GIL.  Map pages stay
     * mapped (close() waits for active ops); a write txn's dirty pages are heap
     * memory freed when it ends, so a write txn is marked busy meanwhile. */
    PyObject *b = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)val->mv_size);
    if (!b)
        return NULL;
    char *dst = PyBytes_AS_STRING(b);
    const void *src = val->mv_data;
    size_t n = val->mv_size;
    int w = txn->write;
    if (w)
        txn_busy(txn, 1);
    MDB_UNLOCKED(txn->env, memcpy(dst, src, n));
    if (w)
        txn_busy(txn, -1);
    return b;
}
