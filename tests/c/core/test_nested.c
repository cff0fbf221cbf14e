/*
 * test_nested.c -- nested write txns against a model: random puts/deletes (small, large
 * and overflow values) at up to four nesting levels, each child committed or aborted at
 * random; after every top-level commit the file must equal the model.
 *   test_nested DIR [seed] [rounds]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

#define NK 3000
typedef struct model {
    int len[NK]; /* -1 absent, else value length (content derived from key and len) */
} model;

static unsigned long long rng;
static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}

static char vbuf[20000];
static void fillv(int k, int len)
{
    for (int i = 0; i < len; i++)
        vbuf[i] = (char)(k * 31 + len + i);
}

static void verify(MDB_txn *t, MDB_dbi d, const model *m)
{
    MDB_cursor *c;
    MDB_val k, v;
    int seen = 0, rc;
    CHECK(mdb_cursor_open(t, d, &c));
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
        int key = 0;
        for (size_t i = 0; i < k.mv_size && i < 5; i++)
            key = key * 10 + (((char *)k.mv_data)[i] - '0');
        fillv(key, m->len[key]);
        if (m->len[key] < 0 || (int)v.mv_size != m->len[key] || memcmp(v.mv_data, vbuf, v.mv_size)) {
            fprintf(stderr, "mismatch at key %d (len %zu, model %d)\n", key, v.mv_size, m->len[key]);
            exit(1);
        }
        seen++;
    }
    mdb_cursor_close(c);
    int want = 0;
    for (int i = 0; i < NK; i++)
        want += m->len[i] >= 0;
    if (seen != want) {
        fprintf(stderr, "saw %d items, model has %d\n", seen, want);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    rng = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    int rounds = argc > 3 ? atoi(argv[3]) : 200;
    mkdir(argv[1], 0755);
    MDB_env *env;
    MDB_dbi d;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 512u << 20));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_open(env, argv[1], MDB_NOSYNC, 0644));
    static model stack[5];
    for (int i = 0; i < NK; i++)
        stack[0].len[i] = -1;
    MDB_txn *t;
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, "n", MDB_CREATE, &d));
    CHECK(mdb_txn_commit(t));
    long ops = 0;
    for (int r = 0; r < rounds; r++) {
        MDB_txn *txs[5];
        int depth = 0;
        CHECK(mdb_txn_begin(env, NULL, 0, &txs[0]));
        stack[1] = stack[0];
        for (int step = 0; step < 60; step++) {
            unsigned a = rnd() % 10;
            if (a == 0 && depth < 3) {
                CHECK(mdb_txn_begin(env, txs[depth], 0, &txs[depth + 1]));
                depth++;
                stack[depth + 1] = stack[depth];
                continue;
            }
            if (a == 1 && depth > 0) {
                if (rnd() % 2) {
                    CHECK(mdb_txn_commit(txs[depth]));
                    stack[depth] = stack[depth + 1];
                } else {
                    mdb_txn_abort(txs[depth]);
                }
                depth--;
                continue;
            }
            for (int j = 0; j < 20; j++, ops++) {
                int key = (int)(rnd() % NK);
                char kb[16];
                snprintf(kb, sizeof(kb), "%05d", key);
                MDB_val k = {5, kb};
                model *m = &stack[depth + 1];
                if (rnd() % 3) {
                    int len = (rnd() % 20 == 0) ? (int)(rnd() % 20000) : (int)(rnd() % 300);
                    fillv(key, len);
                    MDB_val v = {(size_t)len, vbuf};
                    CHECK(mdb_put(txs[depth], d, &k, &v, 0));
                    m->len[key] = len;
                } else {
                    int rc = mdb_del(txs[depth], d, &k, NULL);
                    if ((rc == 0) != (m->len[key] >= 0)) {
                        fprintf(stderr, "del rc %d vs model\n", rc);
                        return 1;
                    }
                    m->len[key] = -1;
                }
            }
            verify(txs[depth], d, &stack[depth + 1]);
        }
        while (depth > 0) {
            CHECK(mdb_txn_commit(txs[depth]));
            stack[depth] = stack[depth + 1];
            depth--;
        }
        if (rnd() % 5 == 0) {
            mdb_txn_abort(txs[0]);
        } else {
            CHECK(mdb_txn_commit(txs[0]));
            stack[0] = stack[1];
        }
        MDB_txn *rt;
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
        verify(rt, d, &stack[0]);
        mdb_txn_abort(rt);
        /* every page must be in use or on the free list: nothing leaked */
        mdbcore_check_report rep;
        CHECK(mdbcore_check_env(env, &rep));
        if (rep.problems_total || rep.leaked_pages) {
            fprintf(stderr, "round %d: checker found %llu problems, %llu leaked pages\n", r,
                    (unsigned long long)rep.problems_total, (unsigned long long)rep.leaked_pages);
            return 1;
        }
        mdbcore_check_report_free(&rep);
    }
    mdb_env_close(env);
    printf("nested: %d rounds, %ld ops OK\n", rounds, ops);
    return 0;
}
