/*
 * lmdbtrace.c -- a diagnostic LD_PRELOAD shim: logs the data calls back-mdb makes into
 * LMDB (dbi_open, put/del/get, cursor get/put/del/count) with their arguments and return
 * codes, and forwards them to the next library in the preload list (RTLD_NEXT).
 *
 *   cc -shared -fPIC -O1 -o lmdbtrace.so lmdbtrace.c -ldl
 *   LMDBTRACE=/tmp/trace.txt LD_PRELOAD="$PWD/lmdbtrace.so /path/to/engine.so" slapadd ...
 *
 * With Debian's liblmdb.so.0 (0.9.24) as the engine, LMDBTRACE_VERSION=0.9.29 makes
 * mdb_version() report 0.9.29 so that back-mdb's version gate lets it load; the trace of
 * a stock engine can then be diffed with the trace of ours.  Not a test: a debugging aid.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lmdb.h>

static FILE *out;

static FILE *logf_(void)
{
    if (!out) {
        const char *p = getenv("LMDBTRACE");
        out = p ? fopen(p, "a") : stderr;
        if (!out)
            out = stderr;
        setvbuf(out, NULL, _IOLBF, 0);
    }
    return out;
}

static void val(const char *tag, const MDB_val *v)
{
    FILE *f = logf_();
    if (!v || !v->mv_data) {
        fprintf(f, " %s=-", tag);
        return;
    }
    fprintf(f, " %s=%zu:", tag, v->mv_size);
    for (size_t i = 0; i < v->mv_size && i < 64; i++)
        fprintf(f, "%02x", ((unsigned char *)v->mv_data)[i]);
}

#define NEXT(name) static __typeof__(name) *real; if (!real) real = dlsym(RTLD_NEXT, #name)

char *mdb_version(int *ma, int *mi, int *pa)
{
    NEXT(mdb_version);
    char *s = real(ma, mi, pa);
    const char *spoof = getenv("LMDBTRACE_VERSION");
    if (spoof && ma && mi && pa)
        sscanf(spoof, "%d.%d.%d", ma, mi, pa);
    return s;
}

int mdb_dbi_open(MDB_txn *t, const char *name, unsigned flags, MDB_dbi *dbi)
{
    NEXT(mdb_dbi_open);
    int rc = real(t, name, flags, dbi);
    fprintf(logf_(), "dbi_open %s fl=%x -> dbi=%u rc=%d\n", name ? name : "(main)", flags,
            rc ? 0 : *dbi, rc);
    return rc;
}

int mdb_put(MDB_txn *t, MDB_dbi d, MDB_val *k, MDB_val *v, unsigned fl)
{
    NEXT(mdb_put);
    fprintf(logf_(), "put dbi=%u fl=%x", d, fl);
    val("k", k);
    val("v", v);
    int rc = real(t, d, k, v, fl);
    fprintf(logf_(), " rc=%d\n", rc);
    return rc;
}

int mdb_del(MDB_txn *t, MDB_dbi d, MDB_val *k, MDB_val *v)
{
    NEXT(mdb_del);
    fprintf(logf_(), "del dbi=%u", d);
    val("k", k);
    val("v", v);
    int rc = real(t, d, k, v);
    fprintf(logf_(), " rc=%d\n", rc);
    return rc;
}

int mdb_cursor_get(MDB_cursor *c, MDB_val *k, MDB_val *v, MDB_cursor_op op)
{
    NEXT(mdb_cursor_get);
    fprintf(logf_(), "cget dbi=%u op=%d", mdb_cursor_dbi(c), (int)op);
    /* only the ops that read their key (and value) arguments: the others may pass
     * uninitialised MDB_vals */
    if (op == MDB_SET || op == MDB_SET_KEY || op == MDB_SET_RANGE || op == MDB_GET_BOTH ||
        op == MDB_GET_BOTH_RANGE)
        val("k", k);
    if (op == MDB_GET_BOTH || op == MDB_GET_BOTH_RANGE)
        val("v", v);
    int rc = real(c, k, v, op);
    fprintf(logf_(), " rc=%d", rc);
    if (!rc) {
        val("K", k);
        val("V", v);
    }
    fputc('\n', logf_());
    return rc;
}

int mdb_cursor_put(MDB_cursor *c, MDB_val *k, MDB_val *v, unsigned fl)
{
    NEXT(mdb_cursor_put);
    fprintf(logf_(), "cput dbi=%u fl=%x", mdb_cursor_dbi(c), fl);
    val("k", k);
    val("v", v);
    int rc = real(c, k, v, fl);
    fprintf(logf_(), " rc=%d\n", rc);
    return rc;
}

int mdb_cursor_del(MDB_cursor *c, unsigned fl)
{
    NEXT(mdb_cursor_del);
    int rc = real(c, fl);
    fprintf(logf_(), "cdel dbi=%u fl=%x rc=%d\n", mdb_cursor_dbi(c), fl, rc);
    return rc;
}

int mdb_cursor_count(MDB_cursor *c, size_t *n)
{
    NEXT(mdb_cursor_count);
    int rc = real(c, n);
    fprintf(logf_(), "ccount dbi=%u rc=%d n=%zu\n", mdb_cursor_dbi(c), rc, rc ? 0 : *n);
    return rc;
}
