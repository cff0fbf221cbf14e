/*
 * test_dupcursors.c -- cursors parked on a (key, duplicate) pair of a DUPSORT or
 * DUPFIXED database stay on that pair while other cursors and mdb_put/mdb_del add and
 * remove duplicates around it: sub-page growth, the sub-page -> sub-DB conversion,
 * sub-DB splits and merges.  After every write each parked cursor must still read its
 * pair with GET_CURRENT, and NEXT_DUP / PREV_DUP from it must give the model's
 * neighbours.  Parked pairs are never deleted (what a cursor shows after its own item is
 * deleted by someone else is covered by test_cursors for plain trees).
 *   test_dupcursors DIR [seed] [ops]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbtest.h"

#define NKEYS 6
#define MAXV 1500 /* values per key: far past a sub-page at 4 KiB pages */
#define NPARK 4

static unsigned long long rng = 1;
static unsigned rnd(unsigned n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng >> 33) % n);
}

/* One database under test and its model: per key, the sorted list of value numbers. */
typedef struct {
    const char *name;
    unsigned flags;
    MDB_dbi dbi;
    unsigned vals[NKEYS][MAXV];
    unsigned nvals[NKEYS];
} dbm;

typedef struct {
    int used;
    unsigned key, val;
    MDB_cursor *c;
} parked;

static char kbuf[16];
static MDB_val key_of(unsigned k)
{
    int n = snprintf(kbuf, sizeof kbuf, "key%02u", k);
    return (MDB_val){(size_t)n, kbuf};
}
/* DUPFIXED values are 8 bytes; plain DUPSORT values vary in length (but sort by number). */
static MDB_val val_of(const dbm *d, unsigned v, char *buf)
{
    if (d->flags & MDB_DUPFIXED) {
        snprintf(buf, 16, "%08u", v);
        return (MDB_val){8, buf};
    }
    int n = snprintf(buf, 16, "v%06u%.*s", v, (int)(v % 7), "xxxxxxx");
    return (MDB_val){(size_t)n, buf};
}
/* The number a value encodes; stored values carry no terminator, so copy first. */
static unsigned num_of(const MDB_val *v)
{
    char b[16];
    size_t n = v->mv_size < sizeof b - 1 ? v->mv_size : sizeof b - 1;
    memcpy(b, v->mv_data, n);
    b[n] = 0;
    return (unsigned)strtoul(b[0] == 'v' ? b + 1 : b, NULL, 10);
}

static int model_find(const dbm *d, unsigned k, unsigned v, unsigned *at)
{
    unsigned lo = 0, hi = d->nvals[k];
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (d->vals[k][mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return lo < d->nvals[k] && d->vals[k][lo] == v;
}

static int is_parked(const parked *p, unsigned k, unsigned v)
{
    for (int i = 0; i < NPARK; i++)
        if (p[i].used && p[i].key == k && p[i].val == v)
            return 1;
    return 0;
}

/* Every parked cursor is on its pair, and its dup neighbours match the model. */
static void verify(const dbm *d, parked *p, long step)
{
    for (int i = 0; i < NPARK; i++) {
        if (!p[i].used)
            continue;
        MDB_val k, v;
        char want[16];
        CHECK(mdb_cursor_get(p[i].c, &k, &v, MDB_GET_CURRENT));
        MDB_val wk = key_of(p[i].key), wv = val_of(d, p[i].val, want);
        if (k.mv_size != wk.mv_size || memcmp(k.mv_data, wk.mv_data, k.mv_size) ||
            v.mv_size != wv.mv_size || memcmp(v.mv_data, wv.mv_data, v.mv_size))
            FAIL("%s step %ld: cursor %d left (key%02u, %u), now on (%.*s, %.*s)", d->name, step,
                 i, p[i].key, p[i].val, (int)k.mv_size, (char *)k.mv_data, (int)v.mv_size,
                 (char *)v.mv_data);
        unsigned at;
        if (!model_find(d, p[i].key, p[i].val, &at))
            FAIL("%s step %ld: parked pair missing from the model", d->name, step);
        int rc = mdb_cursor_get(p[i].c, &k, &v, MDB_NEXT_DUP);
        if (at + 1 < d->nvals[p[i].key]) {
            if (rc || num_of(&v) != d->vals[p[i].key][at + 1])
                FAIL("%s step %ld: NEXT_DUP from (key%02u, %u) gave rc %d value %u, want %u",
                     d->name, step, p[i].key, p[i].val, rc, rc ? 0 : num_of(&v),
                     d->vals[p[i].key][at + 1]);
            CHECK(mdb_cursor_get(p[i].c, &k, &v, MDB_PREV_DUP));
        } else if (rc != MDB_NOTFOUND) {
            FAIL("%s step %ld: NEXT_DUP past the last dup gave rc %d", d->name, step, rc);
        }
        rc = mdb_cursor_get(p[i].c, &k, &v, MDB_PREV_DUP);
        if (at > 0) {
            if (rc || num_of(&v) != d->vals[p[i].key][at - 1])
                FAIL("%s step %ld: PREV_DUP from (key%02u, %u) gave rc %d value %u, want %u",
                     d->name, step, p[i].key, p[i].val, rc, rc ? 0 : num_of(&v),
                     d->vals[p[i].key][at - 1]);
            CHECK(mdb_cursor_get(p[i].c, &k, &v, MDB_NEXT_DUP));
        } else if (rc != MDB_NOTFOUND) {
            FAIL("%s step %ld: PREV_DUP before the first dup gave rc %d", d->name, step, rc);
        }
        /* a failed move must not lose the position: re-park exactly, then re-check */
        MDB_val pk = key_of(p[i].key), pv = val_of(d, p[i].val, want);
        CHECK(mdb_cursor_get(p[i].c, &pk, &pv, MDB_GET_BOTH));
    }
}

static void park(const dbm *d, parked *p, int i)
{
    unsigned k = rnd(NKEYS);
    if (!d->nvals[k]) {
        p[i].used = 0;
        return;
    }
    unsigned v = d->vals[k][rnd(d->nvals[k])];
    char b[16];
    MDB_val mk = key_of(k), mv = val_of(d, v, b);
    CHECK(mdb_cursor_get(p[i].c, &mk, &mv, MDB_GET_BOTH));
    p[i].used = 1, p[i].key = k, p[i].val = v;
}

static long run_db(MDB_env *env, dbm *d, long ops)
{
    long conversions = 0;
    long step = 0;
    while (step < ops) {
        MDB_txn *txn;
        MDB_cursor *writer;
        parked p[NPARK];
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        CHECK(mdb_cursor_open(txn, d->dbi, &writer));
        for (int i = 0; i < NPARK; i++) {
            CHECK(mdb_cursor_open(txn, d->dbi, &p[i].c));
            park(d, p, i);
        }
        for (int n = 0; n < 400 && step < ops; n++, step++) {
            unsigned k = rnd(NKEYS), v = rnd(100000), at;
            char b[16];
            MDB_val mk = key_of(k), mv = val_of(d, v, b);
            /* mostly inserts until a key is big, then a mix that keeps it big */
            int insert = d->nvals[k] < 200 || rnd(100) < 55;
            if (insert && d->nvals[k] < MAXV) {
                int through_cursor = rnd(2);
                int rc = through_cursor ? mdb_cursor_put(writer, &mk, &mv, MDB_NODUPDATA)
                                        : mdb_put(txn, d->dbi, &mk, &mv, MDB_NODUPDATA);
                int had = model_find(d, k, v, &at);
                if (had ? rc != MDB_KEYEXIST : rc != 0)
                    FAIL("%s step %ld: put (key%02u, %u) rc %d, model had it: %d", d->name,
                         step, k, v, rc, had);
                if (!had) {
                    memmove(&d->vals[k][at + 1], &d->vals[k][at],
                            (d->nvals[k] - at) * sizeof(unsigned));
                    d->vals[k][at] = v;
                    if (++d->nvals[k] == 150)
                        conversions++;
                }
            } else if (d->nvals[k]) {
                unsigned idx = rnd(d->nvals[k]);
                v = d->vals[k][idx];
                if (is_parked(p, k, v))
                    continue;
                mv = val_of(d, v, b);
                if (rnd(2)) {
                    CHECK(mdb_del(txn, d->dbi, &mk, &mv));
                } else {
                    CHECK(mdb_cursor_get(writer, &mk, &mv, MDB_GET_BOTH));
                    CHECK(mdb_cursor_del(writer, 0));
                }
                memmove(&d->vals[k][idx], &d->vals[k][idx + 1],
                        (d->nvals[k] - idx - 1) * sizeof(unsigned));
                d->nvals[k]--;
            }
            verify(d, p, step);
            if (rnd(50) == 0)
                park(d, p, (int)rnd(NPARK));
        }
        CHECK(mdb_txn_commit(txn)); /* a write txn's cursors go with it */
    }
    return conversions;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_dupcursors DIR [seed] [ops]\n");
        return 2;
    }
    rng = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    long ops = argc > 3 ? atol(argv[3]) : 20000;
    mkdir(argv[1], 0755);
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_set_mapsize(env, 256u << 20));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    static dbm dbs[2] = {{.name = "dups", .flags = MDB_DUPSORT},
                         {.name = "fixed", .flags = MDB_DUPSORT | MDB_DUPFIXED}};
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int i = 0; i < 2; i++)
        CHECK(mdb_dbi_open(txn, dbs[i].name, dbs[i].flags | MDB_CREATE, &dbs[i].dbi));
    CHECK(mdb_txn_commit(txn));
    for (int i = 0; i < 2; i++) {
        long conv = run_db(env, &dbs[i], ops);
        unsigned biggest = 0;
        for (int k = 0; k < NKEYS; k++)
            if (dbs[i].nvals[k] > biggest)
                biggest = dbs[i].nvals[k];
        if (biggest < 400)
            FAIL("%s: no key grew past a sub-page (largest %u values)", dbs[i].name, biggest);
        printf("dupcursors %s: %ld writes, %ld keys crossed 150 values, largest key %u values: "
               "parked cursors stayed on their pairs\n",
               dbs[i].name, ops, conv, biggest);
    }
    mdb_env_close(env);
    return 0;
}
