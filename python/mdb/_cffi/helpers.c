/*
 * helpers.c -- see helpers.h.  Compiled into mdb._cffi_lib next to the
 * cffi-generated source and linked to the same engine as mdb._cext.
 */
#include "helpers.h"

#include <string.h>
#include <time.h>

static void val_out(mdbpy_val *out, const MDB_val *v)
{
    out->mv_size = v->mv_size;
    out->mv_data = (char *)v->mv_data;
}

int mdbpy_get(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, mdbpy_val *out)
{
    MDB_val key = {klen, (void *)k}, val;
    int rc = mdb_get(txn, dbi, &key, &val);
    if (rc == 0)
        val_out(out, &val);
    return rc;
}

/* The size checks the Python side reports with its own message (BadValsizeError). */
static int check_sizes(MDB_txn *txn, MDB_dbi dbi, size_t klen, size_t vlen)
{
    size_t limit = (size_t)mdb_env_get_maxkeysize(mdb_txn_env(txn));
    if (klen == 0 || klen > limit)
        return MDBPY_BADKEY;
    if (vlen > limit) {
        unsigned int flags = 0;
        if (mdb_dbi_flags(txn, dbi, &flags) == 0 && (flags & MDB_DUPSORT))
            return MDBPY_BADVAL;
    }
    return 0;
}

int mdbpy_put(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, unsigned int flags)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    /* the engine's checks come first (read-only, bad txn, ...), as in py-lmdb; the sizes
     * are told apart only for the message */
    int rc = mdb_put(txn, dbi, &key, &val, flags);
    if (rc == MDB_BAD_VALSIZE) {
        int why = check_sizes(txn, dbi, klen, vlen);
        return why ? why : rc;
    }
    return rc;
}

int mdbpy_del(MDB_txn *txn, MDB_dbi dbi, const char *k, size_t klen, const char *v,
              size_t vlen, int with_value)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    return mdb_del(txn, dbi, &key, with_value ? &val : NULL);
}

int mdbpy_cursor_get(MDB_cursor *cur, int op, const char *k, size_t klen, const char *v,
                     size_t vlen, mdbpy_val *ko, mdbpy_val *vo)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    int rc = mdb_cursor_get(cur, &key, &val, (MDB_cursor_op)op);
    if (rc == 0 && (op == MDB_FIRST_DUP || op == MDB_LAST_DUP || op == MDB_GET_BOTH ||
                    op == MDB_GET_BOTH_RANGE || op == MDB_SET))
        rc = mdb_cursor_get(cur, &key, &val, MDB_GET_CURRENT);
    if (rc == 0) {
        val_out(ko, &key);
        val_out(vo, &val);
    }
    return rc;
}

int mdbpy_cursor_put(MDB_cursor *cur, const char *k, size_t klen, const char *v, size_t vlen,
                     unsigned int flags)
{
    MDB_val key = {klen, (void *)k}, val = {vlen, (void *)v};
    int rc = mdb_cursor_put(cur, &key, &val, flags);
    if (rc == MDB_BAD_VALSIZE) {
        int why = check_sizes(mdb_cursor_txn(cur), mdb_cursor_dbi(cur), klen, vlen);
        return why ? why : rc;
    }
    return rc;
}

/* -- the guarded hot calls (see helpers.h) */

/* A gate (see helpers.h): bit 0 open, 2 per call in flight. */
static int gate_enter(unsigned int *g)
{
    if (__atomic_fetch_add(g, 2, __ATOMIC_SEQ_CST) & 1)
        return 1;
    __atomic_fetch_sub(g, 2, __ATOMIC_SEQ_CST);
    return 0;
}

static void gate_leave(unsigned int *g)
{
    __atomic_fetch_sub(g, 2, __ATOMIC_SEQ_CST);
}

static void txn_leave(mdbpy_txnst *t)
{
    for (mdbpy_txnst *p = t; p; p = p->parent)
        gate_leave(&p->gate);
}

/* Count the call on t and its ancestors, then check the environment (in that order: see
 * helpers.h); 0, counted nowhere, if a gate is shut. */
static int txn_enter(mdbpy_txnst *t)
{
    mdbpy_txnst *p;
    for (p = t; p; p = p->parent) {
        if (!gate_enter(&p->gate)) {
            for (mdbpy_txnst *q = t; q != p; q = q->parent)
                gate_leave(&q->gate);
            return 0;
        }
    }
    if (__atomic_load_n(&t->env->gate, __ATOMIC_SEQ_CST) & 1)
        return 1;
    txn_leave(t);
    return 0;
}

/* Fill in t for txn and open its gate (the last store: see helpers.h). */
static void txnst_init(mdbpy_txnst *t, MDB_txn *txn, MDB_dbi dbi, mdbpy_txnst *parent,
                       mdbpy_envst *envst)
{
    t->rc = 0;
    t->dbi = dbi;
    t->txn = txn;
    t->parent = parent;
    t->env = envst;
    __atomic_store_n(&t->gate, 1u, __ATOMIC_SEQ_CST);
}

int mdbpy_tbegin(mdbpy_txnst *t, MDB_env *env, mdbpy_txnst *parent, MDB_dbi dbi,
                 mdbpy_envst *envst)
{
    MDB_txn *txn;
    t->gate = 0;
    int rc = mdb_txn_begin(env, parent ? parent->txn : NULL, 0, &txn);
    if (!rc)
        txnst_init(t, txn, dbi, parent, envst);
    return rc;
}

int mdbpy_tbegin_read(mdbpy_txnst *t, MDB_env *env, MDB_txn *spare, MDB_dbi dbi,
                      mdbpy_envst *envst)
{
    MDB_txn *txn = spare;
    t->gate = 0;
    if (txn && mdb_txn_renew(txn)) {
        mdb_txn_abort(txn);
        txn = NULL;
    }
    if (!txn) {
        int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
        if (rc)
            return rc;
    }
    txnst_init(t, txn, dbi, NULL, envst);
    return 0;
}

/* (declared here: helpers.c is built without Python.h) */
extern int PyGILState_Check(void);

int mdbpy_keeps_gil(void)
{
    return PyGILState_Check();
}

int mdbpy_gil_held(void)
{
    return PyGILState_Check();
}

int mdbpy_tend_read(mdbpy_txnst *t, int if_idle, int keep)
{
    if (if_idle) {
        if (mdbpy_close(t, 1))
            return 1;
    } else {
        /* (calls in flight run without the GIL and end by themselves; rare and short) */
        while (mdbpy_close(t, 0)) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    if (keep)
        mdb_txn_reset(t->txn);
    else
        mdb_txn_abort(t->txn);
    return 0;
}

void mdbpy_cinit(mdbpy_curst *c, MDB_cursor *cur, mdbpy_txnst *txn)
{
    c->rc = 0;
    c->cur = cur;
    c->txn = txn;
    __atomic_store_n(&c->gate, 1u, __ATOMIC_SEQ_CST);
}

int mdbpy_close(void *st, int if_idle)
{
    unsigned int *g = st;
    if (if_idle) {
        unsigned int open_idle = 1;
        return !__atomic_compare_exchange_n(g, &open_idle, 0, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST);
    }
    return (int)(__atomic_and_fetch(g, ~1u, __ATOMIC_SEQ_CST) >> 1);
}

void mdbpy_open(void *st)
{
    __atomic_fetch_or((unsigned int *)st, 1u, __ATOMIC_SEQ_CST);
}

long long mdbpy_tget(mdbpy_txnst *t, const char *k, size_t klen)
{
    if (!txn_enter(t))
        return MDBPY_STALE;
    MDB_val key = {klen, (void *)k}, val;
    int rc = mdb_get(t->txn, t->dbi, &key, &val);
    long long r;
    if (rc == 0) {
        r = MDBPY_OUT;
        if (val.mv_size <= sizeof t->buf) {
            memcpy(t->buf, val.mv_data, val.mv_size);
            r = (long long)val.mv_size;
        }
    } else if (rc == MDB_NOTFOUND) {
        r = rc;
    } else {
        t->rc = rc;
        r = MDBPY_ERR;
    }
    txn_leave(t);
    return r;
}

int mdbpy_tput(mdbpy_txnst *t, const char *k, size_t klen, const char *v, size_t vlen)
{
    if (!txn_enter(t))
        return MDBPY_STALE;
    int rc = mdbpy_put(t->txn, t->dbi, k, klen, v, vlen, 0);
    txn_leave(t);
    return rc;
}

int mdbpy_tdel(mdbpy_txnst *t, const char *k, size_t klen)
{
    if (!txn_enter(t))
        return MDBPY_STALE;
    MDB_val key = {klen, (void *)k};
    int rc = mdb_del(t->txn, t->dbi, &key, NULL);
    txn_leave(t);
    return rc;
}

/* As txn_enter, for a cursor: counted on the cursor first (a close checks it), then on
 * its transactions. */
static int cur_enter(mdbpy_curst *c)
{
    if (!gate_enter(&c->gate))
        return 0;
    if (txn_enter(c->txn))
        return 1;
    gate_leave(&c->gate);
    return 0;
}

static void cur_leave(mdbpy_curst *c)
{
    txn_leave(c->txn);
    gate_leave(&c->gate);
}

/* Copy c's record (c->k, c->v) into c->buf; the packed sizes, or MDBPY_OUT. */
static long long copy_record(mdbpy_curst *c)
{
    size_t kl = c->k.mv_size, vl = c->v.mv_size;
    if (kl > sizeof c->buf || vl > sizeof c->buf - kl)
        return MDBPY_OUT;
    memcpy(c->buf, c->k.mv_data, kl);
    memcpy(c->buf + kl, c->v.mv_data, vl);
    return (long long)kl | (long long)(kl + vl) << 16;
}

static long long read_result(mdbpy_curst *c, int rc)
{
    if (rc == 0)
        return copy_record(c);
    if (rc == MDB_NOTFOUND)
        return rc;
    c->rc = rc;
    return MDBPY_ERR;
}

int mdbpy_cmove(mdbpy_curst *c, int op)
{
    if (!cur_enter(c))
        return MDBPY_STALE;
    int rc = mdbpy_cursor_get(c->cur, op, NULL, 0, NULL, 0, &c->k, &c->v);
    cur_leave(c);
    return rc;
}

long long mdbpy_cread(mdbpy_curst *c, int op)
{
    if (!cur_enter(c))
        return MDBPY_STALE;
    long long r =
        read_result(c, mdbpy_cursor_get(c->cur, op, NULL, 0, NULL, 0, &c->k, &c->v));
    cur_leave(c);
    return r;
}

long long mdbpy_cseek(mdbpy_curst *c, int op, const char *k, size_t klen)
{
    if (!cur_enter(c))
        return MDBPY_STALE;
    long long r = read_result(c, mdbpy_cursor_get(c->cur, op, k, klen, NULL, 0, &c->k, &c->v));
    cur_leave(c);
    return r;
}

int mdbpy_cput(mdbpy_curst *c, const char *k, size_t klen, const char *v, size_t vlen,
               unsigned int flags)
{
    if (!cur_enter(c))
        return MDBPY_STALE;
    int rc = mdbpy_cursor_put(c->cur, k, klen, v, vlen, flags);
    if ((rc == 0 || rc == MDB_KEYEXIST) &&
        mdbpy_cursor_get(c->cur, MDB_GET_CURRENT, NULL, 0, NULL, 0, &c->k, &c->v))
        rc = rc ? MDBPY_LOST_EXIST : MDBPY_LOST;
    cur_leave(c);
    return rc;
}

/* Append "<n>s" to a struct format. */
static char *fmt_size(char *p, size_t n)
{
    char tmp[24];
    int i = 0;
    do {
        tmp[i++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    while (i)
        *p++ = tmp[--i];
    *p++ = 's';
    return p;
}

size_t mdbpy_cursor_batch(MDB_cursor *cur, int op, int max, char *buf, size_t cap, char *fmt,
                          mdbpy_val *big, int *n, int *rc)
{
    MDB_val key, val;
    size_t used = 0;
    char *f = fmt;
    int i = 0, r = 0;
    *f++ = '<';
    for (; i < max; i++) {
        r = mdb_cursor_get(cur, &key, &val, (MDB_cursor_op)op);
        if (r)
            break;
        if (key.mv_size > cap - used || val.mv_size > cap - used - key.mv_size) {
            val_out(&big[0], &key);
            val_out(&big[1], &val);
            r = MDBPY_BIG;
            break;
        }
        memcpy(buf + used, key.mv_data, key.mv_size);
        used += key.mv_size;
        memcpy(buf + used, val.mv_data, val.mv_size);
        used += val.mv_size;
        f = fmt_size(fmt_size(f, key.mv_size), val.mv_size);
    }
    *n = i;
    *rc = r;
    return (size_t)(f - fmt);
}

void mdbpy_prefault(const char *p, size_t n)
{
    volatile char sink = 0;
    for (size_t i = 0; i < n; i += 4096)
        sink ^= p[i];
    if (n)
        sink ^= p[n - 1];
    (void)sink;
}

#if defined(MDB_ENGINE_CORE) && defined(MDB_HAVE_CORE_CHECK)
#include <errno.h>
#include <stdlib.h>

#include "mdbcore.h"

int mdbpy_have_check(void)
{
    return 1;
}

void *mdbpy_check_run(MDB_env *env, int *rc)
{
    mdbcore_check_report *r = calloc(1, sizeof *r);
    if (!r) {
        *rc = ENOMEM;
        return NULL;
    }
    *rc = mdbcore_check_env(env, r);
    return r;
}

/* Numbers in the order of CHECK_NUMS in mdb/_cffi/__init__.py. */
int mdbpy_check_num(void *rp, int i, unsigned long long *out)
{
    mdbcore_check_report *r = rp;
    unsigned long long v[] = {
        r->problems_total, r->psize, r->next_pgno, r->txnid, r->meta_pages,
        r->branch_pages, r->leaf_pages, r->leaf2_pages, r->overflow_pages,
        r->overflow_runs, r->reachable_pages, r->free_pages, r->free_records,
        r->leaked_pages, r->twice_pages, r->free_and_used,
    };
    if (i < 0 || (size_t)i >= sizeof v / sizeof v[0])
        return EINVAL;
    *out = v[i];
    return 0;
}

size_t mdbpy_check_nproblems(void *rp)
{
    return ((mdbcore_check_report *)rp)->nproblems;
}

void mdbpy_check_problem(void *rp, size_t i, unsigned long long *pgno, int *code,
                         const char **db, const char **msg)
{
    mdbcore_check_problem *p = &((mdbcore_check_report *)rp)->problems[i];
    *pgno = p->pgno;
    *code = p->code;
    *db = p->db;
    *msg = p->msg;
}

size_t mdbpy_check_ndbs(void *rp)
{
    return ((mdbcore_check_report *)rp)->ndbs;
}

void mdbpy_check_db(void *rp, size_t i, const char **name, unsigned long long *vals)
{
    mdbcore_check_db *d = &((mdbcore_check_report *)rp)->dbs[i];
    *name = d->name ? d->name : "";
    vals[0] = d->depth;
    vals[1] = d->entries;
    vals[2] = d->branch_pages;
    vals[3] = d->leaf_pages;
    vals[4] = d->overflow_pages;
}

int mdbpy_check_text(void *rp, MDB_msg_func *func, void *ctx)
{
    return mdbcore_check_report_print(rp, func, ctx);
}

void mdbpy_check_free(void *rp)
{
    if (rp) {
        mdbcore_check_report_free(rp);
        free(rp);
    }
}

void *mdbpy_freelist_run(MDB_env *env, int *rc)
{
    mdbcore_freelist *f = calloc(1, sizeof *f);
    if (!f) {
        *rc = ENOMEM;
        return NULL;
    }
    *rc = mdbcore_freelist_env(env, f);
    if (*rc && *rc != MDB_CORRUPTED) {
        mdbcore_freelist_free(f);
        free(f);
        return NULL;
    }
    return f;
}

void mdbpy_freelist_nums(void *fp, unsigned long long *vals)
{
    const db_record *r = &((mdbcore_freelist *)fp)->rec;
    vals[0] = r->depth;
    vals[1] = r->branch_pages;
    vals[2] = r->leaf_pages;
    vals[3] = r->overflow_pages;
    vals[4] = r->entries;
}

size_t mdbpy_freelist_nrecords(void *fp)
{
    return ((mdbcore_freelist *)fp)->nrecords;
}

void mdbpy_freelist_record(void *fp, size_t i, unsigned long long *txnid, size_t *npages,
                           const unsigned long long **pages)
{
    _Static_assert(sizeof(pgno_t) == sizeof(unsigned long long), "pgno_t is 64 bits");
    const mdbcore_free_record *r = &((mdbcore_freelist *)fp)->records[i];
    *txnid = r->txnid;
    *npages = r->npages;
    *pages = (const unsigned long long *)r->pages;
}

void mdbpy_freelist_bad(void *fp, unsigned long long *pgno, const char **msg)
{
    mdbcore_freelist *f = fp;
    *pgno = f->bad_pgno;
    *msg = f->bad_msg;
}

void mdbpy_freelist_free(void *fp)
{
    if (fp) {
        mdbcore_freelist_free(fp);
        free(fp);
    }
}

/* Reader table with ages (mdbcore_reader_info): 5 numbers per slot in use into vals[5 * max]:
 * pid, thread, txnid (2^64-1 when idle), age, pages held (2^64-1: unknown).  *count =
 * slots in use.  flags: MDBCORE_RINFO_*. */
int mdbpy_reader_info(MDB_env *env, unsigned long long *vals, size_t max, size_t *count,
                      unsigned flags)
{
    mdbcore_reader_info *v = max ? calloc(max, sizeof *v) : NULL;
    if (max && !v)
        return ENOMEM;
    int rc = mdbcore_reader_info_list(env, v, max, count, flags);
    for (size_t i = 0; !rc && i < max && i < *count; i++) {
        unsigned long long *o = vals + 5 * i;
        o[0] = v[i].pid;
        o[1] = v[i].tid;
        o[2] = v[i].txnid;
        o[3] = v[i].age;
        o[4] = v[i].pages_held;
    }
    free(v);
    return rc;
}

int mdbpy_meta_status(MDB_env *env, long long *vals, const char **reason)
{
    mdbcore_meta_status st;
    int rc = mdbcore_env_meta_status(env, &st);
    if (rc)
        return rc;
    vals[0] = st.flags;
    vals[1] = st.used_page;
    vals[2] = (long long)st.used_txnid;
    vals[3] = st.damaged_page;
    vals[4] = (long long)st.damaged_txnid;
    *reason = st.damaged_reason;
    return 0;
}

typedef struct load_state {
    mdbpy_refill_fn refill;
    void *handle;
    mdbpy_chunk chunk;
    size_t i, off, count;
    int py_error;
} load_state;

static int load_next(void *ctx, MDB_val *key, MDB_val *data)
{
    load_state *s = ctx;
    while (s->i == s->chunk.n) {
        int r = s->refill(s->handle, &s->chunk);
        if (r == 1)
            return MDB_NOTFOUND;
        if (r != 0) {
            s->py_error = 1;
            return ECANCELED;
        }
        s->i = 0;
        s->off = 0;
    }
    key->mv_size = s->chunk.sizes[2 * s->i];
    key->mv_data = (char *)s->chunk.data + s->off;
    s->off += key->mv_size;
    data->mv_size = s->chunk.sizes[2 * s->i + 1];
    data->mv_data = (char *)s->chunk.data + s->off;
    s->off += data->mv_size;
    s->i++;
    s->count++;
    return 0;
}

int mdbpy_bulk_load(MDB_txn *txn, MDB_dbi dbi, mdbpy_refill_fn refill, void *handle,
                    size_t *count, int *py_error)
{
    load_state s = {refill, handle, {NULL, NULL, 0}, 0, 0, 0, 0};
    int rc = mdbcore_bulk_load(txn, dbi, load_next, &s, 0);
    *count = s.count;
    *py_error = s.py_error;
    return rc;
}

int mdbpy_set_maxsize(MDB_env *env, unsigned long long bytes)
{
    if (bytes > (size_t)-1)
        return EINVAL;
    return mdbcore_env_set_maxsize(env, (size_t)bytes);
}

unsigned long long mdbpy_get_maxsize(MDB_env *env)
{
    return mdbcore_env_get_maxsize(env);
}

unsigned long long mdbpy_get_mapspan(MDB_env *env)
{
    return mdbcore_env_get_mapspan(env);
}

unsigned long long mdbpy_get_mapaddr(MDB_env *env)
{
    return (unsigned long long)(uintptr_t)mdbcore_env_get_mapaddr(env);
}
#else
int mdbpy_have_check(void)
{
    return 0;
}
#endif
