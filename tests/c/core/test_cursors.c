/*
 * test_cursors.c -- open cursors stay on their items while other cursors and mdb_put /
 * mdb_del change the same tree (splits, merges, root changes).  A cursor whose item is
 * deleted must then show the successor with GET_CURRENT.
 *   test_cursors DIR [seed]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmdb.h"
#include "mdbtest.h"

#define NK 4000
static int present[NK];
static unsigned long long rng = 1;
static unsigned rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng >> 33);
}
static void mk(char *b, int i) { snprintf(b, 16, "k%05d", i); }
static int succ(int i) /* first present key >= i, or -1 */
{
    for (; i < NK; i++)
        if (present[i])
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    const char *dir = argv[1];
    rng = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    mkdir(dir, 0755);
    MDB_env *env = mdbtest_env(256u << 20, 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    char kb[16], vb[3000];
    memset(vb, 'x', sizeof(vb));
    for (int i = 0; i < NK; i += 2) {
        mk(kb, i);
        MDB_val k = {strlen(kb), kb}, v = {rnd() % 600, vb};
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
        present[i] = 1;
    }
    CHECK(mdb_txn_commit(txn));

    long checks = 0;
    for (int round = 0; round < 20; round++) {
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        enum { NC = 4 };
        MDB_cursor *c[NC];
        int at[NC];
        for (int j = 0; j < NC; j++) {
            CHECK(mdb_cursor_open(txn, dbi, &c[j]));
            int s = succ(rnd() % NK);
            if (s < 0)
                s = succ(0);
            mk(kb, s);
            MDB_val k = {strlen(kb), kb}, v;
            CHECK(mdb_cursor_get(c[j], &k, &v, MDB_SET));
            at[j] = s;
        }
        for (int op = 0; op < 3000; op++) {
            int i = rnd() % NK, who = rnd() % 3;
            mk(kb, i);
            MDB_val k = {strlen(kb), kb}, v = {rnd() % ((rnd() % 20) ? 700 : 3000), vb};
            if (rnd() % 2) {
                if (who == 0)
                    CHECK(mdb_cursor_put(c[0], &k, &v, 0));
                else
                    CHECK(mdb_put(txn, dbi, &k, &v, 0));
                present[i] = 1;
                if (who == 0)
                    at[0] = i;
            } else if (present[i]) {
                if (who == 0) {
                    MDB_val kk = k, vv;
                    CHECK(mdb_cursor_get(c[0], &kk, &vv, MDB_SET));
                    CHECK(mdb_cursor_del(c[0], 0));
                } else {
                    CHECK(mdb_del(txn, dbi, &k, NULL));
                }
                present[i] = 0;
                if (who == 0)
                    at[0] = succ(i);
            }
            for (int j = 0; j < NC; j++) {
                if (at[j] < 0)
                    continue;
                if (!present[at[j]])
                    at[j] = succ(at[j]);
                MDB_val ck, cv;
                int rc = mdb_cursor_get(c[j], &ck, &cv, MDB_GET_CURRENT);
                if (at[j] < 0) {
                    if (rc != MDB_NOTFOUND) {
                        fprintf(stderr, "cursor %d should be past the end (rc %d)\n", j, rc);
                        return 1;
                    }
                    continue;
                }
                mk(kb, at[j]);
                if (rc || ck.mv_size != strlen(kb) || memcmp(ck.mv_data, kb, ck.mv_size)) {
                    fprintf(stderr, "round %d op %d: cursor %d expected %s got %s %.*s\n", round,
                            op, j, kb, mdb_strerror(rc), rc ? 0 : (int)ck.mv_size,
                            rc ? "" : (char *)ck.mv_data);
                    return 1;
                }
                checks++;
            }
            /* now and then move a cursor to keep things varied */
            if (rnd() % 50 == 0) {
                int j = 1 + rnd() % (NC - 1);
                MDB_val ck, cv;
                int rc = mdb_cursor_get(c[j], &ck, &cv, MDB_NEXT);
                int nx = at[j] >= 0 ? succ(at[j] + 1) : -1;
                if (at[j] >= 0) {
                    if ((rc == 0) != (nx >= 0)) {
                        fprintf(stderr, "NEXT mismatch rc %d nx %d\n", rc, nx);
                        return 1;
                    }
                    if (rc == 0)
                        at[j] = nx;
                    else
                        at[j] = -2; /* at the end: keep it out of the checks */
                }
            }
        }
        if (round % 2)
            CHECK(mdb_txn_commit(txn));
        else {
            mdb_txn_abort(txn);
            /* reload the model from the file */
            CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
            memset(present, 0, sizeof(present));
            MDB_cursor *r;
            CHECK(mdb_cursor_open(txn, dbi, &r));
            MDB_val k, v;
            while (mdb_cursor_get(r, &k, &v, MDB_NEXT) == 0)
            {
                char t[16] = {0};
                memcpy(t, k.mv_data, k.mv_size < 15 ? k.mv_size : 15);
                present[atoi(t + 1)] = 1;
            }
            mdb_cursor_close(r);
            mdb_txn_abort(txn);
        }
    }
    mdb_env_close(env);
    printf("cursors: %ld position checks OK\n", checks);
    return 0;
}
