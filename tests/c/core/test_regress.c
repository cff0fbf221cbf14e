/*
 * test_regress.c -- regressions for behaviour where we once differed from LMDB 0.9.
 * Each case states LMDB's observable behaviour; the file also builds against Debian's
 * liblmdb (cc test_regress.c -llmdb) to confirm the expectations on the real thing.
 *   test_regress WORKDIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"

#define CHECK(x)                                                                         \
    do {                                                                                 \
        int rc_ = (x);                                                                   \
        if (rc_) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, mdb_strerror(rc_)); \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
#define EXPECT(x, want)                                                                  \
    do {                                                                                 \
        int rc_ = (x);                                                                   \
        if (rc_ != (want)) {                                                             \
            fprintf(stderr, "%s:%d: %s: got %d (%s), want %s\n", __FILE__, __LINE__, #x, rc_, \
                    mdb_strerror(rc_), #want);                                           \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)
#define TRUE(c)                                                                          \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #c);             \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static const char *base;
static char dirbuf[4096];

static const char *fresh_dir(const char *name)
{
    snprintf(dirbuf, sizeof(dirbuf), "%s/%s", base, name);
    mkdir(dirbuf, 0755);
    char f[4200];
    snprintf(f, sizeof(f), "%s/data.mdb", dirbuf);
    unlink(f);
    snprintf(f, sizeof(f), "%s/lock.mdb", dirbuf);
    unlink(f);
    return dirbuf;
}

static MDB_env *open_env(const char *name, size_t mapsize, unsigned maxdbs, unsigned flags)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    if (mapsize)
        CHECK(mdb_env_set_mapsize(env, mapsize));
    if (maxdbs)
        CHECK(mdb_env_set_maxdbs(env, maxdbs));
    CHECK(mdb_env_open(env, fresh_dir(name), flags, 0644));
    return env;
}

/* me_mapaddr is the meta's fixed-map field: NULL unless the file was made with FIXEDMAP,
 * whatever address the map happens to live at. */
static void env_info_mapaddr(void)
{
    MDB_env *env = open_env("mapaddr", 0, 0, 0);
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    TRUE(info.me_mapaddr == NULL);
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    MDB_val k = {1, "k"}, v = {1, "v"};
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_env_info(env, &info));
    TRUE(info.me_mapaddr == NULL);
    mdb_env_close(env);

    /* made with FIXEDMAP: the address is recorded and reported */
    env = open_env("mapaddr-fixed", 0, 0, MDB_FIXEDMAP);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_env_info(env, &info));
    TRUE(info.me_mapaddr != NULL);
    mdb_env_close(env);
    puts("env_info: me_mapaddr is the file's fixed-map address");
}

/* A map smaller than the file's used pages is raised silently at open; a txn starts and
 * a put that needs a page past the map gets MAP_FULL (py-lmdb test_tiny_size). */
static void tiny_map(void)
{
    MDB_env *env = open_env("tiny", 10, 0, 0);
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    TRUE(info.me_mapsize >= 2 * 4096);
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    mdb_txn_abort(txn);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    MDB_val k = {1, "k"}, v = {1, "v"};
    EXPECT(mdb_put(txn, dbi, &k, &v, 0), MDB_MAP_FULL);
    mdb_txn_abort(txn);
    /* set_mapsize too small on an open env: raised the same way */
    CHECK(mdb_env_set_mapsize(env, 1));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    mdb_txn_abort(txn);
    mdb_env_close(env);

    /* an existing file reopened with a tiny map_size */
    env = open_env("tiny2", 1 << 20, 0, 0);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (int i = 0; i < 2000; i++) {
        char kb[16];
        MDB_val kk = {(size_t)snprintf(kb, sizeof(kb), "key%06d", i), kb};
        CHECK(mdb_put(txn, dbi, &kk, &kk, 0));
    }
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 10));
    CHECK(mdb_env_open(env, dirbuf, 0, 0644));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    MDB_val kk = {9, "key001999"}, got;
    CHECK(mdb_get(txn, dbi, &kk, &got));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    puts("tiny map: raised to the used size; begin works, a put that needs room is MAP_FULL");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    base = argv[1];
    mkdir(base, 0755);
    env_info_mapaddr();
    tiny_map();
    puts("test_regress: PASS");
    return 0;
}
