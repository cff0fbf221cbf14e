/*
 * test_write_map.c -- commits that copy pages into the write map (datafile.c) instead of
 * writing them with pwrite: that they do so where they may, that they never store into a
 * part of the file that has no blocks (a hole: the store would have to allocate, and on a
 * full disk the process would die of SIGBUS), and that what they write is what a reader
 * and a reopened environment read back.
 *
 *   1. A steady load of small commits: the write map is in use (on ext4 or tmpfs; on any
 *      other filesystem the test checks that it is not, and stops there), pages go through
 *      it, and every key reads back after a reopen.
 *   2. The file gains a sparse tail (ftruncate, as LMDB's WRITEMAP leaves a file): after
 *      every commit that grows the data into it, the pages the map may take end at or
 *      before the file's first hole (lseek SEEK_HOLE), and everything reads back.
 *   3. A hole punched into a free page below the end: the limit stays below it until a
 *      commit writes it.
 *   test_write_map DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

static char dir[2048], data_path[2100];

static MDB_env *open_env(void)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, 256u << 20));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    return env;
}

static void put_range(MDB_env *env, unsigned from, unsigned n)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (unsigned i = from; i < from + n; i++) {
        char k[16], v[200];
        snprintf(k, sizeof k, "k%08u", i * 2654435761u % 100000000u);
        memset(v, 'a' + (int)(i % 26), sizeof v);
        snprintf(v, sizeof v, "v%u", i);
        MDB_val key = {strlen(k), k}, val = {sizeof v, v};
        CHECK(mdb_put(txn, dbi, &key, &val, 0));
    }
    CHECK(mdb_txn_commit(txn));
}

/* every key of [0, n) holds its value */
static void check_all(MDB_env *env, unsigned n, const char *when)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    unsigned bad = 0;
    for (unsigned i = 0; i < n; i++) {
        char k[16], want[16];
        snprintf(k, sizeof k, "k%08u", i * 2654435761u % 100000000u);
        snprintf(want, sizeof want, "v%u", i);
        MDB_val key = {strlen(k), k}, val;
        if (mdb_get(txn, dbi, &key, &val) != 0 || val.mv_size != 200 ||
            memcmp(val.mv_data, want, strlen(want) + 1) != 0)
            bad++;
    }
    mdb_txn_abort(txn);
    EXPECT_MSG(bad == 0, "%s: %u of %u keys do not read back", when, bad, n);
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    EXPECT_MSG(rc == 0, "%s: checker: %s", when, mdb_strerror(rc));
    mdbcore_check_report_free(&rep);
}

/* the pages the write map may take end at or before the file's first hole */
static void check_no_store_into_a_hole(MDB_env *env, const char *when)
{
    size_t backed = 0;
    mdbcore_env_write_map(env, &backed, NULL);
    int fd = open(data_path, O_RDONLY);
    REQUIRE(fd >= 0);
    off_t hole = lseek(fd, 0, SEEK_HOLE);
    close(fd);
    REQUIRE(hole >= 0);
    EXPECT_MSG((off_t)backed * 4096 <= hole,
               "%s: the write map may take pages up to %zu, the first hole is at page %lld",
               when, backed, (long long)(hole / 4096));
}

int main(int argc, char **argv)
{
    REQUIRE(argc == 2);
    snprintf(dir, sizeof dir, "%s", argv[1]);
    mkdir(dir, 0755);
    snprintf(data_path, sizeof data_path, "%s/data.mdb", dir);
    unlink(data_path);
    snprintf(data_path, sizeof data_path, "%s/lock.mdb", dir);
    unlink(data_path);
    snprintf(data_path, sizeof data_path, "%s/data.mdb", dir);

    /* 1. a steady load */
    MDB_env *env = open_env();
    unsigned n = 0;
    for (int t = 0; t < 300; t++, n += 20)
        put_range(env, n, 20);
    size_t backed = 0, copied = 0;
    int used = mdbcore_env_write_map(env, &backed, &copied);
    struct statfs fs;
    REQUIRE(statfs(dir, &fs) == 0);
    int in_place = fs.f_type == 0xEF53 || fs.f_type == 0x01021994;
    if (!in_place) {
        EXPECT_MSG(!used && copied == 0, "write map in use on filesystem %lx",
                   (unsigned long)fs.f_type);
        check_all(env, n, "steady load, pwrite only");
        mdb_env_close(env);
        printf("write map: not used on this filesystem (%lx); data read back\n",
               (unsigned long)fs.f_type);
        return TEST_STATUS();
    }
    EXPECT_MSG(used, "the write map is not in use on ext4/tmpfs");
    EXPECT_MSG(copied > 300, "only %zu pages went through the write map in 300 commits",
               copied);
    check_no_store_into_a_hole(env, "steady load");
    check_all(env, n, "steady load");
    mdb_env_close(env);
    env = open_env();
    check_all(env, n, "steady load, reopened");
    mdb_env_close(env);

    /* 2. a sparse tail of 4 MiB */
    struct stat st;
    REQUIRE(stat(data_path, &st) == 0);
    REQUIRE(truncate(data_path, st.st_size + (4 << 20)) == 0);
    env = open_env();
    size_t copied_before;
    mdbcore_env_write_map(env, NULL, &copied_before);
    for (int t = 0; t < 100; t++, n += 50) {
        put_range(env, n, 50); /* grows the data into the sparse tail */
        check_no_store_into_a_hole(env, "sparse tail");
    }
    mdbcore_env_write_map(env, &backed, &copied);
    EXPECT_MSG(copied > copied_before, "no page went through the write map after the tail");
    EXPECT_MSG((off_t)backed * 4096 > st.st_size,
               "the pages written into the tail never joined the write map (%zu)", backed);
    check_all(env, n, "sparse tail");
    mdb_env_close(env);

    /* 3. a hole punched at a free page below the data's end */
    env = open_env();
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    mdb_env_close(env);
    int fd = open(data_path, O_RDWR);
    REQUIRE(fd >= 0);
    /* the file's last page lies past the data (the tail above): free, never read */
    off_t at = (off_t)(info.me_last_pgno + 8) * 4096;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, at, 4096) != 0) {
        printf("write map: punching a hole is not supported here (%s)\n", strerror(errno));
    }
    close(fd);
    env = open_env();
    for (int t = 0; t < 100; t++, n += 50) {
        put_range(env, n, 50);
        check_no_store_into_a_hole(env, "punched hole");
    }
    check_all(env, n, "punched hole");
    mdb_env_close(env);
    env = open_env();
    check_all(env, n, "punched hole, reopened");
    mdb_env_close(env);
    printf("write map: %zu pages copied through it; no store into a hole; %u keys read back\n",
           copied, n);
    return TEST_STATUS();
}
