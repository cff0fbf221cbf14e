/*
 * test_btree.c -- randomized puts/gets/dels on the main DB and named DBs, checked against
 * an in-memory model after every commit and after reopening.  Usage:
 *   test_btree DIR [seed] [ops] [writemap|nosync|nometasync|notls|nolock|spill]
 * "spill" lowers the dirty-page limit to 256 (mdbcore.h), so big txns spill (spill.c).
 * Aborted txns roll the model back.  Values range from 0 bytes to overflow sizes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

typedef struct item {
    char *k, *v;
    size_t kl, vl;
} item;
typedef struct model {
    item *it;
    size_t n, cap;
} model;

static unsigned long long rng;
static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

static int kcmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = memcmp(a, b, n);
    if (c)
        return c;
    return al < bl ? -1 : al > bl;
}

static size_t m_find(model *m, const char *k, size_t kl, int *found)
{
    size_t lo = 0, hi = m->n;
    *found = 0;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = kcmp(k, kl, m->it[mid].k, m->it[mid].kl);
        if (!c) {
            *found = 1;
            return mid;
        }
        if (c > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void m_put(model *m, const char *k, size_t kl, const char *v, size_t vl)
{
    int f;
    size_t i = m_find(m, k, kl, &f);
    if (f) {
        free(m->it[i].v);
    } else {
        if (m->n == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 64;
            m->it = realloc(m->it, m->cap * sizeof(item));
        }
        memmove(&m->it[i + 1], &m->it[i], (m->n - i) * sizeof(item));
        m->n++;
        m->it[i].k = malloc(kl);
        memcpy(m->it[i].k, k, kl);
        m->it[i].kl = kl;
    }
    m->it[i].v = malloc(vl ? vl : 1);
    memcpy(m->it[i].v, v, vl);
    m->it[i].vl = vl;
}

static int m_del(model *m, const char *k, size_t kl)
{
    int f;
    size_t i = m_find(m, k, kl, &f);
    if (!f)
        return 0;
    free(m->it[i].k);
    free(m->it[i].v);
    memmove(&m->it[i], &m->it[i + 1], (m->n - i - 1) * sizeof(item));
    m->n--;
    return 1;
}

static void m_copy(model *dst, const model *src)
{
    for (size_t i = 0; i < dst->n; i++) {
        free(dst->it[i].k);
        free(dst->it[i].v);
    }
    dst->n = 0;
    for (size_t i = 0; i < src->n; i++)
        m_put(dst, src->it[i].k, src->it[i].kl, src->it[i].v, src->it[i].vl);
}

static void verify(MDB_txn *txn, MDB_dbi dbi, model *m, const char *what)
{
    MDB_cursor *c;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    MDB_val k, v;
    size_t i = 0;
    int rc;
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
        if (i >= m->n)
            FAIL("%s: extra key", what);
        if (kcmp(k.mv_data, k.mv_size, m->it[i].k, m->it[i].kl))
            FAIL("%s: key mismatch at %zu dbi %u: got %.*s want %.*s", what, i, dbi, (int)k.mv_size, (char*)k.mv_data, (int)m->it[i].kl, m->it[i].k);
        if (v.mv_size != m->it[i].vl || memcmp(v.mv_data, m->it[i].v, v.mv_size))
            FAIL("%s: value mismatch at %zu (%zu vs %zu)", what, i, v.mv_size, m->it[i].vl);
        i++;
    }
    if (rc != MDB_NOTFOUND)
        FAIL("%s: scan: %s", what, mdb_strerror(rc));
    if (i != m->n)
        FAIL("%s: scan saw %zu of %zu", what, i, m->n);
    /* backwards (PREV after running off the end would skip the last item, as in LMDB) */
    i = m->n;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_LAST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_PREV)) {
        if (i == 0)
            FAIL("%s: extra key backwards", what);
        i--;
        if (kcmp(k.mv_data, k.mv_size, m->it[i].k, m->it[i].kl))
            FAIL("%s: back key mismatch at %zu", what, i);
    }
    mdb_cursor_close(c);
    /* a few point lookups */
    for (int j = 0; j < 50 && m->n; j++) {
        item *it = &m->it[rnd() % m->n];
        MDB_val kk = {it->kl, it->k};
        CHECK(mdb_get(txn, dbi, &kk, &v));
        if (v.mv_size != it->vl || memcmp(v.mv_data, it->v, v.mv_size))
            FAIL("%s: get mismatch", what);
    }
    MDB_stat st;
    CHECK(mdb_stat(txn, dbi, &st));
    if (st.ms_entries != m->n)
        FAIL("%s: ms_entries %zu != %zu", what, st.ms_entries, m->n);
}

#define NDB 3
static const char *dbnames[NDB] = {"gamma", "alpha", "beta"};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [seed] [ops]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    unsigned seed = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    long ops = argc > 3 ? atol(argv[3]) : 20000;
    unsigned eflags = 0;
    if (argc > 4) {
        const char *f = argv[4];
        eflags = !strcmp(f, "writemap")     ? MDB_WRITEMAP
                 : !strcmp(f, "nosync")     ? MDB_NOSYNC
                 : !strcmp(f, "nometasync") ? MDB_NOMETASYNC
                 : !strcmp(f, "notls")      ? MDB_NOTLS
                 : !strcmp(f, "nolock")     ? MDB_NOLOCK
                                            : 0;
    }
    rng = seed;
    mkdir(dir, 0755);

    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 1ul << 30));
    CHECK(mdb_env_set_maxdbs(env, 8));
    int spill = argc > 4 && !strcmp(argv[4], "spill");
    if (spill)
        CHECK(mdbcore_env_set_dirty_limit(env, 256));
    CHECK(mdb_env_open(env, dir, eflags, 0644));

    model live[NDB], saved[NDB];
    memset(live, 0, sizeof(live));
    memset(saved, 0, sizeof(saved));
    MDB_dbi dbi[NDB];
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int d = 0; d < NDB; d++)
        CHECK(mdb_dbi_open(txn, dbnames[d], MDB_CREATE, &dbi[d]));
    CHECK(mdb_txn_commit(txn));

    char key[600], *val = malloc(5 << 20);
    for (size_t i = 0; i < (5u << 20); i++)
        val[i] = (char)(i * 7 + 3);
    long done = 0;
    int commits = 0, aborts = 0;
    while (done < ops) {
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        int n = spill ? 400 + rnd() % 1200 : 1 + rnd() % 400; /* spill: txns past the limit */
        for (int j = 0; j < n; j++, done++) {
            int d = rnd() % NDB;
            unsigned r = rnd() % 100;
            size_t kl = 1 + rnd() % ((rnd() % 10) ? 24 : 511);
            unsigned kv = rnd() % 3000;
            snprintf(key, sizeof(key), "k%05u", kv);
            size_t base = strlen(key);
            for (size_t q = base; q < kl; q++)
                key[q] = (char)('a' + (kv + q) % 26);
            if (kl < base)
                kl = base;
            MDB_val k = {kl, key}, v;
            if (r < 60) {
                size_t vl;
                unsigned s = rnd() % 100;
                if (s < 70)
                    vl = rnd() % 200;
                else if (s < 95)
                    vl = rnd() % 5000;
                else if (s < 99)
                    vl = rnd() % 100000;
                else
                    vl = rnd() % (4u << 20);
                char *src = val + rnd() % 1000;
                v.mv_size = vl;
                v.mv_data = src;
                unsigned fl = (rnd() % 10 == 0) ? MDB_RESERVE : 0;
                CHECK(mdb_put(txn, dbi[d], &k, &v, fl));
                if (fl)
                    memcpy(v.mv_data, src, vl);
                m_put(&live[d], key, kl, src, vl);
            } else if (r < 90) {
                int rc = mdb_del(txn, dbi[d], &k, NULL);
                int had = m_del(&live[d], key, kl);
                if ((rc == 0) != had)
                    FAIL("del rc %d vs model %d", rc, had);
                if (rc && rc != MDB_NOTFOUND)
                    CHECK(rc);
            } else {
                int rc = mdb_get(txn, dbi[d], &k, &v);
                int f;
                size_t i = m_find(&live[d], key, kl, &f);
                if ((rc == 0) != f)
                    FAIL("get rc %d vs model %d", rc, f);
                if (f && (v.mv_size != live[d].it[i].vl || memcmp(v.mv_data, live[d].it[i].v, v.mv_size)))
                    FAIL("get value mismatch");
            }
        }
        if (rnd() % 8 == 0) {
            mdb_txn_abort(txn);
            for (int d = 0; d < NDB; d++)
                m_copy(&live[d], &saved[d]);
            aborts++;
        } else {
            for (int d = 0; d < NDB; d++)
                verify(txn, dbi[d], &live[d], "in-txn");
            CHECK(mdb_txn_commit(txn));
            for (int d = 0; d < NDB; d++)
                m_copy(&saved[d], &live[d]);
            commits++;
            CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
            for (int d = 0; d < NDB; d++)
                verify(txn, dbi[d], &live[d], "after-commit");
            mdb_txn_abort(txn);
        }
    }
    uint64_t spilled = mdbcore_env_spilled_pages(env);
    mdb_env_close(env);

    /* reopen and verify everything again */
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 8));
    CHECK(mdb_env_open(env, dir, MDB_RDONLY | (eflags & MDB_NOLOCK), 0644));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    for (int d = 0; d < NDB; d++) {
        CHECK(mdb_dbi_open(txn, dbnames[d], 0, &dbi[d]));
        verify(txn, dbi[d], &saved[d], "reopen");
    }
    mdb_txn_abort(txn);
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    mdb_env_close(env);
    if (spill && !spilled)
        FAIL("spill mode: no txn ever spilled");
    printf("seed %u: %ld ops, %d commits, %d aborts, keys %zu/%zu/%zu, last_pgno %zu, "
           "%llu pages spilled: OK\n",
           seed, done, commits, aborts, saved[0].n, saved[1].n, saved[2].n, info.me_last_pgno,
           (unsigned long long)spilled);
    return 0;
}
