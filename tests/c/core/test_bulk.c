/*
 * test_bulk.c -- bulk inserts and deletes in patterns that empty whole runs of pages:
 * ascending, descending, strided, alternating around the middle, random; on a plain DB
 * and on a DUPSORT DB (50 duplicates per key, so sub-pages and sub-trees empty too).
 * Each phase is one txn; after each commit the structural checker must be clean and a
 * full scan must match the model.  Key and value sizes are drawn per seed.
 *   test_bulk DIR SEED [N]
 * (An emptied branch that could not merge with a full sibling once stayed in the tree:
 * test_regress's delete_in_order is that case; this looks for its relatives.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

#define DUPS 50

static unsigned long long rng = 1;
static unsigned rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

static unsigned char *present; /* item i: plain key i, or (key i / DUPS, dup i % DUPS) */
static int ksz, vsz, dupsort;
static char kb[256], vb[4096];

static MDB_val item_key(int i)
{
    snprintf(kb, sizeof kb, "%0*d", ksz, dupsort ? i / DUPS : i);
    return (MDB_val){(size_t)ksz, kb};
}

static MDB_val item_value(int i)
{
    if (dupsort) { /* duplicates are sorted values: make them distinct and ordered */
        snprintf(vb, sizeof vb, "%04d", i % DUPS);
        memset(vb + 4, 'd', (size_t)vsz % 200);
        return (MDB_val){4 + (size_t)vsz % 200, vb};
    }
    memset(vb, 'v', (size_t)vsz + i % 7);
    return (MDB_val){(size_t)vsz + i % 7, vb};
}

static void check(MDB_env *env, MDB_dbi dbi, int n, const char *what)
{
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    mdbcore_check_report_free(&rep);
    if (rc)
        FAIL("checker after %s: %s", what, mdb_strerror(rc));
    MDB_txn *t;
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
    CHECK(mdb_cursor_open(t, dbi, &c));
    int seen = 0, want = 0;
    for (int i = 0; i < n; i++)
        want += present[i];
    while ((rc = mdb_cursor_get(c, &k, &v, seen ? MDB_NEXT : MDB_FIRST)) == 0)
        seen++;
    if (rc != MDB_NOTFOUND)
        FAIL("%s: scan: %s", what, mdb_strerror(rc));
    if (seen != want)
        FAIL("%s: %d items, model %d", what, seen, want);
    for (int i = 0; i < n; i += 97) { /* spot checks: present items are found, others not */
        MDB_val ik = item_key(i), iv = item_value(i);
        rc = mdb_cursor_get(c, &ik, &iv, dupsort ? MDB_GET_BOTH : MDB_SET);
        if ((rc == 0) != present[i])
            FAIL("%s: item %d: rc %d, model %d", what, i, rc, present[i]);
    }
    mdb_cursor_close(c);
    mdb_txn_abort(t);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR SEED [N]\n", argv[0]);
        return 2;
    }
    unsigned seed = (unsigned)atoi(argv[2]);
    int n = argc > 3 ? atoi(argv[3]) : 60000;
    rng = seed * 2654435761ull | 1;
    dupsort = seed % 2 == 0;
    ksz = 8 + rnd() % 100;
    vsz = rnd() % 3 == 0 ? 1 + rnd() % 2000 : 1 + rnd() % 200;
    present = calloc((size_t)n, 1);
    mkdir(argv[1], 0755);
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)1 << 32));
    CHECK(mdb_env_set_maxdbs(env, 2));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, "bulk", MDB_CREATE | (dupsort ? MDB_DUPSORT : 0), &dbi));
    for (int phase = 0; phase < 10; phase++) {
        /* phase 0 fills in key order (appends leave full pages, the case that once broke
         * deletes); then each phase mostly inserts or mostly deletes */
        int pattern = phase ? (int)(rnd() % 6) : 0, start = rnd() % n, stride = 1 + rnd() % 7;
        int inserting = phase == 0 || rnd() % 3 == 0;
        int count = phase ? n / (1 + (int)(rnd() % 3)) : n;
        for (int j = 0; j < count; j++) {
            int i;
            switch (pattern) {
            case 0: i = j; break;
            case 1: i = n - 1 - j; break;
            case 2: i = (start + j * stride) % n; break;
            case 3: i = rnd() % n; break;
            case 4: i = (j * 2) % n; break;
            default: i = (n / 2 + ((j & 1) ? j / 2 : -(j / 2)) + n) % n;
            }
            MDB_val k = item_key(i), v = item_value(i);
            if (inserting != (phase && rnd() % 8 == 0)) {
                int rc = mdb_put(t, dbi, &k, &v, dupsort ? MDB_NODUPDATA : 0);
                if (rc && !(rc == MDB_KEYEXIST && present[i]))
                    FAIL("phase %d pattern %d: put %d: %s", phase, pattern, i, mdb_strerror(rc));
                present[i] = 1;
            } else {
                int rc = mdb_del(t, dbi, &k, dupsort ? &v : NULL);
                if (rc && rc != MDB_NOTFOUND)
                    FAIL("phase %d pattern %d: del %d: %s", phase, pattern, i, mdb_strerror(rc));
                if ((rc == 0) != present[i])
                    FAIL("phase %d: del %d: rc %d, model %d", phase, i, rc, present[i]);
                present[i] = 0;
            }
        }
        CHECK(mdb_txn_commit(t));
        char what[64];
        snprintf(what, sizeof what, "phase %d (pattern %d)", phase, pattern);
        check(env, dbi, n, what);
        CHECK(mdb_txn_begin(env, NULL, 0, &t));
    }
    mdb_txn_abort(t);
    mdb_env_close(env);
    printf("test_bulk seed %u: %d items, %s, keys %d B, values %d B: 10 phases clean\n", seed, n,
           dupsort ? "DUPSORT" : "plain", ksz, vsz);
    free(present);
    return 0;
}
