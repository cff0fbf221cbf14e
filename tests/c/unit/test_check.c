/*
 * test_check.c -- the checker's C API (mdbcore_check_snapshot and friends) on files written
 * by the REAL LMDB through lmdb_helper: report fields, caller-supplied comparators, problem
 * caps, partial maps, unusable snapshots.
 *
 * Usage: test_check [path-to-lmdb_helper]   (default build/tests/unit/lmdb_helper)
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mdbcore.h"
#include "mdbtest.h"

#include "cmp_desc.h"

static const char *helper = "build/tests/unit/lmdb_helper";

static int run(const char *cmd, const char *dir, const char *arg)
{
    pid_t p = fork();
    if (p == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execl(helper, helper, cmd, dir, arg, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

typedef struct mapped {
    void *map;
    size_t len;
    int fd;
} mapped;

static mapped map_env(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    mapped m = {NULL, 0, open(path, O_RDONLY)};
    struct stat st;
    if (m.fd < 0 || fstat(m.fd, &st) < 0)
        return m;
    m.len = (size_t)st.st_size;
    m.map = mmap(NULL, m.len, PROT_READ, MAP_SHARED, m.fd, 0);
    if (m.map == MAP_FAILED)
        m.map = NULL;
    return m;
}

static void unmap_env(mapped *m)
{
    if (m->map)
        munmap(m->map, m->len);
    close(m->fd);
}

static char *mkdir_tmp(void)
{
    char *d = strdup("/tmp/mdb-checkXXXXXX");
    if (!mkdtemp(d))
        exit(2);
    return d;
}

static void rm_tmp(char *d)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
    if (system(cmd))
        fprintf(stderr, "warning: rm %s failed\n", d);
    free(d);
}

/* The whole mapped file as the checker's snapshot, at its newest meta. */
static mdbcore_snapshot whole_file(const mapped *m)
{
    mdbcore_snapshot in;
    memset(&in, 0, sizeof in);
    in.map = m->map;
    in.map_len = m->len;
    in.file_size = m->len;
    EXPECT_EQ(mdbcore_snapshot_from_metas(&in, -1), 0);
    return in;
}

static size_t count_code(const mdbcore_check_report *r, int code, const char *db)
{
    size_t n = 0;
    for (size_t i = 0; i < r->nproblems; i++)
        if (r->problems[i].code == code && (!db || !strcmp(r->problems[i].db, db)))
            n++;
    return n;
}

static const mdbcore_check_db *find_db(const mdbcore_check_report *r, const char *name)
{
    for (size_t i = 0; i < r->ndbs; i++)
        if (!strcmp(r->dbs[i].name, name))
            return &r->dbs[i];
    return NULL;
}

static void t_report_fields(void)
{
    char *dir = mkdir_tmp();
    EXPECT_EQ(run("put", dir, "500"), 0);
    EXPECT_EQ(run("put", dir, "700"), 0); /* rewrites 500 keys: frees pages */
    mapped m = map_env(dir);
    EXPECT(m.map != NULL);
    mdbcore_snapshot in = whole_file(&m);
    EXPECT_EQ(in.psize, 4096);
    EXPECT_EQ(in.txnid, 2);
    mdbcore_check_report r;
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), 0);
    EXPECT_EQ(r.problems_total, 0);
    EXPECT_EQ(r.txnid, 2);
    EXPECT_EQ(r.meta_pages, 2);
    EXPECT(r.free_pages > 0);
    EXPECT(r.free_records >= 1);
    EXPECT_EQ(r.reachable_pages + r.free_pages, r.next_pgno);
    EXPECT_EQ(r.leaked_pages, 0);
    EXPECT_EQ(r.ndbs, 2);
    const mdbcore_check_db *mn = find_db(&r, "@main");
    EXPECT(mn != NULL);
    if (mn) {
        EXPECT_EQ(mn->entries, 700);
        EXPECT_EQ(mn->rec.entries, 700);
        EXPECT_EQ(mn->depth, mn->rec.depth);
        EXPECT_EQ(mn->leaf_pages, mn->rec.leaf_pages);
    }
    /* The older meta is a valid snapshot too (nothing it references was reused yet). */
    mdbcore_check_report_free(&r);
    EXPECT_EQ(mdbcore_snapshot_from_metas(&in, 1), 0);
    EXPECT_EQ(in.txnid, 1);
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), 0);
    mn = find_db(&r, "@main");
    EXPECT(mn && mn->entries == 500);
    mdbcore_check_report_free(&r);

    /* A map shorter than the file: out-of-range pages are problems, never reads. */
    EXPECT_EQ(mdbcore_snapshot_from_metas(&in, -1), 0);
    in.map_len = 3 * 4096;
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), MDB_CORRUPTED);
    EXPECT(count_code(&r, MDBCORE_P_BOUNDS, NULL) > 0);
    mdbcore_check_report_free(&r);
    /* An unusable snapshot. */
    in.map_len = m.len;
    in.psize = 100;
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), EINVAL);
    mdbcore_check_report_free(&r);
    unmap_env(&m);
    rm_tmp(dir);
}

static int print_to_buf(const char *msg, void *ctx)
{
    strncat(ctx, msg, 65535 - strlen(ctx));
    return 0;
}

static void t_custom_comparators(void)
{
    char *dir = mkdir_tmp();
    EXPECT_EQ(run("custom", dir, NULL), 0);
    mapped m = map_env(dir);
    mdbcore_snapshot in = whole_file(&m);

    /* Default comparators: both DBs look out of order. */
    mdbcore_check_report r;
    in.max_problems = 10;
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), MDB_CORRUPTED);
    EXPECT_EQ(r.nproblems, 10);
    EXPECT(r.problems_total > 10);
    mdbcore_check_report_free(&r);
    in.max_problems = 100000;
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), MDB_CORRUPTED);
    EXPECT_EQ(r.nproblems, r.problems_total);
    EXPECT(count_code(&r, MDBCORE_P_ORDER, "desc") > 0);
    EXPECT(count_code(&r, MDBCORE_P_ORDER, "ddesc") > 0 ||
          count_code(&r, MDBCORE_P_ORDER, "ddesc/dup") > 0);
    EXPECT_EQ(count_code(&r, MDBCORE_P_LEAK, NULL), 0);
    mdbcore_check_report_free(&r);

    /* With the comparators the DBs were written with: clean. */
    mdbcore_check_cmp cmps[2] = {
        {"desc", 0, cmp_desc, NULL},
        {"ddesc", 5, NULL, cmp_desc},
    };
    in.cmps = cmps;
    in.ncmps = 2;
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), 0);
    EXPECT_EQ(r.problems_total, 0);
    const mdbcore_check_db *d = find_db(&r, "desc");
    EXPECT(d && d->entries == 2000);
    d = find_db(&r, "ddesc");
    EXPECT(d && d->entries == 2000);
    EXPECT(d && d->dup_subpages + d->dup_subdbs == 40);
    static char text[65536];
    text[0] = 0;
    EXPECT_EQ(mdbcore_check_report_print(&r, print_to_buf, text), 0);
    EXPECT(strstr(text, "problems: 0\n") != NULL);
    EXPECT(strstr(text, "ddesc ") != NULL);
    mdbcore_check_report_free(&r);

    /* Skipping key checks also passes. */
    in.cmps = NULL;
    in.ncmps = 0;
    in.flags = MDBCORE_CHECK_NO_KEYS;
    EXPECT_EQ(mdbcore_check_snapshot(&in, &r), 0);
    mdbcore_check_report_free(&r);
    unmap_env(&m);
    rm_tmp(dir);
}

static void t_not_lmdb(void)
{
    static uint8_t junk[3 * 4096];
    memset(junk, 0x5a, sizeof junk);
    mdbcore_snapshot in;
    memset(&in, 0, sizeof in);
    in.map = junk;
    in.map_len = sizeof junk;
    in.file_size = sizeof junk;
    EXPECT_EQ(mdbcore_snapshot_from_metas(&in, -1), MDB_INVALID);
    EXPECT_EQ(mdbcore_check_env(NULL, NULL), EINVAL);
    EXPECT_EQ(mdbcore_check_txn(NULL, NULL), EINVAL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        helper = argv[1];
    if (access(helper, X_OK) != 0) {
        fprintf(stderr, "test_check: helper %s not found\n", helper);
        return 2;
    }
    TEST_RUN(t_report_fields);
    TEST_RUN(t_custom_comparators);
    TEST_RUN(t_not_lmdb);
    TEST_DONE();
}
