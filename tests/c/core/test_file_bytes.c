/*
 * test_file_bytes.c -- what a write txn puts in the file besides the records: the bytes
 * of an overflow run past its value are zero, even when the memory (heap, or under
 * WRITEMAP the file's map) held other bytes there a moment before, and so is a run reserved
 * with MDB_RESERVE until the caller writes it.  Not covered, as in LMDB: a reserved run
 * under WRITEMAP (it is the file's own pages, holding what they held), and the free gap of
 * tree pages (an earlier image of a page of the same file, or zeros).
 *   test_file_bytes WORKDIR
 */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>

#include "mdbtest.h"

enum { PSIZE = 4096, HDR = 16, P_OVERFLOW_FLAG = 0x04 };

static const char *base;

/* The file's overflow run whose value starts with `first` bytes of `fill` (as far as its
 * first page shows), read whole into
 * *run (malloc'd, *len bytes); 0 when there is none. */
static int find_run(const char *dir, unsigned char fill, size_t first, unsigned char **run,
                    size_t *len)
{
    char path[512];
    PATHF(path, "%s/data.mdb", dir);
    int fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    size_t npages = (size_t)st.st_size / PSIZE;
    unsigned char pg[PSIZE];
    int found = 0;
    for (size_t i = 2; i < npages && !found; i++) {
        REQUIRE(pread(fd, pg, PSIZE, (off_t)(i * PSIZE)) == PSIZE);
        uint16_t flags;
        uint32_t count;
        memcpy(&flags, pg + 10, 2);
        memcpy(&count, pg + 12, 4);
        if (!(flags & P_OVERFLOW_FLAG) || count == 0 || i + count > npages)
            continue;
        size_t k = 0, want = first < PSIZE - HDR ? first : PSIZE - HDR;
        while (k < want && pg[HDR + k] == fill)
            k++;
        if (k < want)
            continue;
        *len = (size_t)count * PSIZE;
        *run = malloc(*len);
        REQUIRE(*run && pread(fd, *run, *len, (off_t)(i * PSIZE)) == (ssize_t)*len);
        found = 1;
    }
    close(fd);
    return found;
}

/* Bytes of run[from, len) that are not zero. */
static size_t nonzero(const unsigned char *run, size_t from, size_t len)
{
    size_t n = 0;
    for (size_t i = from; i < len; i++)
        n += run[i] != 0;
    return n;
}

/* A big value of `junk` put and deleted in the same txn: its run's memory (heap, or map
 * under WRITEMAP) is free again and holds `junk` when the next run is taken. */
static void leave_junk(MDB_txn *txn, MDB_dbi dbi, unsigned char junk)
{
    static unsigned char big[5 * PSIZE];
    memset(big, junk, sizeof big);
    MDB_val k = {4, "junk"}, v = {sizeof big, big};
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    CHECK(mdb_del(txn, dbi, &k, NULL));
}

static void overflow_tail(unsigned env_flags, const char *name)
{
    char dir[512];
    PATHF(dir, "%s/%s", base, name);
    MDB_env *env = mdbtest_open_dir(dir, 64 << 20, 0, env_flags);
    MDB_txn *txn;
    MDB_dbi dbi = mdbtest_begin_main(env, &txn);
    leave_junk(txn, dbi, 0xEE);
    /* 5,000 bytes: a run of two pages, 3,176 of them past the value */
    unsigned char val[5000];
    memset(val, 0xAB, sizeof val);
    MDB_val k = {3, "val"}, v = {sizeof val, val};
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);

    unsigned char *run = NULL;
    size_t len = 0;
    EXPECT_MSG(find_run(dir, 0xAB, sizeof val, &run, &len), "%s: no overflow run found", name);
    if (run) {
        EXPECT_EQ(len, 2 * PSIZE);
        size_t bad = nonzero(run, HDR + sizeof val, len);
        EXPECT_MSG(bad == 0, "%s: %zu bytes past the value are not zero", name, bad);
        free(run);
    }
}

static void reserved_run(const char *name)
{
    char dir[512];
    PATHF(dir, "%s/%s", base, name);
    MDB_env *env = mdbtest_open_dir(dir, 64 << 20, 0, 0);
    MDB_txn *txn;
    MDB_dbi dbi = mdbtest_begin_main(env, &txn);
    leave_junk(txn, dbi, 0xEE);
    MDB_val k = {3, "res"}, v = {9000, NULL};
    CHECK(mdb_put(txn, dbi, &k, &v, MDB_RESERVE));
    REQUIRE(v.mv_data != NULL && v.mv_size == 9000);
    EXPECT_MSG(nonzero(v.mv_data, 0, 9000) == 0, "%s: the reserved buffer is not zeroed", name);
    memset(v.mv_data, 0x5A, 100); /* the caller writes only the start */
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);

    unsigned char *run = NULL;
    size_t len = 0;
    EXPECT_MSG(find_run(dir, 0x5A, 100, &run, &len), "%s: no overflow run found", name);
    if (run) {
        EXPECT_EQ(len, 3 * PSIZE);
        size_t bad = nonzero(run, HDR + 100, len);
        EXPECT_MSG(bad == 0, "%s: %zu bytes past what was written are not zero", name, bad);
        free(run);
    }
}

static void overflow_tail_heap(void) { overflow_tail(0, "tail-heap"); }
static void overflow_tail_writemap(void) { overflow_tail(MDB_WRITEMAP, "tail-writemap"); }
static void reserved_run_heap(void) { reserved_run("reserve-heap"); }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    base = argv[1];
    mkdir(base, 0755);
    TEST_RUN(overflow_tail_heap);
    TEST_RUN(overflow_tail_writemap);
    TEST_RUN(reserved_run_heap);
    TEST_DONE();
}
