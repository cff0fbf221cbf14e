/*
 * test_badfiles.c -- damaged data files must give an error code (or a clean success),
 * never a crash, a sanitizer report or a hang.
 *
 * What it does
 *   1. Writes a valid environment with the library under test: the main DB with plain
 *      keys, a DUPSORT DB (sub-pages and a sub-database), an INTEGERKEY DB and a DB with
 *      overflow values.  Reading it back must succeed and find every item.
 *   2. Builds damaged copies of its data.mdb, each in a fresh directory, and for each one
 *      forks a child that opens the environment read-only and reads everything:
 *      mdb_env_open, mdb_txn_begin, mdb_dbi_open of every named DB found in the main DB,
 *      a cursor walk of each (with mdb_cursor_count on DUPSORT keys), mdb_get of every key
 *      walked, mdb_stat and mdb_env_info.  The child has alarm(HANG_SECONDS): a SIGALRM is
 *      reported as a hang.  Any signal or non-zero exit status of a child (a crash, an
 *      ASan/UBSan report) fails the test, with the case name and the seed printed.
 *
 * Case families
 *   header-level (safe on real LMDB; the only ones run with --header-only):
 *     the untouched file; truncation to under two pages; zeroed meta pages; wrong magic;
 *     wrong data version; foreign files (random bytes, a text file, an ELF header, all
 *     zeros, all 0xff).  Some of these also have a required error code: a file whose two
 *     metas both have the wrong magic must give MDB_INVALID, both with a wrong version
 *     MDB_VERSION_MISMATCH, and a foreign file must not open.
 *   deep (need a hardened reader; real LMDB 0.9 crashes on some of them, see CVE-2019-
 *     16224..16228, so they are skipped against Debian's liblmdb):
 *     truncation inside the data pages; corrupted meta fields (page size, last page, root
 *     page numbers, depth, entries, flags, txnid); seeded random byte flips anywhere, in
 *     page headers, and in meta pages.
 *
 * Usage: test_badfiles [--header-only] [--seed N] [--keep]
 *   The seed defaults to the time; it is printed first, so a failure can be replayed.
 *   MDB_BADFILE_SEED in the environment overrides the default too.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lmdb.h>

/* exit status 2 is this harness failing (not a damaged file failing a case) */
#define MDBTEST_FATAL_EXIT 2
#include "mdbtest.h"

#define HANG_SECONDS 20
#define WALK_LIMIT 2000000L /* cursor steps per child; a corrupt tree may cycle */
#define PSIZE 4096          /* page size of the file we write (x86-64 Linux) */

/* Offsets inside a meta page (from the page start), as tabled in docs/design.md#meta-page. */
#define M_MAGIC 16
#define M_VERSION 20
#define M_MAPSIZE 32
#define M_FREE_DB 40
#define M_MAIN_DB 88
#define M_LAST_PG 136
#define M_TXNID 144
/* Offsets inside a 48-byte DB record. */
#define D_PAD 0
#define D_FLAGS 4
#define D_DEPTH 6
#define D_ENTRIES 32
#define D_ROOT 40

static const char *progname = "test_badfiles";
static char workdir[4096];
static unsigned char *orig;
static size_t orig_len;
static uint64_t seed;
static int header_only, keep;
static long expected_items;
static int dupsort_missing;

static int n_cases, n_failed, n_opened, n_open_err, n_later_err, n_walk_limit;

/* ---- a small seeded PRNG (splitmix64), so runs replay exactly from the seed ---- */
static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* ---- files ---- */
static void write_file(const char *path, const void *buf, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); exit(2); }
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w <= 0) { perror("write"); exit(2); }
        p += w;
        len -= (size_t)w;
    }
    close(fd);
}

static unsigned char *read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); exit(2); }
    struct stat st;
    fstat(fd, &st);
    unsigned char *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0) { perror("read"); exit(2); }
        got += (size_t)r;
    }
    close(fd);
    *len = got;
    return buf;
}

static void rm_env_dir(const char *dir) {
    mdbtest_unlink_env(dir);
    rmdir(dir);
}

/* ---- 1. the valid environment ---- */
static void put_s(MDB_txn *txn, MDB_dbi dbi, const void *k, size_t kl, const void *v,
                  size_t vl) {
    MDB_val key = {kl, (void *)k}, val = {vl, (void *)v};
    CHECK(mdb_put(txn, dbi, &key, &val, 0));
}

static long build_valid(const char *dir) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi main_db, dups, ints, big;
    char k[64], v[9000];
    long items = 0;
    mkdir(dir, 0755);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 8));
    CHECK(mdb_env_set_mapsize(env, 64UL << 20));
    CHECK(mdb_env_open(env, dir, 0, 0644));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &main_db));
    /* Without DUPSORT support the rest of the file is still worth testing: record the
     * failure and go on (dupsort_missing makes the run fail at the end). */
    int rc = mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dups);
    if (rc) {
        printf("FAIL: DUPSORT databases: mdb_dbi_open: %s -- continuing without them\n",
               mdb_strerror(rc));
        dupsort_missing = 1;
    }
    CHECK(mdb_dbi_open(txn, "ints", MDB_CREATE | MDB_INTEGERKEY, &ints));
    CHECK(mdb_dbi_open(txn, "big", MDB_CREATE, &big));
    for (int i = 0; i < 1500; i++) {
        int kl = snprintf(k, sizeof k, "key-%05d", i * 7919 % 1500);
        memset(v, 'a' + i % 26, sizeof v);
        put_s(txn, main_db, k, (size_t)kl, v, (size_t)(i % 120));
        items++;
    }
    for (int i = 0; i < 200 && !dupsort_missing; i++) { /* 200 keys, 1..6 dups, one 400 */
        int kl = snprintf(k, sizeof k, "d%04d", i);
        int ndup = i == 17 ? 400 : 1 + i % 6;
        for (int j = 0; j < ndup; j++) {
            int vl = snprintf(v, sizeof v, "dup-%06d-%d", j * 31 % 1000, i);
            put_s(txn, dups, k, (size_t)kl, v, (size_t)vl);
            items++;
        }
    }
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t key = i * 0x9E3779B97F4A7C15ULL;
        put_s(txn, ints, &key, sizeof key, &i, sizeof i);
        items++;
    }
    for (int i = 0; i < 40; i++) {
        int kl = snprintf(k, sizeof k, "big-%02d", i);
        memset(v, 'A' + i % 26, sizeof v);
        put_s(txn, big, k, (size_t)kl, v, (size_t)(2000 + i * 173));
        items++;
    }
    CHECK(mdb_txn_commit(txn));
    /* A second commit that deletes and rewrites some keys, so the free list is not empty. */
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int i = 0; i < 300; i++) {
        int kl = snprintf(k, sizeof k, "key-%05d", i);
        MDB_val key = {(size_t)kl, k};
        CHECK(mdb_del(txn, main_db, &key, NULL));
        put_s(txn, main_db, k, (size_t)kl, "rewritten", 9);
    }
    CHECK(mdb_txn_commit(txn));
    mdb_env_close(env);
    return items;
}

/* ---- 2. reading everything, in a child ---- */
struct outcome {
    int stage; /* 0 = all done; 1 env_open failed; 2 txn_begin; 3 dbi_open main; 4+ later */
    int rc;
    long items;
    int walk_limit;
};

static long walk_db(MDB_txn *txn, MDB_dbi dbi, int dupsort, long *budget, int *rc_out) {
    MDB_cursor *cur;
    MDB_val k, v;
    long n = 0;
    int rc = mdb_cursor_open(txn, dbi, &cur);
    if (rc) { *rc_out = rc; return 0; }
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        volatile unsigned char sink = 0;
        /* Touch every byte of key and value: a bad pointer must not escape the library. */
        for (size_t i = 0; i < k.mv_size; i++) sink ^= ((unsigned char *)k.mv_data)[i];
        for (size_t i = 0; i < v.mv_size; i += 64) sink ^= ((unsigned char *)v.mv_data)[i];
        (void)sink;
        if (dupsort) {
            size_t cnt;
            int crc = mdb_cursor_count(cur, &cnt);
            if (crc && !*rc_out) *rc_out = crc;
        }
        MDB_val gk = k, gv;
        if (dbi != 0 && k.mv_size > 0 && k.mv_size <= 511) { /* mdb_get refuses dbi 0 */
            int grc = mdb_get(txn, dbi, &gk, &gv);
            if (grc && grc != MDB_NOTFOUND && !*rc_out) *rc_out = grc;
        }
        n++;
        if (--*budget <= 0) break;
    }
    if (rc != MDB_NOTFOUND && rc != 0 && !*rc_out) *rc_out = rc;
    mdb_cursor_close(cur);
    return n;
}

static struct outcome read_everything(const char *dir) {
    struct outcome o = {0, 0, 0, 0};
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi main_db;
    MDB_stat st;
    MDB_envinfo info;
    long budget = WALK_LIMIT;
    int rc;

    if ((rc = mdb_env_create(&env)) != 0) { o.stage = 1; o.rc = rc; return o; }
    mdb_env_set_maxdbs(env, 16);
    rc = mdb_env_open(env, dir, MDB_RDONLY, 0644);
    if (rc) { o.stage = 1; o.rc = rc; mdb_env_close(env); return o; }
    mdb_env_info(env, &info);
    mdb_env_stat(env, &st);
    rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc) { o.stage = 2; o.rc = rc; mdb_env_close(env); return o; }
    rc = mdb_dbi_open(txn, NULL, 0, &main_db);
    if (rc) { o.stage = 3; o.rc = rc; mdb_txn_abort(txn); mdb_env_close(env); return o; }
    int later = 0;
    mdb_stat(txn, main_db, &st);
    o.items += walk_db(txn, main_db, 0, &budget, &later);

    /* Named DBs: every main-DB key whose value is a 48-byte record is a candidate. */
    MDB_cursor *cur;
    MDB_val k, v;
    char names[64][64];
    int nnames = 0;
    if (mdb_cursor_open(txn, main_db, &cur) == 0) {
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0 && nnames < 64;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            if (v.mv_size == 48 && k.mv_size > 0 && k.mv_size < 64 &&
                !memchr(k.mv_data, 0, k.mv_size)) {
                memcpy(names[nnames], k.mv_data, k.mv_size);
                names[nnames][k.mv_size] = 0;
                nnames++;
            }
        }
        mdb_cursor_close(cur);
    }
    for (int i = 0; i < nnames && budget > 0; i++) {
        MDB_dbi dbi;
        unsigned flags = 0;
        rc = mdb_dbi_open(txn, names[i], 0, &dbi);
        if (rc == MDB_INCOMPATIBLE) continue; /* a plain value that happens to be 48 bytes */
        if (rc) { if (!later) later = rc; continue; }
        mdb_dbi_flags(txn, dbi, &flags);
        mdb_stat(txn, dbi, &st);
        o.items += walk_db(txn, dbi, (flags & MDB_DUPSORT) != 0, &budget, &later);
    }
    /* The free list (dbi 0) is readable too; mdb_stat -f relies on that. */
    mdb_stat(txn, 0, &st);
    o.items += walk_db(txn, 0, 0, &budget, &later);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    if (later) { o.stage = 4; o.rc = later; }
    o.walk_limit = budget <= 0;
    return o;
}

/* Expectations a case may carry on top of "no crash, no hang". */
enum expect { ANY = 0, MUST_FAIL_OPEN, MUST_INVALID, MUST_VERSION, MUST_SUCCEED };

static void run_case(const char *name, const unsigned char *buf, size_t len,
                     enum expect expect) {
    char dir[4200];
    int fds[2];
    n_cases++;
    PATHF(dir, "%s/case-%04d", workdir, n_cases);
    mkdir(dir, 0755);
    char path[4300];
    PATHF(path, "%s/data.mdb", dir);
    write_file(path, buf, len);
    if (pipe(fds)) { perror("pipe"); exit(2); }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); exit(2); }
    if (pid == 0) {
        close(fds[0]);
        alarm(HANG_SECONDS);
        struct outcome o = read_everything(dir);
        if (write(fds[1], &o, sizeof o) != (ssize_t)sizeof o) _exit(3);
        _exit(0);
    }
    close(fds[1]);
    struct outcome o;
    ssize_t got = read(fds[0], &o, sizeof o);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    const char *verdict = NULL;
    char why[256];
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        PATHF(why, "%s (signal %d)",
                 sig == SIGALRM ? "HANG" : "CRASH", sig);
        verdict = why;
    } else if (WEXITSTATUS(status) != 0 || got != (ssize_t)sizeof o) {
        PATHF(why, "child exit status %d (sanitizer report or abort?)",
                 WEXITSTATUS(status));
        verdict = why;
    } else if (expect == MUST_SUCCEED && (o.stage != 0 || o.items != expected_items)) {
        PATHF(why, "valid file: stage %d rc %d (%s), %ld items, want %ld",
                 o.stage, o.rc, mdb_strerror(o.rc), o.items, expected_items);
        verdict = why;
    } else if (expect == MUST_FAIL_OPEN && o.stage != 1) {
        PATHF(why, "a foreign file opened (stage %d)", o.stage);
        verdict = why;
    } else if (expect == MUST_INVALID && !(o.stage == 1 && o.rc == MDB_INVALID)) {
        PATHF(why, "want MDB_INVALID from mdb_env_open, got stage %d rc %d",
                 o.stage, o.rc);
        verdict = why;
    } else if (expect == MUST_VERSION && !(o.stage == 1 && o.rc == MDB_VERSION_MISMATCH)) {
        snprintf(why, sizeof why,
                 "want MDB_VERSION_MISMATCH from mdb_env_open, got stage %d rc %d", o.stage,
                 o.rc);
        verdict = why;
    }
    if (verdict) {
        n_failed++;
        printf("FAIL %-40s %s  [seed %" PRIu64 ", file kept in %s]\n", name, verdict, seed,
               dir);
    } else {
        if (o.stage == 0) n_opened++;
        else if (o.stage == 1) n_open_err++;
        else n_later_err++;
        n_walk_limit += o.walk_limit;
        if (getenv("MDB_BADFILE_VERBOSE"))
            printf("ok   %-40s stage %d rc %d %s, %ld items\n", name, o.stage, o.rc,
                   o.rc ? mdb_strerror(o.rc) : "", o.items);
        if (!keep) rm_env_dir(dir);
    }
}

/* ---- case builders ---- */
static unsigned char *copy_orig(void) {
    unsigned char *b = malloc(orig_len);
    memcpy(b, orig, orig_len);
    return b;
}

static void put32(unsigned char *b, size_t off, uint32_t x) { memcpy(b + off, &x, 4); }
static void put16(unsigned char *b, size_t off, uint16_t x) { memcpy(b + off, &x, 2); }
static void put64(unsigned char *b, size_t off, uint64_t x) { memcpy(b + off, &x, 8); }

/* Apply one meta-field edit to meta page m (0 or 1, or 2 = both). */
typedef void (*meta_edit)(unsigned char *page, uint64_t arg);
static void case_meta(const char *name, int which, meta_edit edit, uint64_t arg,
                      enum expect expect) {
    unsigned char *b = copy_orig();
    for (int m = 0; m < 2; m++)
        if (which == 2 || which == m) edit(b + (size_t)m * PSIZE, arg);
    char full[128];
    PATHF(full, "%s/meta%s", name, which == 2 ? "0+1" : which ? "1" : "0");
    run_case(full, b, orig_len, expect);
    free(b);
}

static void e_zero(unsigned char *p, uint64_t a) { (void)a; memset(p, 0, PSIZE); }
static void e_magic(unsigned char *p, uint64_t a) { put32(p, M_MAGIC, (uint32_t)a); }
static void e_version(unsigned char *p, uint64_t a) { put32(p, M_VERSION, (uint32_t)a); }
static void e_psize(unsigned char *p, uint64_t a) { put32(p, M_FREE_DB + D_PAD, (uint32_t)a); }
static void e_mapsize(unsigned char *p, uint64_t a) { put64(p, M_MAPSIZE, a); }
static void e_lastpg(unsigned char *p, uint64_t a) { put64(p, M_LAST_PG, a); }
static void e_txnid(unsigned char *p, uint64_t a) { put64(p, M_TXNID, a); }
static void e_main_root(unsigned char *p, uint64_t a) { put64(p, M_MAIN_DB + D_ROOT, a); }
static void e_free_root(unsigned char *p, uint64_t a) { put64(p, M_FREE_DB + D_ROOT, a); }
static void e_main_depth(unsigned char *p, uint64_t a) { put16(p, M_MAIN_DB + D_DEPTH, (uint16_t)a); }
static void e_main_flags(unsigned char *p, uint64_t a) { put16(p, M_MAIN_DB + D_FLAGS, (uint16_t)a); }
static void e_free_flags(unsigned char *p, uint64_t a) { put16(p, M_FREE_DB + D_FLAGS, (uint16_t)a); }
static void e_main_entries(unsigned char *p, uint64_t a) { put64(p, M_MAIN_DB + D_ENTRIES, a); }
static void e_page_flags(unsigned char *p, uint64_t a) { put16(p, 10, (uint16_t)a); }

static void header_cases(void) {
    char name[128];
    run_case("valid/untouched", orig, orig_len, MUST_SUCCEED);

    /* Truncation to less than two pages: the meta pages themselves are cut. */
    size_t cuts[] = {0, 1, 15, 16, 20, 100, 151, 152, 2048, PSIZE - 1, PSIZE, PSIZE + 1,
                     PSIZE + 20, PSIZE + 151};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        PATHF(name, "truncate/%zu", cuts[i]);
        run_case(name, orig, cuts[i], ANY);
    }
    case_meta("zero", 0, e_zero, 0, ANY);
    case_meta("zero", 1, e_zero, 0, ANY);
    case_meta("zero", 2, e_zero, 0, MUST_FAIL_OPEN);
    uint32_t magics[] = {0, 0xDEC0EFBE /* byte-swapped */, 0xBEEFC0DF, 0xFFFFFFFF};
    for (int i = 0; i < 4; i++) {
        PATHF(name, "magic-%08x", magics[i]);
        case_meta(name, 0, e_magic, magics[i], ANY);
        case_meta(name, 1, e_magic, magics[i], ANY);
        case_meta(name, 2, e_magic, magics[i], MUST_INVALID);
    }
    uint32_t versions[] = {0, 2, 999, 0x01000000, 0xFFFFFFFF};
    for (int i = 0; i < 5; i++) {
        PATHF(name, "version-%u", versions[i]);
        case_meta(name, 0, e_version, versions[i], ANY);
        case_meta(name, 1, e_version, versions[i], ANY);
        case_meta(name, 2, e_version, versions[i], MUST_VERSION);
    }
    /* The P_META flag cleared in both meta page headers. */
    case_meta("meta-pageflag-cleared", 2, e_page_flags, 0x02, MUST_FAIL_OPEN);

    /* Foreign files. */
    size_t sizes[] = {100, PSIZE, 2 * PSIZE, 16 * PSIZE, 300000};
    unsigned char *junk = malloc(300000);
    for (int i = 0; i < 5; i++) {
        for (size_t j = 0; j < sizes[i]; j++) junk[j] = (unsigned char)rnd();
        PATHF(name, "foreign/random-%zu", sizes[i]);
        run_case(name, junk, sizes[i], sizes[i] >= 2 * PSIZE ? MUST_FAIL_OPEN : ANY);
    }
    memset(junk, 0, 300000);
    run_case("foreign/zeros-8192", junk, 2 * PSIZE, MUST_FAIL_OPEN);
    run_case("foreign/zeros-65536", junk, 16 * PSIZE, MUST_FAIL_OPEN);
    memset(junk, 0xFF, 300000);
    run_case("foreign/ff-65536", junk, 16 * PSIZE, MUST_FAIL_OPEN);
    size_t tl = 0;
    while (tl < 20000) tl += (size_t)snprintf((char *)junk + tl, 300000 - tl,
                                              "This is a text file, line %zu.\n", tl);
    run_case("foreign/text", junk, tl, MUST_FAIL_OPEN);
    memset(junk, 0, 300000);
    memcpy(junk, "\177ELF\2\1\1", 7);
    run_case("foreign/elf-header", junk, 3 * PSIZE, MUST_FAIL_OPEN);
    free(junk);
}

static void deep_cases(void) {
    char name[128];
    size_t npages = orig_len / PSIZE;

    /* Truncation inside the data pages: referenced pages beyond the end of the file
     * (real LMDB maps past the end and dies of SIGBUS; so does a cut inside page 1 that
     * leaves meta 1 whole). */
    run_case("truncate-deep/8191", orig, 2 * PSIZE - 1, ANY);
    run_case("truncate-deep/8192", orig, 2 * PSIZE, ANY);
    for (int i = 0; i < 12; i++) {
        size_t cut = 2 * PSIZE + rnd_below(orig_len - 2 * PSIZE);
        if (i < 4) cut = orig_len - (size_t)(i + 1) * PSIZE;
        PATHF(name, "truncate-deep/%zu", cut);
        run_case(name, orig, cut, ANY);
    }
    uint32_t psizes[] = {0, 1, 3, 512, 2048, 8192, 65536, 0x80000000u, 0xFFFFFFFFu};
    for (int i = 0; i < 9; i++) {
        PATHF(name, "psize-%u", psizes[i]);
        case_meta(name, 2, e_psize, psizes[i], ANY);
        case_meta(name, i % 2, e_psize, psizes[i], ANY);
    }
    uint64_t big[] = {0, 1, 2, 3, npages - 1, npages, npages + 1, 1u << 20, 1ULL << 40,
                      UINT64_MAX - 1, UINT64_MAX};
    for (int i = 0; i < 11; i++) {
        PATHF(name, "last_pg-%" PRIu64, big[i]);
        case_meta(name, 2, e_lastpg, big[i], ANY);
        PATHF(name, "main_root-%" PRIu64, big[i]);
        case_meta(name, 2, e_main_root, big[i], ANY);
        PATHF(name, "free_root-%" PRIu64, big[i]);
        case_meta(name, 2, e_free_root, big[i], ANY);
    }
    uint64_t txnids[] = {0, 1, 1ULL << 62, UINT64_MAX};
    for (int i = 0; i < 4; i++) {
        PATHF(name, "txnid-%" PRIu64, txnids[i]);
        case_meta(name, 0, e_txnid, txnids[i], ANY);
        case_meta(name, 1, e_txnid, txnids[i], ANY);
    }
    uint64_t mapsizes[] = {0, 4096, 1ULL << 46, UINT64_MAX};
    for (int i = 0; i < 4; i++) {
        PATHF(name, "mapsize-%" PRIu64, mapsizes[i]);
        case_meta(name, 2, e_mapsize, mapsizes[i], ANY);
    }
    uint16_t depths[] = {0, 1, 31, 32, 33, 0xFFFF};
    for (int i = 0; i < 6; i++) {
        PATHF(name, "main_depth-%u", depths[i]);
        case_meta(name, 2, e_main_depth, depths[i], ANY);
    }
    uint16_t dbflags[] = {0x04, 0x08, 0x10, 0x14, 0x1E, 0xFFFF};
    for (int i = 0; i < 6; i++) {
        PATHF(name, "main_flags-%#x", dbflags[i]);
        case_meta(name, 2, e_main_flags, dbflags[i], ANY);
        PATHF(name, "free_flags-%#x", dbflags[i]);
        case_meta(name, 2, e_free_flags, dbflags[i], ANY);
    }
    case_meta("main_entries-max", 2, e_main_entries, UINT64_MAX, ANY);

    /* Seeded random damage in data pages. */
    for (int i = 0; i < 60; i++) { /* a few bytes anywhere past the metas */
        unsigned char *b = copy_orig();
        int flips = 1 + (int)rnd_below(i < 30 ? 4 : 32);
        for (int f = 0; f < flips; f++)
            b[2 * PSIZE + rnd_below(orig_len - 2 * PSIZE)] ^= (unsigned char)(1 + rnd_below(255));
        PATHF(name, "flip-anywhere/%d(%d bytes)", i, flips);
        run_case(name, b, orig_len, ANY);
        free(b);
    }
    for (int i = 0; i < 50; i++) { /* page headers: pgno, pad, flags, lower/upper */
        unsigned char *b = copy_orig();
        size_t pg = 2 + rnd_below(npages - 2);
        size_t off = pg * PSIZE + rnd_below(16);
        b[off] ^= (unsigned char)(1 + rnd_below(255));
        PATHF(name, "flip-pagehdr/page%zu+%zu", pg, off % PSIZE);
        run_case(name, b, orig_len, ANY);
        free(b);
    }
    for (int i = 0; i < 40; i++) { /* node headers and slot arrays: the first 200 bytes */
        unsigned char *b = copy_orig();
        size_t pg = 2 + rnd_below(npages - 2);
        for (int f = 0; f < 3; f++) {
            size_t off = pg * PSIZE + 16 + rnd_below(184);
            b[off] = (unsigned char)rnd();
        }
        size_t tail = pg * PSIZE + PSIZE - 1 - rnd_below(200); /* node bytes at page end */
        b[tail] = (unsigned char)rnd();
        PATHF(name, "scramble-page/%zu", pg);
        run_case(name, b, orig_len, ANY);
        free(b);
    }
    for (int i = 0; i < 30; i++) { /* meta pages: random bytes inside the 136-byte meta */
        unsigned char *b = copy_orig();
        int m = (int)rnd_below(3);
        for (int f = 0; f < 1 + (int)rnd_below(6); f++) {
            size_t off = 24 + rnd_below(136 - 8); /* keep magic and version */
            if (m != 1) b[off] = (unsigned char)rnd();
            if (m != 0) b[PSIZE + off] = (unsigned char)rnd();
        }
        PATHF(name, "flip-meta/%d(meta %s)", i, m == 2 ? "both" : m ? "1" : "0");
        run_case(name, b, orig_len, ANY);
        free(b);
    }
    for (int i = 0; i < 10; i++) { /* whole pages replaced: zeros, or another page's bytes */
        unsigned char *b = copy_orig();
        size_t pg = 2 + rnd_below(npages - 2);
        if (i % 2) memset(b + pg * PSIZE, 0, PSIZE);
        else memcpy(b + pg * PSIZE, orig + (2 + rnd_below(npages - 2)) * PSIZE, PSIZE);
        PATHF(name, "replace-page/%zu(%s)", pg, i % 2 ? "zeros" : "copy");
        run_case(name, b, orig_len, ANY);
        free(b);
    }
}

int main(int argc, char **argv) {
    progname = argv[0];
    const char *s = getenv("MDB_BADFILE_SEED");
    seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--header-only")) header_only = 1;
        else if (!strcmp(argv[i], "--keep")) keep = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else { fprintf(stderr, "usage: %s [--header-only] [--seed N] [--keep]\n", progname); return 2; }
    }
    rng_state = seed;
    printf("test_badfiles: seed %" PRIu64 " (replay: MDB_BADFILE_SEED=%" PRIu64 ")%s\n", seed,
           seed, header_only ? ", header-level cases only" : "");
    const char *tmp = getenv("TMPDIR");
    PATHF(workdir, "%s/badfiles-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(workdir)) { perror("mkdtemp"); return 2; }

    char valid[4200], path[4300];
    PATHF(valid, "%s/valid", workdir);
    expected_items = build_valid(valid);
    PATHF(path, "%s/data.mdb", valid);
    orig = read_file(path, &orig_len);
    /* The walker also counts the free-list records and the named-DB records of the main DB. */
    struct outcome o = read_everything(valid);
    if (o.stage != 0) {
        printf("FAIL: the valid environment does not read back: stage %d: %s\n", o.stage,
               mdb_strerror(o.rc));
        return 1;
    }
    if (o.items < expected_items + 3) {
        printf("FAIL: the valid environment reads back %ld items, want >= %ld\n", o.items,
               expected_items + 3);
        return 1;
    }
    expected_items = o.items;
    printf("valid file: %zu bytes, %zu pages, %ld items walked\n", orig_len, orig_len / PSIZE,
           expected_items);

    header_cases();
    if (!header_only) deep_cases();

    printf("%d cases: %d failed; %d opened and read through, %d refused at open, %d "
           "errors while reading, %d hit the walk limit\n",
           n_cases, n_failed, n_opened, n_open_err, n_later_err, n_walk_limit);
    if (!keep && n_failed == 0) {
        rm_env_dir(valid);
        rmdir(workdir);
    }
    return n_failed || dupsort_missing ? 1 : 0;
}
