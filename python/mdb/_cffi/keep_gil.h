/*
 * keep_gil.h -- which helpers of mdb._cffi_lib run without releasing the GIL.
 *
 * Included (by build.py's set_source) into cffi's generated module only, after
 * Python.h and before the wrappers cffi writes for each function, `_cffi_f_<name>`,
 * which bracket their call with Py_BEGIN_ALLOW_THREADS / Py_END_ALLOW_THREADS.  Those
 * two macros are redefined here to skip the release inside the wrappers of the helpers
 * named below: the single-record calls (guarded or not, with lengths or bytes_arg.h's
 * without) and a read txn's begin and end.
 * They never wait on a lock held by another (the reader table's mutex is held for a few
 * stores, never across a wait), so keeping the GIL is what mdb._cext does for the same
 * calls (see _cext/gil.h), and releasing and taking it back cost ~100 ns a call, as much
 * as a cached get.  Every other function, and a write txn's begin above all (it waits
 * for the writer lock), still releases it.  __func__ is a constant inside each wrapper:
 * the compiler folds the test away.  Should cffi ever stop using these macros, the calls
 * release the GIL as before: slower, not wrong.
 */
#ifndef MDB_CFFI_KEEP_GIL_H
#define MDB_CFFI_KEEP_GIL_H

#define MDBPY_IS(fn, name) (__builtin_strcmp((fn), "_cffi_f_" name) == 0)
#define MDBPY_KEEPS_GIL(fn)                                                              \
    (MDBPY_IS(fn, "mdbpy_get") || MDBPY_IS(fn, "mdbpy_put") || MDBPY_IS(fn, "mdbpy_del") ||  \
     MDBPY_IS(fn, "mdbpy_cursor_get") || MDBPY_IS(fn, "mdbpy_cursor_put") ||             \
     MDBPY_IS(fn, "mdbpy_tget") || MDBPY_IS(fn, "mdbpy_tput") ||                         \
     MDBPY_IS(fn, "mdbpy_tdel") || MDBPY_IS(fn, "mdbpy_cmove") ||                        \
     MDBPY_IS(fn, "mdbpy_cread") || MDBPY_IS(fn, "mdbpy_cseek") ||                       \
     MDBPY_IS(fn, "mdbpy_cput") || MDBPY_IS(fn, "mdbpy_tbegin_read") ||                  \
     MDBPY_IS(fn, "mdbpy_tend_read") || MDBPY_IS(fn, "mdbpy_cinit") ||                   \
     MDBPY_IS(fn, "mdbpy_tget_b") || MDBPY_IS(fn, "mdbpy_tput_b") ||                     \
     MDBPY_IS(fn, "mdbpy_tdel_b") || MDBPY_IS(fn, "mdbpy_cput_b") ||                     \
     MDBPY_IS(fn, "mdbpy_bytes_probe") || MDBPY_IS(fn, "mdbpy_keeps_gil"))

#undef Py_BEGIN_ALLOW_THREADS
#undef Py_END_ALLOW_THREADS
#define Py_BEGIN_ALLOW_THREADS \
    {                          \
        PyThreadState *_save = MDBPY_KEEPS_GIL(__func__) ? NULL : PyEval_SaveThread();
#define Py_END_ALLOW_THREADS         \
    if (_save)                       \
        PyEval_RestoreThread(_save); \
    }

#endif
