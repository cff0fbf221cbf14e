/*
 * bytes_arg.h -- the hot helpers' variants that take a key or value as a bytes object's
 * data alone, reading its length from the object itself.
 *
 * Included (by build.py's set_source) into cffi's generated module only, after Python.h.
 * cffi hands a `const char *` parameter given an exact bytes object a pointer to that
 * object's own data, and CPython keeps that data at a fixed offset from the object's
 * head, whose ob_size is the length.  So the length Python would pass as len(k) -- a
 * call and an int conversion per argument, ~20 ns each, a tenth of a cffi put -- can be
 * read in C instead.  Both facts are measured at import, not assumed: _ffi.py probes
 * objects of known address (id()) and length, and unless every one agrees it binds the
 * length-passing helpers instead and never calls these.  Callers pass
 * only objects whose type is exactly bytes (the fast paths test that first); Py_SIZE is
 * a plain read of an immutable object the call's arguments keep alive, so these need no
 * Python API, and they keep the GIL as the helpers they call do (keep_gil.h).
 */
#ifndef MDB_CFFI_BYTES_ARG_H
#define MDB_CFFI_BYTES_ARG_H

#include <stddef.h>
#include <stdint.h>

/* The data's distance from its object's head: set once by mdbpy_bytes_use, 0 before. */
static ptrdiff_t mdbpy_bytes_offset;

static inline size_t bytes_arg_size(const char *data)
{
    return (size_t)Py_SIZE((PyObject *)(uintptr_t)(data - mdbpy_bytes_offset));
}

/* data: what cffi passed for a bytes object at address obj (its id()) of length size.
 * The data's offset from the object if that is plausible and the object's size is size,
 * else -1.  No state changes: tests may call it with anything. */
static long long mdbpy_bytes_probe(const char *data, uintptr_t obj, size_t size)
{
    ptrdiff_t off = (ptrdiff_t)((uintptr_t)data - obj);
    if (off < (ptrdiff_t)sizeof(PyVarObject) || off > 64 ||
        Py_SIZE((PyObject *)obj) != (Py_ssize_t)size)
        return -1;
    return off;
}

/* Fix the offset the _b helpers use (what every probe agreed on); the first call wins,
 * later ones change nothing.  Returns the offset in use. */
static long long mdbpy_bytes_use(long long off)
{
    if (mdbpy_bytes_offset == 0 && off >= (long long)sizeof(PyVarObject) && off <= 64)
        mdbpy_bytes_offset = (ptrdiff_t)off;
    return mdbpy_bytes_offset;
}

static long long mdbpy_tget_b(mdbpy_txnst *t, const char *k)
{
    return mdbpy_tget(t, k, bytes_arg_size(k));
}

static int mdbpy_tput_b(mdbpy_txnst *t, const char *k, const char *v)
{
    return mdbpy_tput(t, k, bytes_arg_size(k), v, bytes_arg_size(v));
}

static int mdbpy_tdel_b(mdbpy_txnst *t, const char *k)
{
    return mdbpy_tdel(t, k, bytes_arg_size(k));
}

static int mdbpy_cput_b(mdbpy_curst *c, const char *k, const char *v, unsigned int flags)
{
    return mdbpy_cput(c, k, bytes_arg_size(k), v, bytes_arg_size(v), flags);
}

#endif
