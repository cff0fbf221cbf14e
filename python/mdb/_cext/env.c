/*
 * env.c -- the Environment type (mdb.open is an alias).
 *
 * Owns: opening (flags, duplicate-open guard, fork pid), the named-database
 * cache, close() (invalidate children, drain calls running without the GIL,
 * hand the engine handle to the keeper), set_mapsize, copy/sync/stat/info and
 * the reader table calls.  The engine handle itself belongs to MapKeeper
 * (buffers.c), so exported buffers can outlive close().
 */
#include "module.h"

#include <errno.h>
#include <sys/stat.h>
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
#include "mdbcore.h"
#endif

#define FASTARGS PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames
#define METH_FK (METH_FASTCALL | METH_KEYWORDS)

/* Where the data file is mapped, for buffers=True: the core's map and the address space
 * it reserved past it (where it grows in place); on the system liblmdb,
 * mdb._common.map_range (the file's mappings in /proc/self/maps; without it, non-Linux,
 * buffers=True values are copies).  Called at open and after set_mapsize only: a map the
 * core moved to follow another process's growth (only past its reservation) serves
 * copies until then; the old map stays valid. */
int env_update_map_range(EnvObject *env)
{
    mdb_filehandle_t fd;
    env->map_lo = env->map_hi = NULL;
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
    /* the core says where its map is, and the address space it keeps past it */
    env->map_lo = mdbcore_env_get_mapaddr(env->env);
    if (env->map_lo) {
        env->map_hi = env->map_lo + mdbcore_env_get_mapspan(env->env);
        return 0;
    }
#endif
    if (mdb_env_get_fd(env->env, &fd) || fd < 0)
        return 0;
    PyObject *r = PyObject_CallMethod(mdb_common, "map_range", "i", (int)fd);
    if (!r)
        return -1;
    unsigned long long lo, hi;
    int ok = PyArg_ParseTuple(r, "KK", &lo, &hi);
    Py_DECREF(r);
    if (!ok)
        return -1;
    env->map_lo = (char *)(uintptr_t)lo;
    env->map_hi = (char *)(uintptr_t)hi;
    return 0;
}

static PyObject *env_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    (void)args;
    (void)kwds;
    EnvObject *self = (EnvObject *)type->tp_alloc(type, 0);
    return (PyObject *)self;
}

static int env_init(EnvObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"path", "map_size", "subdir", "readonly", "metasync", "sync",
                             "map_async", "mode", "create", "readahead", "writemap",
                             "meminit", "max_readers", "max_dbs", "max_spare_txns", "lock",
                             "lib_version", "max_map_size", NULL};
    PyObject *path_bytes = NULL;
    PyObject *map_size_o = NULL, *max_readers_o = NULL, *max_dbs_o = NULL;
    PyObject *lib_version_o = Py_None, *max_map_size_o = Py_None;
    unsigned long long max_map_size = 0;
    unsigned long long map_size = 10485760ULL;
    int subdir = 1, readonly = 0, metasync = 1, sync = 1, map_async = 0, create = 1;
    int readahead = 1, writemap = 0, meminit = 1, lock = 1;
    int mode = 0755;
    unsigned int max_readers = 126, max_dbs = 0;
    int max_spare_txns = 0;
    int rc;

    if (self->keeper || self->valid) {
        PyErr_SetString(PyExc_TypeError, "Environment is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|OpppppippppOOipOO", kwlist,
                                     PyUnicode_FSConverter, &path_bytes, &map_size_o, &subdir,
                                     &readonly, &metasync, &sync, &map_async, &mode, &create,
                                     &readahead, &writemap, &meminit, &max_readers_o, &max_dbs_o,
                                     &max_spare_txns, &lock, &lib_version_o, &max_map_size_o))
        return -1;
    /* The argument checks (ranges, lib_version, max_map_size without the core) are
     * mdb._common's, shared with the cffi backend; the conversions below cannot fail
     * after them. */
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
    PyObject *have_core = Py_True;
#else
    PyObject *have_core = Py_False;
#endif
    PyObject *none = Py_None;
    PyObject *chk = PyObject_CallMethod(
        mdb_common, "check_env_args", "OOOOOO", map_size_o ? map_size_o : none,
        max_readers_o ? max_readers_o : none, max_dbs_o ? max_dbs_o : none, max_map_size_o,
        lib_version_o, have_core);
    if (!chk) {
        Py_DECREF(path_bytes);
        return -1;
    }
    Py_DECREF(chk);
    if (max_map_size_o != Py_None) {
        max_map_size = PyLong_AsUnsignedLongLong(max_map_size_o);
        if (PyErr_Occurred()) {
            Py_DECREF(path_bytes);
            return -1;
        }
    }
    if (map_size_o) {
        map_size = PyLong_AsUnsignedLongLong(map_size_o);
        if (PyErr_Occurred()) {
            Py_DECREF(path_bytes);
            return -1;
        }
    }
    PyObject *uo[2] = {max_readers_o, max_dbs_o};
    unsigned int *uv[2] = {&max_readers, &max_dbs};
    for (int i = 0; i < 2; i++) {
        if (!uo[i])
            continue;
        unsigned long x = PyLong_AsUnsignedLong(uo[i]);
        if (PyErr_Occurred() || x > 0xFFFFFFFFUL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_OverflowError, "value too large");
            Py_DECREF(path_bytes);
            return -1;
        }
        *uv[i] = (unsigned int)x;
    }
    const char *path = PyBytes_AS_STRING(path_bytes);
    PyObject *path_str = PyUnicode_DecodeFSDefault(path);
    if (!path_str)
        goto fail_nopath;

    PyObject *r = PyObject_CallMethod(mdb_registry, "check", "Oi", path_str, subdir);
    if (!r)
        goto fail;
    Py_DECREF(r);

    if (create && subdir && !readonly) {
        if (mkdir(path, (mode_t)mode) && errno != EEXIST) {
            PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, path_str);
            goto fail;
        }
    }

    MDB_env *env = NULL;
    if ((rc = mdb_env_create(&env))) {
        err_set("mdb_env_create", rc);
        goto fail;
    }
    if ((rc = mdb_env_set_mapsize(env, (size_t)map_size))) {
        mdb_env_close(env);
        err_set("mdb_env_set_mapsize", rc);
        goto fail;
    }
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
    if (max_map_size && (rc = mdbcore_env_set_maxsize(env, (size_t)max_map_size))) {
        mdb_env_close(env);
        err_set("max_map_size", rc);
        goto fail;
    }
#endif
    if ((rc = mdb_env_set_maxreaders(env, max_readers))) {
        mdb_env_close(env);
        err_set("mdb_env_set_maxreaders", rc);
        goto fail;
    }
    if ((rc = mdb_env_set_maxdbs(env, max_dbs))) {
        mdb_env_close(env);
        err_set("mdb_env_set_maxdbs", rc);
        goto fail;
    }
    PyObject *flags_o = PyObject_CallMethod(mdb_common, "open_flags", "iiiiiiiii", subdir,
                                            readonly, metasync, sync, map_async, readahead,
                                            writemap, meminit, lock);
    unsigned int flags = flags_o ? (unsigned int)PyLong_AsUnsignedLong(flags_o) : 0;
    Py_XDECREF(flags_o);
    if (PyErr_Occurred()) {
        mdb_env_close(env);
        goto fail;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = mdb_env_open(env, path, flags, (mdb_mode_t)(mode & ~0111));
    Py_END_ALLOW_THREADS
    if (rc) {
        mdb_env_close(env);
        err_set(path, rc);
        goto fail;
    }

    MapKeeper *keeper = PyObject_New(MapKeeper, &MdbKeeper_Type);
    if (!keeper) {
        mdb_env_close(env);
        goto fail;
    }
    keeper->env = env;
    keeper->pid = mdb_cur_pid;
    keeper->exports = 0;
    keeper->reg_key = NULL;
    self->keeper = keeper;
    self->env = env;
    self->pid = mdb_cur_pid;
    self->valid = 1;
    self->readonly = readonly;
    self->env_flags = flags;
    self->max_spare_txns = max_spare_txns;

    mdb_filehandle_t fd;
    if (mdb_env_get_fd(env, &fd) == 0 && fd >= 0) {
        keeper->reg_key = PyObject_CallMethod(mdb_registry, "register", "iOi", (int)fd,
                                              path_str, subdir);
        if (!keeper->reg_key)
            goto fail_open;
    }
    if (env_update_map_range(self) < 0)
        goto fail_open;

    self->dbs = PyDict_New();
    if (!self->dbs)
        goto fail_open;
    /* the main database */
    {
        MDB_txn *txn;
        unsigned int dflags = 0;
        if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))) {
            err_set("mdb_txn_begin", rc);
            goto fail_open;
        }
        MDB_dbi dbi;
        rc = mdb_dbi_open(txn, NULL, 0, &dbi);
        if (!rc)
            rc = mdb_dbi_flags(txn, dbi, &dflags);
        mdb_txn_abort(txn);
        if (rc) {
            err_set("mdb_dbi_open", rc);
            goto fail_open;
        }
        self->main_db = db_new(self, dbi, dflags);
        if (!self->main_db)
            goto fail_open;
    }
    Py_DECREF(path_str);
    Py_DECREF(path_bytes);
    return 0;

fail_open:
    self->valid = 0;
    self->env = NULL;
    Py_CLEAR(self->keeper);
fail:
    Py_XDECREF(path_str);
fail_nopath:
    Py_DECREF(path_bytes);
    return -1;
}

static void env_do_close(EnvObject *self)
{
    if (!self->valid)
        return;
    if (self->pid != mdb_cur_pid) {
        /* forked child: never touch the parent's engine state */
        self->valid = 0;
        self->env = NULL;
        self->txns = NULL;
        self->spare = NULL;
        if (self->keeper) {
            self->keeper->env = NULL;
            Py_CLEAR(self->keeper->reg_key);
        }
        Py_CLEAR(self->keeper);
        return;
    }
    /* From here new calls fail.  Then release the writer lock if this thread
     * holds it (a thread blocked in begin(write=True) is an active op that
     * would otherwise wait for us forever), wait for the calls running on
     * other threads without the GIL, and only then end every transaction. */
    self->valid = 0;
    if (self->write_txns > 0 && pthread_equal(self->writer, pthread_self())) {
        for (TxnObject *t = self->txns; t; t = t->next)
            if (t->write && !t->parent && t->valid) {
                Py_INCREF(t);
                txn_end(t, 0);
                Py_DECREF(t);
                break;
            }
    }
    while (self->active_ops > 0) {
        Py_BEGIN_ALLOW_THREADS
        usleep(1000);
        Py_END_ALLOW_THREADS
    }
    env_end_all_txns(self);
    if (self->main_db)
        self->main_db->valid = 0;
    if (self->dbs) {
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(self->dbs, &pos, &k, &v))
            ((DbObject *)v)->valid = 0;
    }
    self->env = NULL;
    Py_CLEAR(self->keeper);
}

static PyObject *env_close(EnvObject *self, PyObject *unused)
{
    (void)unused;
    env_do_close(self);
    Py_RETURN_NONE;
}

static void env_dealloc(EnvObject *self)
{
    if (self->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)self);
    env_do_close(self);
    Py_CLEAR(self->keeper);
    Py_CLEAR(self->main_db);
    Py_CLEAR(self->dbs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* 1 if o is None or of type t, else 0 with TypeError(msg). */
static int opt_of_type(PyObject *o, PyTypeObject *t, const char *msg)
{
    if (o == Py_None || PyObject_TypeCheck(o, t))
        return 1;
    PyErr_SetString(PyExc_TypeError, msg);
    return 0;
}

static PyObject *env_begin(EnvObject *self, FASTARGS)
{
    static const char *const names[] = {"db", "parent", "write", "buffers", NULL};
    PyObject *a[4] = {Py_None, Py_None, Py_False, Py_False};
    int write, buffers;
    if (args_parse("begin", args, nargs, kwnames, names, a) < 0)
        return NULL;
    if (args_bool(a[2], &write) < 0 || args_bool(a[3], &buffers) < 0)
        return NULL;
    if (env_check(self) < 0)
        return NULL;
    if (!opt_of_type(a[0], &MdbDb_Type, "db must be a _Database") ||
        !opt_of_type(a[1], &MdbTxn_Type, "parent must be a Transaction"))
        return NULL;
    return txn_new(self, a[0] == Py_None ? NULL : (DbObject *)a[0],
                   a[1] == Py_None ? NULL : (TxnObject *)a[1], write, buffers);
}

static PyObject *env_open_db(EnvObject *self, FASTARGS)
{
    static const char *const names[] = {"key", "txn", "reverse_key", "dupsort", "create",
                                        "integerkey", "integerdup", "dupfixed", NULL};
    PyObject *a[8] = {Py_None, Py_None, Py_False, Py_False, Py_True,
                      Py_False, Py_False, Py_False};
    int rk, ds, cr, ik, idup, df, rc, ro_create = 0;
    if (args_parse("open_db", args, nargs, kwnames, names, a) < 0)
        return NULL;
    if (args_bool(a[2], &rk) < 0 || args_bool(a[3], &ds) < 0 || args_bool(a[4], &cr) < 0 ||
        args_bool(a[5], &ik) < 0 || args_bool(a[6], &idup) < 0 || args_bool(a[7], &df) < 0)
        return NULL;
    if (env_check(self) < 0)
        return NULL;
    unsigned int flags = 0;
    if (rk)
        flags |= MDB_REVERSEKEY;
    if (ds)
        flags |= MDB_DUPSORT;
    if (ik)
        flags |= MDB_INTEGERKEY;
    if (idup)
        flags |= MDB_INTEGERDUP | MDB_DUPFIXED | MDB_DUPSORT;
    if (df)
        flags |= MDB_DUPFIXED | MDB_DUPSORT;
    if (a[0] == Py_None) {
        if (flags) {
            PyErr_SetString(PyExc_ValueError, "flags cannot be set on the main database");
            return NULL;
        }
        Py_INCREF(self->main_db);
        return (PyObject *)self->main_db;
    }
    if (!PyBytes_Check(a[0])) {
        PyErr_Format(PyExc_TypeError, "open_db() key must be bytes, not %.100s",
                     Py_TYPE(a[0])->tp_name);
        return NULL;
    }
    PyObject *existing = PyDict_GetItemWithError(self->dbs, a[0]);
    if (existing) {
        DbObject *e = (DbObject *)existing;
        if (e->creator && a[1] != Py_None && PyObject_TypeCheck(a[1], &MdbTxn_Type)) {
            /* made by a txn that has not committed: another txn may not see it (py-lmdb
             * asks the engine, which answers for that txn's snapshot) */
            TxnObject *u = (TxnObject *)a[1], *t = u;
            while (t && (void *)t != e->creator)
                t = t->parent;
            if (!t) {
                if (txn_check(u) < 0)
                    return NULL;
                MDB_dbi probe;
                int prc = mdb_dbi_open(u->txn, PyBytes_AS_STRING(a[0]),
                                       cr && !self->readonly ? MDB_CREATE : 0, &probe);
                if (prc)
                    return err_set("mdb_dbi_open", prc);
            }
        }
        Py_INCREF(existing);
        return existing;
    }
    if (PyErr_Occurred())
        return NULL;
    if (cr && !self->readonly)
        flags |= MDB_CREATE;
    else if (cr && self->readonly)
        ro_create = 1;

    TxnObject *utxn = NULL;
    if (a[1] != Py_None) {
        if (!PyObject_TypeCheck(a[1], &MdbTxn_Type)) {
            PyErr_SetString(PyExc_TypeError, "txn must be a Transaction");
            return NULL;
        }
        utxn = (TxnObject *)a[1];
        if (txn_check(utxn) < 0)
            return NULL;
        if (utxn->env != self)
            return err_set("mdb_dbi_open", EINVAL); /* a transaction of another Environment */
    }
    MDB_txn *txn;
    int own = 0;
    if (utxn) {
        txn = utxn->txn;
    } else {
        int write = !self->readonly;
        if (write && self->write_txns > 0 && pthread_equal(self->writer, pthread_self()))
            return err_msg("open_db() needs a write transaction but this thread already "
                           "has one: pass it as open_db(..., txn=txn)");
        MDB_env *e = self->env;
        MDB_UNLOCKED(self, rc = mdb_txn_begin(e, NULL, write ? 0 : MDB_RDONLY, &txn));
        if (rc)
            return err_set("mdb_txn_begin", rc);
        own = 1;
    }
    MDB_dbi dbi;
    unsigned int dflags = 0;
    rc = mdb_dbi_open(txn, PyBytes_AS_STRING(a[0]), flags, &dbi);
    if (!rc)
        rc = mdb_dbi_flags(txn, dbi, &dflags);
    if (rc) {
        if (own)
            mdb_txn_abort(txn);
        if (rc == MDB_NOTFOUND && ro_create)
            rc = EACCES; /* it would have to be created: read-only */
        return err_set("mdb_dbi_open", rc);
    }
    if (own) {
        MDB_UNLOCKED(self, rc = mdb_txn_commit(txn));
        if (rc)
            return err_set("mdb_txn_commit", rc);
    }
    DbObject *db = db_new(self, dbi, dflags);
    if (!db)
        return NULL;
    if (utxn && utxn->write) {
        db->creator = utxn;
        utxn->created_dbs++;
    }
    if (PyDict_SetItem(self->dbs, a[0], (PyObject *)db) < 0) {
        Py_DECREF(db);
        return NULL;
    }
    return (PyObject *)db;
}

static PyObject *env_dbs(EnvObject *self, FASTARGS)
{
    static const char *const names[] = {"txn", NULL};
    PyObject *a[1] = {Py_None};
    if (args_parse("dbs", args, nargs, kwnames, names, a) < 0)
        return NULL;
    if (env_check(self) < 0)
        return NULL;
    MDB_txn *txn;
    int own = 0, rc;
    if (a[0] != Py_None) {
        if (!PyObject_TypeCheck(a[0], &MdbTxn_Type)) {
            PyErr_SetString(PyExc_TypeError, "txn must be a Transaction");
            return NULL;
        }
        if (txn_check((TxnObject *)a[0]) < 0)
            return NULL;
        if (((TxnObject *)a[0])->env != self)
            return err_set("mdb_dbi_open", EINVAL); /* a transaction of another Environment */
        txn = ((TxnObject *)a[0])->txn;
    } else {
        MDB_env *e = self->env;
        MDB_UNLOCKED(self, rc = mdb_txn_begin(e, NULL, MDB_RDONLY, &txn));
        if (rc)
            return err_set("mdb_txn_begin", rc);
        own = 1;
    }
    PyObject *out = PyList_New(0);
    MDB_cursor *cur = NULL;
    if (!out)
        goto done;
    if ((rc = mdb_cursor_open(txn, self->main_db->dbi, &cur))) {
        Py_CLEAR(out);
        err_set("mdb_cursor_open", rc);
        goto done;
    }
    MDB_val k, v;
    MDB_cursor_op op = MDB_FIRST;
    while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
        op = MDB_NEXT;
        /* a named database's record holds its 48-byte descriptor */
        if (v.mv_size != 48 || k.mv_size == 0 || memchr(k.mv_data, 0, k.mv_size))
            continue;
        PyObject *name = PyBytes_FromStringAndSize(k.mv_data, (Py_ssize_t)k.mv_size);
        if (!name) {
            Py_CLEAR(out);
            goto done;
        }
        int is_db = PyDict_Contains(self->dbs, name);
        if (!is_db) {
            MDB_dbi dbi;
            is_db = mdb_dbi_open(txn, PyBytes_AS_STRING(name), 0, &dbi) == 0;
        }
        if (is_db && PyList_Append(out, name) < 0) {
            Py_DECREF(name);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(name);
    }
done:
    if (cur)
        mdb_cursor_close(cur);
    if (own)
        mdb_txn_abort(txn);
    return out;
}

/* The dict of Environment.stat() and Transaction.stat(): built by mdb._common. */
PyObject *stat_dict(const MDB_stat *st)
{
    return PyObject_CallMethod(mdb_common, "stat_dict", "IIKKKK", st->ms_psize, st->ms_depth,
                               (unsigned long long)st->ms_branch_pages,
                               (unsigned long long)st->ms_leaf_pages,
                               (unsigned long long)st->ms_overflow_pages,
                               (unsigned long long)st->ms_entries);
}

/* A method without arguments that reads one value of the engine: `call(self->env, &v)`
 * into a `type v`, then `result` (an expression over v) or the engine's error. */
#define ENV_GETTER(name, type, call, result)                                                \
    static PyObject *env_##name(EnvObject *self, PyObject *unused)                       \
    {                                                                                    \
        type v;                                                                          \
        (void)unused;                                                                    \
        if (env_check(self) < 0)                                                         \
            return NULL;                                                                 \
        int rc = call(self->env, &v);                                                    \
        return rc ? err_set(#call, rc) : (result);                                       \
    }

ENV_GETTER(stat, MDB_stat, mdb_env_stat, stat_dict(&v))
/* the flags' dict is mdb._common's, shared with cffi */
ENV_GETTER(flags, unsigned int, mdb_env_get_flags,
           PyObject_CallMethod(mdb_common, "env_flags_dict", "I", v))
ENV_GETTER(path, const char *, mdb_env_get_path, PyUnicode_DecodeFSDefault(v))
ENV_GETTER(max_readers, unsigned int, mdb_env_get_maxreaders, PyLong_FromUnsignedLong(v))

static PyObject *env_info(EnvObject *self, PyObject *unused)
{
    (void)unused;
    if (env_check(self) < 0)
        return NULL;
    MDB_envinfo info;
    int rc = mdb_env_info(self->env, &info);
    if (rc)
        return err_set("mdb_env_info", rc);
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
    unsigned long long oldest;
    if (mdb_core_reader_age(self, &oldest) < 0)
        return NULL;
    PyObject *age = PyLong_FromUnsignedLongLong(oldest);
    if (!age)
        return NULL;
    PyObject *meta = mdb_core_meta_status(self);
    if (!meta) {
        Py_DECREF(age);
        return NULL;
    }
#else
    PyObject *age = Py_None; /* reader_age and meta need the core */
    Py_INCREF(age);
    PyObject *meta = Py_None;
    Py_INCREF(meta);
#endif
    /* the dict is mdb._common's, as the cffi backend's */
    PyObject *d = PyObject_CallMethod(
        mdb_common, "info_dict", "KKKKIIOO", (unsigned long long)(uintptr_t)info.me_mapaddr,
        (unsigned long long)info.me_mapsize, (unsigned long long)info.me_last_pgno,
        (unsigned long long)info.me_last_txnid, info.me_maxreaders, info.me_numreaders, age,
        meta);
    Py_DECREF(age);
    Py_DECREF(meta);
    return d;
}

static PyObject *env_max_key_size(EnvObject *self, PyObject *unused)
{
    (void)unused;
    return env_check(self) < 0 ? NULL : PyLong_FromLong(mdb_env_get_maxkeysize(self->env));
}

static int reader_cb(const char *msg, void *ctx)
{
    return list_append_new(ctx, PyUnicode_FromString(msg));
}

static PyObject *env_readers(EnvObject *self, FASTARGS)
{
    static const char *const names[] = {"detail", NULL};
    PyObject *a[1] = {Py_False};
    int detail;
    if (args_parse("readers", args, nargs, kwnames, names, a) < 0 ||
        args_bool(a[0], &detail) < 0)
        return NULL;
    if (env_check(self) < 0)
        return NULL;
    if (detail) {
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_MDBCORE_H)
        return mdb_core_readers_detail(self);
#else
        return err_msg("env.readers(detail=True) needs the mdb core "
                       "(this build links the system liblmdb)");
#endif
    }
    PyObject *list = PyList_New(0);
    if (!list)
        return NULL;
    int rc = mdb_reader_list(self->env, reader_cb, list);
    if (PyErr_Occurred()) {
        Py_DECREF(list);
        return NULL;
    }
    if (rc < 0) {
        Py_DECREF(list);
        return err_set("mdb_reader_list", rc);
    }
    PyObject *out = join_strings(list);
    Py_DECREF(list);
    return out;
}

static PyObject *env_reader_check(EnvObject *self, PyObject *unused)
{
    (void)unused;
    if (env_check(self) < 0)
        return NULL;
    int dead = 0, rc;
    MDB_env *e = self->env;
    MDB_UNLOCKED(self, rc = mdb_reader_check(e, &dead));
    if (rc)
        return err_set("mdb_reader_check", rc);
    return PyLong_FromLong(dead);
}

static PyObject *env_sync(EnvObject *self, FASTARGS)
{
    static const char *const names[] = {"force", NULL};
    PyObject *a[1] = {Py_False};
    int force, rc;
    if (args_parse("sync", args, nargs, kwnames, names, a) < 0 || args_bool(a[0], &force) < 0)
        return NULL;
    if (env_check(self) < 0)
        return NULL;
    MDB_env *e = self->env;
    MDB_UNLOCKED(self, rc = mdb_env_sync(e, force));
    if (rc)
        return err_set("mdb_env_sync", rc);
    Py_RETURN_NONE;
}

/* copy(path, compact=False, txn=None) and copyfd(fd, ...): the arguments into a[3] (the
 * destination first, named dest) and compact; -1 with an exception. */
static int copy_args(EnvObject *self, const char *fname, const char *dest, FASTARGS,
                     PyObject **a, int *compact)
{
    const char *const names[] = {dest, "compact", "txn", NULL};
    char what[16];
    snprintf(what, sizeof what, "'%s'", dest);
    a[0] = NULL, a[1] = Py_False, a[2] = Py_None;
    if (args_parse_req(fname, args, nargs, kwnames, names, a, 1, what) < 0 ||
        args_bool(a[1], compact) < 0)
        return -1;
    if (a[2] != Py_None) {
        PyErr_SetString(PyExc_TypeError,
                        "copy(txn=) needs an engine with mdb_env_copy3; not supported");
        return -1;
    }
    return env_check(self);
}

static PyObject *env_copy(EnvObject *self, FASTARGS)
{
    PyObject *a[3];
    int compact, rc;
    if (copy_args(self, "copy", "path", args, nargs, kwnames, a, &compact) < 0)
        return NULL;
    PyObject *pb = NULL;
    if (!PyUnicode_FSConverter(a[0], &pb))
        return NULL;
    MDB_env *e = self->env;
    const char *p = PyBytes_AS_STRING(pb);
    MDB_UNLOCKED(self, rc = mdb_env_copy2(e, p, compact ? MDB_CP_COMPACT : 0));
    Py_DECREF(pb);
    if (rc)
        return err_set("mdb_env_copy2", rc);
    Py_RETURN_NONE;
}

static PyObject *env_copyfd(EnvObject *self, FASTARGS)
{
    PyObject *a[3];
    int compact, rc;
    if (copy_args(self, "copyfd", "fd", args, nargs, kwnames, a, &compact) < 0)
        return NULL;
    int fd = PyObject_AsFileDescriptor(a[0]);
    if (fd < 0)
        return NULL;
    MDB_env *e = self->env;
    MDB_UNLOCKED(self, rc = mdb_env_copyfd2(e, fd, compact ? MDB_CP_COMPACT : 0));
    if (rc)
        return err_set("mdb_env_copyfd2", rc);
    Py_RETURN_NONE;
}

static PyObject *env_set_mapsize(EnvObject *self, PyObject *arg)
{
    /* py-lmdb's order: a closed environment, then the argument, then a live writer */
    if (env_check(self) < 0)
        return NULL;
    PyObject *chk = PyObject_CallMethod(mdb_common, "check_mapsize", "O", arg);
    if (!chk)
        return NULL;
    Py_DECREF(chk);
    unsigned long long size = PyLong_AsUnsignedLongLong(arg);
    if (size == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    if (self->keeper->exports > 0) {
        PyErr_Format(mdb_Error,
                     "set_mapsize() refused: %zd buffers=True value(s) still point into the "
                     "current map; release them (del / memoryview.release()) first",
                     self->keeper->exports);
        return NULL;
    }
    if (self->write_txns > 0)
        return err_msg("Cannot set_mapsize while a write transaction is active"); /* py-lmdb's */
    while (self->active_ops > 0) {
        Py_BEGIN_ALLOW_THREADS
        usleep(1000);
        Py_END_ALLOW_THREADS
    }
    env_end_all_txns(self);
    int rc;
    MDB_env *e = self->env;
    MDB_UNLOCKED(self, rc = mdb_env_set_mapsize(e, (size_t)size));
    if (rc)
        return err_set("mdb_env_set_mapsize", rc);
    if (env_update_map_range(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *env_check_method(EnvObject *self, PyObject *unused)
{
    (void)unused;
    if (env_check(self) < 0)
        return NULL;
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_CORE_CHECK)
    return mdb_core_check(self);
#else
    return err_msg("env.check(): the structural checker needs the mdb core "
                   "(this build links the system liblmdb)");
#endif
}

static PyObject *env_freelist(EnvObject *self, PyObject *unused)
{
    (void)unused;
    if (env_check(self) < 0)
        return NULL;
#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_CORE_CHECK)
    return mdb_core_freelist(self);
#else
    return err_msg("env.freelist(): reading the free list needs the mdb core "
                   "(this build links the system liblmdb)");
#endif
}

static PyObject *env_lib_version(EnvObject *self, PyObject *unused)
{
    (void)unused;
    return env_check(self) < 0 ? NULL
                               : Py_BuildValue("(iii)", MDB_VERSION_MAJOR, MDB_VERSION_MINOR,
                                               MDB_VERSION_PATCH);
}

static PyObject *env_enter(EnvObject *self, PyObject *unused)
{
    (void)unused;
    return args_enter((PyObject *)self, env_check(self));
}

static PyObject *env_exit(EnvObject *self, PyObject *args)
{
    (void)args;
    env_do_close(self);
    Py_RETURN_FALSE;
}

static PyObject *env_get_readonly(EnvObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->readonly);
}

static PyGetSetDef env_getset[] = {
    {"readonly", (getter)env_get_readonly, NULL, "True if opened with readonly=True.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef env_methods[] = {
    {"begin", (PyCFunction)(void (*)(void))env_begin, METH_FK,
     "begin(db=None, parent=None, write=False, buffers=False) -> Transaction\n\n"
     "Start a transaction. A write transaction waits (GIL released) for the writer lock."},
    {"open_db", (PyCFunction)(void (*)(void))env_open_db, METH_FK,
     "open_db(key=None, txn=None, reverse_key=False, dupsort=False, create=True, "
     "integerkey=False, integerdup=False, dupfixed=False) -> _Database\n\n"
     "Open (and by default create) a named database; None is the main database."},
    {"dbs", (PyCFunction)(void (*)(void))env_dbs, METH_FK,
     "dbs(txn=None) -> list[bytes]\n\nNames of the named databases."},
    {"close", (PyCFunction)env_close, METH_NOARGS,
     "close()\n\nClose the environment, aborting its transactions. Idempotent. The "
     "engine handle is released once no buffers=True value refers to the map."},
    {"set_mapsize", (PyCFunction)env_set_mapsize, METH_O,
     "set_mapsize(map_size)\n\nResize the map; aborts open read transactions. Refused "
     "while a write transaction or buffers=True values are alive."},
    {"copy", (PyCFunction)(void (*)(void))env_copy, METH_FK,
     "copy(path, compact=False, txn=None)\n\nCopy the environment into directory path."},
    {"copyfd", (PyCFunction)(void (*)(void))env_copyfd, METH_FK,
     "copyfd(fd, compact=False, txn=None)\n\nCopy the environment to a file descriptor."},
    {"sync", (PyCFunction)(void (*)(void))env_sync, METH_FK,
     "sync(force=False)\n\nFlush the data buffers to disk."},
    {"stat", (PyCFunction)env_stat, METH_NOARGS, "stat() -> dict\n\nStatistics of the main database."},
    {"info", (PyCFunction)env_info, METH_NOARGS, "info() -> dict\n\nEnvironment information."},
    {"flags", (PyCFunction)env_flags, METH_NOARGS, "flags() -> dict\n\nThe open flags."},
    {"path", (PyCFunction)env_path, METH_NOARGS, "path() -> str\n\nThe path given at open."},
    {"max_key_size", (PyCFunction)env_max_key_size, METH_NOARGS,
     "max_key_size() -> int\n\nLargest key (and dupsort value) size in bytes."},
    {"max_readers", (PyCFunction)env_max_readers, METH_NOARGS,
     "max_readers() -> int\n\nSize of the reader table."},
    {"readers", (PyCFunction)(void (*)(void))env_readers, METH_FK,
     "readers(detail=False) -> str | list\n\nThe reader table, as text (mdb_reader_list's), "
     "or with detail=True a list of dicts: pid, thread, txnid (None when idle), age (txns "
     "committed since the snapshot) and pages_held (freed pages it keeps from reuse)."},
    {"reader_check", (PyCFunction)env_reader_check, METH_NOARGS,
     "reader_check() -> int\n\nClear stale reader slots; returns how many were cleared."},
    {"check", (PyCFunction)env_check_method, METH_NOARGS,
     "check() -> dict\n\nRun the mdb core's structural checker (mdb core builds only)."},
    {"freelist", (PyCFunction)env_freelist, METH_NOARGS,
     "freelist() -> dict\n\nThe free list of the current snapshot, read by the mdb core's "
     "checker walker (mdb core builds only): the free DB's depth, branch_pages, leaf_pages, "
     "overflow_pages, entries; free_pages; txns [{txnid, pages}] in key order."},
    {"lib_version", (PyCFunction)env_lib_version, METH_NOARGS,
     "lib_version() -> tuple\n\n(major, minor, patch) of the engine this environment uses."},
    {"__enter__", (PyCFunction)env_enter, METH_NOARGS, "Return self."},
    {"__exit__", (PyCFunction)env_exit, METH_VARARGS, "Close the environment."},
    {NULL, NULL, 0, NULL}};

PyTypeObject MdbEnv_Type = {
    /* no module prefix, as py-lmdb's C extension: its suite tells backends apart by it */
    MDB_TYPE_HEAD("Environment", EnvObject, env_dealloc),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_weaklistoffset = offsetof(EnvObject, weakreflist),
    .tp_methods = env_methods,
    .tp_getset = env_getset,
    .tp_init = (initproc)env_init,
    .tp_new = env_new,
    .tp_doc = "Environment(path, map_size=10485760, subdir=True, readonly=False, "
              "metasync=True, sync=True, map_async=False, mode=0o755, create=True, "
              "readahead=True, writemap=False, meminit=True, max_readers=126, max_dbs=0, "
              "max_spare_txns=0, lock=True, max_map_size=None)\n\nAn open environment (directory or file). "
              "mdb.open() is an alias.",
};
