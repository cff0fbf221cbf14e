/*
 * test_meta_torn.c -- a damaged newer meta page: the open falls back to the older one.
 *   test_meta_torn DIR [quick]
 *
 * A workload of commits over plain, DUPSORT and named databases with overflow values and
 * deletes; then commit T is made and the meta page it wrote (page T & 1) is torn against
 * what that page held before (txn T-2's meta) at every byte boundary of the page, both
 * ways (prefix new + suffix old, and the reverse), and damaged at random.  Each image is
 * opened read-only and must:
 *  - open (never MDB_INVALID/MDB_CORRUPTED while the other meta is sound);
 *  - be exactly the page of T-2 (then txn T-1 is in force, nothing is damaged), exactly the
 *    page of T (txn T), or else be reported damaged (mdbcore_env_meta_status) with T-1 in
 *    force, with FALLBACK when the damaged page claims a newer txnid -- or be a mix the
 *    format cannot tell from a real meta: counted and printed, and it must still open,
 *    read and check without a crash (docs/durability.md says which);
 *  - hold exactly the contents of the txn in force; pass the structural checker;
 *    mdb_env_info / mdb_env_stat report that meta's txnid, last page and entries;
 *  - be left byte for byte as it was (a read-only open never writes).
 * Then a writable open and one commit heal the file: both metas hold up again (a fresh
 * open reports nothing damaged, the checker passes, the contents are the snapshot's plus
 * the new key).  Both metas damaged: MDB_INVALID or MDB_CORRUPTED, never a crash.
 *
 * The bad-file suite's meta-field edits, one page at a time: a page reported damaged
 * leaves the other's snapshot, read exactly and passing the checker.  A new file whose
 * page 0 is damaged heals page 0 before its first commit writes page 1.
 *
 * A failed meta write (the fault seam cuts the pwrite short after k bytes, EIO) leaves the
 * old meta byte for byte as it was, for every k; also the whole-page write that heals a
 * damaged slot, and a WRITEMAP meta whose msync fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

#define HEAD 152 /* page header + meta record */

static char base[512], work[512];
static unsigned psize;
/* quick (run.sh under --asan/--quick): tear boundaries 0..HEAD+8 and two past them, where
 * every image equals T's page in the bytes anything reads; 300 random damages */
static int quick;

/* ---- files ---- */

static uint8_t *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY);
    REQUIRE(fd >= 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    uint8_t *b = malloc((size_t)st.st_size + 1);
    REQUIRE(b);
    REQUIRE(pread(fd, b, (size_t)st.st_size, 0) == st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return b;
}

static void write_file(const char *path, const uint8_t *b, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, b, len) == (ssize_t)len);
    close(fd);
}

static void data_path(char *out, size_t n, const char *dir)
{
    snprintf(out, n, "%s/data.mdb", dir);
}

/* Put `img` in place as work/data.mdb, with no lock file (as after a reboot). */
static void install(const uint8_t *img, size_t len)
{
    char p[600];
    mdbtest_unlink_env(work);
    data_path(p, sizeof p, work);
    write_file(p, img, len);
}

/* ---- contents ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    h = (h ^ n) * 0x100000001b3ull;
    return h;
}

static uint64_t hash_db(MDB_txn *t, MDB_dbi d, uint64_t h)
{
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_cursor_open(t, d, &c));
    int rc;
    while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
        h = fnv(h, k.mv_data, k.mv_size);
        h = fnv(h, v.mv_data, v.mv_size);
    }
    /* a mix the open cannot tell from a real meta may read as damaged: no crash, and the
     * error is part of what was read */
    if (rc != MDB_NOTFOUND)
        h = fnv(h, &rc, sizeof rc);
    mdb_cursor_close(c);
    return h;
}

/* Every record of the main DB and of the named DBs "dups" and "plain", in order. */
static uint64_t contents(MDB_env *env)
{
    MDB_txn *t;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
    MDB_dbi m, d, p;
    CHECK(mdb_dbi_open(t, NULL, 0, &m));
    uint64_t h = hash_db(t, m, 0xcbf29ce484222325ull);
    if (mdb_dbi_open(t, "dups", 0, &d) == 0)
        h = hash_db(t, d, h ^ 1);
    if (mdb_dbi_open(t, "plain", 0, &p) == 0)
        h = hash_db(t, p, h ^ 2);
    mdb_txn_abort(t);
    return h;
}

static MDB_env *open_env(unsigned flags, int *rc_out)
{
    MDB_env *env = mdbtest_env(64u << 20, 4);
    int rc = mdb_env_open(env, work, flags, 0644);
    if (rc) {
        mdb_env_close(env);
        env = NULL;
    }
    *rc_out = rc;
    return env;
}

/* A new, empty environment in work, opened with flags. */
static MDB_env *new_env(unsigned flags)
{
    mkdir(work, 0755);
    mdbtest_unlink_env(work);
    int rc;
    MDB_env *env = open_env(flags, &rc);
    REQUIRE(env);
    return env;
}

static int to_stderr(const char *msg, void *ctx)
{
    (void)ctx;
    return fputs(msg, stderr) < 0;
}

/* ---- the workload ---- */

static void commit_round(MDB_env *env, int r)
{
    MDB_txn *t;
    MDB_dbi m, d, p;
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, NULL, 0, &m));
    CHECK(mdb_dbi_open(t, "dups", MDB_CREATE | MDB_DUPSORT, &d));
    CHECK(mdb_dbi_open(t, "plain", MDB_CREATE, &p));
    static char big[9000];
    memset(big, 'a' + r % 26, sizeof big);
    for (int i = 0; i < 60; i++) {
        char kb[32], vb[32];
        int n = (r * 37 + i * 11) % 400;
        snprintf(kb, sizeof kb, "key%05d", n);
        snprintf(vb, sizeof vb, "v%d.%d", r, i);
        MDB_val k = {strlen(kb), kb}, v = {strlen(vb), vb};
        if ((i + r) % 7 == 0) {
            int rc = mdb_del(t, p, &k, NULL);
            REQUIRE(rc == 0 || rc == MDB_NOTFOUND);
        } else {
            CHECK(mdb_put(t, p, &k, &v, 0));
        }
        if (i % 3 == 0)
            CHECK(mdb_put(t, d, &k, &v, 0));
        if (i % 20 == 0) {
            MDB_val bv = {(size_t)(3000 + (r * 997 + i) % 6000), big};
            CHECK(mdb_put(t, m, &k, &bv, 0));
        }
    }
    CHECK(mdb_txn_commit(t));
}

/* One put of key=val into the main DB, committed: the commit's return code. */
static int put_commit(MDB_env *env, const char *key, const char *val)
{
    MDB_txn *t;
    MDB_dbi m = mdbtest_begin_main(env, &t);
    MDB_val k = {strlen(key), (void *)key}, v = {strlen(val), (void *)val};
    CHECK(mdb_put(t, m, &k, &v, 0));
    return mdb_txn_commit(t);
}

/* The file opened with flags (it must open), and what the open made of its metas. */
static MDB_env *open_status(unsigned flags, mdbcore_meta_status *st)
{
    int rc;
    MDB_env *env = open_env(flags, &rc);
    REQUIRE(env);
    CHECK(mdbcore_env_meta_status(env, st));
    return env;
}

/* The file opened read-only: both metas sound, txn `want` in force. */
static MDB_env *open_sound(txnid_t want)
{
    mdbcore_meta_status st;
    MDB_env *env = open_status(MDB_RDONLY, &st);
    EXPECT_EQ(st.flags, 0);
    EXPECT_EQ(st.used_txnid, want);
    return env;
}

/* The structural checker finds nothing wrong. */
static int check_clean(MDB_env *env)
{
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    mdbcore_check_report_free(&rep);
    return rc == 0;
}

static txnid_t page_txnid(const uint8_t *page)
{
    txnid_t t;
    memcpy(&t, page + 144, sizeof t);
    return t;
}

/* ---- one image ---- */

typedef struct expect {
    txnid_t told, tnew;     /* T-1 and T */
    uint64_t cold, cnew;    /* their contents */
    const uint8_t *pold;    /* page T & 1 before T (T-2's meta) */
    const uint8_t *pnew;    /* the same page after T */
    unsigned slot;          /* T & 1 */
    uint8_t *img;           /* the whole file after T */
    size_t len;             /* its length */
} expect;

static struct {
    unsigned images, as_old, as_new, detected, fallback, older_mix, lowered, undetected,
        undetected_check_fails, healed;
} tally;

/* What opening `img` must give; returns 1 when it opened from a damaged-meta fallback. */
static int check_image(const expect *e, const uint8_t *img, int heal,
                       const char *what, size_t at)
{
    tally.images++;
    install(img, e->len);
    int rc;
    MDB_env *env = open_env(MDB_RDONLY, &rc);
    if (!env) {
        EXPECT_MSG(0, "%s at %zu: open failed: %s", what, at, mdb_strerror(rc));
        return 0;
    }
    mdbcore_meta_status st;
    CHECK(mdbcore_env_meta_status(env, &st));
    const uint8_t *page = img + (size_t)e->slot * psize;
    int same_old = memcmp(page, e->pold, HEAD) == 0;
    int same_new = memcmp(page, e->pnew, HEAD) == 0;
    uint64_t h = contents(env);
    MDB_envinfo info;
    MDB_stat es;
    CHECK(mdb_env_info(env, &info));
    CHECK(mdb_env_stat(env, &es));
    meta_record used;
    memcpy(&used, img + (size_t)st.used_page * psize + 16, sizeof used);
    EXPECT_EQ(info.me_last_txnid, st.used_txnid);
    EXPECT_EQ(info.me_last_pgno, used.last_pg);
    EXPECT_EQ(es.ms_entries, used.dbs[MAIN_DBI].entries);
    mdbcore_check_report rep;
    int crc = mdbcore_check_env(env, &rep);
    int result = 0;
    if (same_old || same_new) {
        tally.as_old += same_old;
        tally.as_new += same_new;
        EXPECT_EQ(st.flags, 0);
        EXPECT_EQ(st.used_txnid, same_new ? e->tnew : e->told);
        EXPECT_MSG(h == (same_new ? e->cnew : e->cold), "%s at %zu: contents", what, at);
        EXPECT_MSG(crc == 0, "%s at %zu: check failed", what, at);
    } else if ((st.flags & MDBCORE_META_DAMAGED) && st.used_page == (int)e->slot) {
        /* damage lowered page T & 1's txnid, away from T-1's but with the same parity: of
         * two metas that both hold up, the higher txnid is not trusted -- here the sound
         * page.  The damaged page is in force: a mix, as below. */
        tally.lowered++;
        tally.undetected++;
        tally.undetected_check_fails += crc != 0;
        EXPECT(page_txnid(page) < e->told);
    } else if (st.flags & MDBCORE_META_DAMAGED) {
        tally.detected++;
        result = 1;
        EXPECT_EQ(st.damaged_page, (int)e->slot);
        EXPECT_EQ(st.used_txnid, e->told);
        EXPECT_EQ(st.used_page, (int)!e->slot);
        int claims_newer = page_txnid(page) > e->told;
        EXPECT_MSG(!claims_newer || (st.flags & MDBCORE_META_FALLBACK),
                   "%s at %zu: a damaged newer meta is not reported as a fallback", what, at);
        tally.fallback += (st.flags & MDBCORE_META_FALLBACK) != 0;
        EXPECT_MSG(h == e->cold, "%s at %zu: contents are not T-1's", what, at);
        EXPECT_MSG(crc == 0, "%s at %zu: check failed after a fallback", what, at);
        if (crc)
            mdbcore_check_report_print(&rep, to_stderr, NULL);
    } else if (st.used_txnid == e->told) {
        /* the damaged page claims an older txn than T-1 and holds up: T-1 is in force, as
         * it must be, and the next commit writes over the page */
        tally.older_mix++;
        EXPECT_EQ(st.flags, 0);
        EXPECT_MSG(h == e->cold, "%s at %zu: contents are not T-1's", what, at);
        EXPECT_MSG(crc == 0, "%s at %zu: check failed", what, at);
    } else {
        /* a mix that claims txn T and holds up as a meta: without a checksum the format
         * cannot tell it from T's own (docs/durability.md); it opens, reads and checks
         * without a crash, and the structural checker finds what does not add up */
        tally.undetected++;
        tally.undetected_check_fails += crc != 0;
        EXPECT_EQ(st.used_txnid, e->tnew);
        if (getenv("MDBTEST_VERBOSE")) {
            fprintf(stderr, "undetected %s at %zu: txn %llu, check %d, bytes changed:", what,
                    at, (unsigned long long)st.used_txnid, crc);
            for (size_t i = 0; i < HEAD; i++)
                if (page[i] != e->pnew[i])
                    fprintf(stderr, " %zu", i);
            fprintf(stderr, "\n");
        }
    }
    mdbcore_check_report_free(&rep);
    mdb_env_close(env);
    /* a read-only open wrote nothing */
    char p[600];
    data_path(p, sizeof p, work);
    size_t len2;
    uint8_t *after = read_file(p, &len2);
    EXPECT_MSG(len2 == e->len && memcmp(after, img, e->len) == 0,
               "%s at %zu: read-only open wrote", what, at);
    free(after);

    if (result && heal) {
        /* one commit heals: both metas hold up again */
        env = open_env(0, &rc);
        REQUIRE(env);
        CHECK(put_commit(env, "zheal", "ok"));
        CHECK(mdbcore_env_meta_status(env, &st));
        EXPECT(st.flags & MDBCORE_META_HEALED);
        EXPECT(!(st.flags & (MDBCORE_META_DAMAGED | MDBCORE_META_FALLBACK)));
        mdb_env_close(env);
        env = open_status(MDB_RDONLY, &st);
        EXPECT_EQ(st.flags, 0);
        EXPECT_EQ(st.damaged_page, -1);
        EXPECT_EQ(st.used_txnid, e->told + 1);
        EXPECT(check_clean(env));
        MDB_txn *rt;
        MDB_dbi m;
        MDB_val k = {5, "zheal"}, v;
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
        CHECK(mdb_dbi_open(rt, NULL, 0, &m));
        EXPECT_EQ(mdb_get(rt, m, &k, &v), 0);
        mdb_txn_abort(rt);
        mdb_env_close(env);
        tally.healed++;
    }
    return result;
}

/* e->img with its own copy, to damage */
static uint8_t *image_copy(const expect *e)
{
    uint8_t *img = malloc(e->len);
    REQUIRE(img);
    memcpy(img, e->img, e->len);
    return img;
}

static void expect_free(expect *e)
{
    free(e->img);
    free((void *)e->pold);
    free((void *)e->pnew);
}

static void build(expect *e)
{
    char p[600];
    mkdir(base, 0755);
    mdbtest_unlink_env(base);
    MDB_env *env = mdbtest_env(64u << 20, 4);
    CHECK(mdb_env_open(env, base, 0, 0644));
    for (int r = 0; r < 12; r++)
        commit_round(env, r);
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    e->told = info.me_last_txnid;
    e->tnew = e->told + 1;
    e->slot = (unsigned)(e->tnew & 1);
    MDB_stat st;
    CHECK(mdb_env_stat(env, &st));
    psize = st.ms_psize;
    data_path(p, sizeof p, base);
    size_t lold;
    uint8_t *iold = read_file(p, &lold);
    uint8_t *pold = malloc(psize);
    memcpy(pold, iold + (size_t)e->slot * psize, psize);
    free(iold);
    commit_round(env, 12);
    mdb_env_close(env);
    e->img = read_file(p, &e->len);
    uint8_t *pnew = malloc(psize);
    memcpy(pnew, e->img + (size_t)e->slot * psize, psize);
    e->pold = pold;
    e->pnew = pnew;
    REQUIRE(page_txnid(pold) == e->told - 1 && page_txnid(pnew) == e->tnew);

    /* contents of T and of T-1 (the image with page T & 1 as it was) */
    install(e->img, e->len);
    int rc;
    env = open_env(MDB_RDONLY, &rc);
    REQUIRE(env);
    e->cnew = contents(env);
    mdb_env_close(env);
    uint8_t *img = image_copy(e);
    memcpy(img + (size_t)e->slot * psize, pold, psize);
    install(img, e->len);
    env = open_env(MDB_RDONLY, &rc);
    REQUIRE(env);
    e->cold = contents(env);
    mdb_env_close(env);
    free(img);
    REQUIRE(e->cold != e->cnew);
}

static void t_torn_every_byte(void)
{
    expect e;
    build(&e);
    uint8_t *img = malloc(e.len);
    memset(&tally, 0, sizeof tally);
    for (int dir = 0; dir < 2; dir++) {
        const uint8_t *head = dir ? e.pold : e.pnew, *tail = dir ? e.pnew : e.pold;
        for (size_t b = 0; b <= psize; b = (quick && b == HEAD + 8) ? psize / 2
                                           : (quick && b == psize / 2) ? psize : b + 1) {
            memcpy(img, e.img, e.len);
            uint8_t *page = img + (size_t)e.slot * psize;
            memcpy(page, head, b);
            memcpy(page + b, tail + b, psize - b);
            /* heal from a sample of the detected ones: every commit path is the same */
            check_image(&e, img, b % 5 == 0, dir ? "old+new" : "new+old", b);
        }
    }
    printf("torn at %s byte of page %u, both ways: %u images: %u the old page, %u the new "
           "page, %u detected as damaged (%u reported as fallback), %u older-looking mixes "
           "(T-1 in force), %u mixes that pass for txn T (the checker flags %u); %u healed by "
           "one commit\n",
           quick ? "every meta" : "every", e.slot, tally.images, tally.as_old, tally.as_new,
           tally.detected, tally.fallback, tally.older_mix, tally.undetected,
           tally.undetected_check_fails, tally.healed);
    EXPECT(tally.detected > 0);
    /* Every commit of this workload changes both trees, so T-1 freed the roots of T-2:
     * a mix that claims T with any root of T-2 has a root the older meta's txn freed, and
     * the other mixes break the per-page checks.  None passes for T. */
    EXPECT_EQ(tally.undetected, 0);
    free(img);
    expect_free(&e);
}

static void t_random_damage(void)
{
    expect e;
    build(&e);
    uint8_t *img = malloc(e.len);
    memset(&tally, 0, sizeof tally);
    unsigned long long s = MDBTEST_XORSHIFT_SEED;
    for (int i = 0; i < (quick ? 300 : 1500); i++) {
        memcpy(img, e.img, e.len);
        uint8_t *page = img + (size_t)e.slot * psize;
        /* a run of random bytes, or scattered flipped bits, mostly where the meta is */
        unsigned kind = (unsigned)(mdbtest_xorshift(&s) % 3);
        size_t span = (mdbtest_xorshift(&s) % 8) ? HEAD : psize;
        if (kind == 0) {
            size_t at = mdbtest_xorshift(&s) % span;
            size_t n = 1 + mdbtest_xorshift(&s) % 32;
            for (size_t j = at; j < at + n && j < psize; j++)
                page[j] = (uint8_t)mdbtest_xorshift(&s);
        } else if (kind == 1) {
            int flips = 1 + (int)(mdbtest_xorshift(&s) % 4);
            for (int f = 0; f < flips; f++) {
                size_t bit = mdbtest_xorshift(&s) % (span * 8);
                page[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            }
        } else {
            size_t at = mdbtest_xorshift(&s) % span;
            int fill = (mdbtest_xorshift(&s) & 1) ? 0 : 0xff;
            size_t n = 1 + mdbtest_xorshift(&s) % 64;
            memset(page + at, fill, n < psize - at ? n : psize - at);
        }
        check_image(&e, img, i % 10 == 0, "random damage", (size_t)i);
    }
    printf("random damage to page %u: %u images: %u unchanged where it matters, %u detected as "
           "damaged (%u reported as fallback), %u older-looking (T-1 in force), %u with a lowered "
           "txnid (T in force), %u pass for txn T (the checker flags %u); %u healed by one "
           "commit\n",
           e.slot, tally.images, tally.as_old + tally.as_new, tally.detected, tally.fallback,
           tally.older_mix, tally.lowered, tally.undetected, tally.undetected_check_fails, tally.healed);
    EXPECT(tally.detected > 0);
    free(img);
    expect_free(&e);
}

/* The meta-field edits of the bad-file suite (tests/c/badfile), one meta page at a time:
 * when the open reports that page damaged, the other meta's snapshot is read exactly and
 * the structural checker accounts for every page; when it does not, the open may fail but
 * never crashes. */
static void t_meta_field_edits(void)
{
    expect e;
    build(&e);
    static const struct {
        size_t off, width;
        uint64_t val;
    } edits[] = {
        {0, 8, 7},           {10, 2, 0},         {10, 2, 0x0a},       {16, 4, 0},
        {20, 4, 2},          {40, 4, 512},       {40, 4, 3000},       {32, 8, 0},
        {32, 8, ~0ull},      {136, 8, 0},        {136, 8, 1u << 30},  {136, 8, ~0ull},
        {144, 8, 0},         {144, 8, ~0ull},    {144, 8, 1ull << 40}, {128, 8, 0},
        {128, 8, 1},         {128, 8, 99999},    {80, 8, 0},          {80, 8, 2},
        {94, 2, 0},          {94, 2, 7},         {94, 2, 200},        {92, 2, 0x8000},
        {44, 2, 0x04},       {120, 8, 0},        {120, 8, ~0ull},     {72, 8, 12345},
    };
    unsigned opened = 0, refused = 0;
    for (unsigned slot = 0; slot < 2; slot++) {
        for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
            uint8_t *img = image_copy(&e);
            memcpy(img + (size_t)slot * psize + edits[i].off, &edits[i].val, edits[i].width);
            install(img, e.len);
            int rc;
            MDB_env *env = open_env(MDB_RDONLY, &rc);
            if (!env) {
                refused++;
                EXPECT_MSG(rc == MDB_INVALID || rc == MDB_CORRUPTED ||
                               rc == MDB_VERSION_MISMATCH,
                           "meta %u edit %zu: %s", slot, i, mdb_strerror(rc));
                free(img);
                continue;
            }
            opened++;
            mdbcore_meta_status st;
            CHECK(mdbcore_env_meta_status(env, &st));
            if (st.flags & MDBCORE_META_DAMAGED) {
                EXPECT_EQ(st.damaged_page, (int)slot);
                /* page T & 1 damaged: T-1 is read; page (T-1) & 1: T */
                uint64_t want = slot == e.slot ? e.cold : e.cnew;
                EXPECT_MSG(contents(env) == want, "meta %u edit %zu: contents", slot, i);
                EXPECT_MSG(check_clean(env), "meta %u edit %zu: check", slot, i);
            } else {
                (void)contents(env); /* an edit that leaves a plausible meta: no crash */
            }
            mdb_env_close(env);
            free(img);
        }
    }
    printf("meta-field edits, one page at a time: %u opened, %u refused\n", opened, refused);
    expect_free(&e);
}

/* Both metas damaged: an error, never a crash. */
static void t_both_damaged(void)
{
    expect e;
    build(&e);
    for (int i = 0; i < 200; i++) {
        uint8_t *img = image_copy(&e);
        for (unsigned slot = 0; slot < 2; slot++) {
            uint8_t *page = img + (size_t)slot * psize;
            /* the magic, the txnid's slot, a root past the file, or the root's page kind */
            switch ((i + slot) % 4) {
            case 0: page[16] ^= 0x40; break;
            case 1: page[144] ^= 1; break;
            case 2: memset(page + 128, 0x7f, 8); break;
            default: page[40 + 48 + 46 - 40] ^= 3; break; /* MAIN's depth */
            }
        }
        install(img, e.len);
        int rc;
        MDB_env *env = open_env(MDB_RDONLY, &rc);
        EXPECT_MSG(!env && (rc == MDB_INVALID || rc == MDB_CORRUPTED),
                   "both metas damaged (%d): %s", i, env ? "opened" : mdb_strerror(rc));
        if (env)
            mdb_env_close(env);
        free(img);
    }
    expect_free(&e);
}

/* The meta write is cut short after k bytes (EIO): the old meta stays byte for byte. */
static void t_short_meta_write(void)
{
    char p[600];
    for (unsigned k = 1; k < 120; k += (k < 12 ? 1 : 7)) {
        int rc;
        MDB_env *env = new_env(0);
        for (int r = 0; r < 3; r++)
            commit_round(env, r);
        MDB_envinfo info;
        CHECK(mdb_env_info(env, &info));
        unsigned slot = (unsigned)((info.me_last_txnid + 1) & 1);
        MDB_stat st;
        CHECK(mdb_env_stat(env, &st));
        data_path(p, sizeof p, work);
        size_t len;
        uint8_t *before = read_file(p, &len);
        uint8_t old[HEAD];
        memcpy(old, before + (size_t)slot * st.ms_psize, HEAD);
        free(before);
        /* data pages go out with pwritev: the commit's first pwrite is its meta */
        CHECK(mdbcore_fault_short_nth(1, k, EIO));
        rc = put_commit(env, "knew", "new");
        unsigned long injected = mdbcore_fault_injected();
        mdbcore_fault_reset();
        EXPECT_EQ(rc, EIO);
        EXPECT_EQ(injected, 1);
        MDB_txn *t;
        EXPECT_RC(mdb_txn_begin(env, NULL, 0, &t), MDB_PANIC);
        uint8_t *after = read_file(p, &len);
        EXPECT_MSG(memcmp(after + (size_t)slot * st.ms_psize, old, HEAD) == 0,
                   "meta write cut after %u bytes: page %u is not what it was", k, slot);
        free(after);
        mdb_env_close(env);
        mdb_env_close(open_sound(info.me_last_txnid));
    }
}

/* The whole-page write over a damaged slot, cut short: the damaged bytes stay as they were,
 * and the file still opens from the sound meta. */
static void t_short_heal_write(void)
{
    expect e;
    build(&e);
    uint8_t *page = e.img + (size_t)e.slot * psize;
    page[16] ^= 0x01; /* the magic */
    for (unsigned k = 1; k < psize; k = k * 3 + 1) {
        install(e.img, e.len);
        mdbcore_meta_status ms;
        MDB_env *env = open_status(0, &ms);
        EXPECT(ms.flags & MDBCORE_META_FALLBACK);
        int rc;
        CHECK(mdbcore_fault_short_nth(1, k, EIO));
        rc = put_commit(env, "knew", "new");
        mdbcore_fault_reset();
        EXPECT_EQ(rc, EIO);
        mdb_env_close(env);
        char p[600];
        data_path(p, sizeof p, work);
        size_t l2;
        uint8_t *after = read_file(p, &l2);
        EXPECT_MSG(memcmp(after + (size_t)e.slot * psize, page, psize) == 0,
                   "healing write cut after %u bytes changed the page", k);
        free(after);
        env = open_env(MDB_RDONLY, &rc);
        EXPECT_MSG(env != NULL, "reopen after a failed heal: %s", mdb_strerror(rc));
        if (env) {
            EXPECT_EQ(contents(env), e.cold);
            mdb_env_close(env);
        }
    }
    expect_free(&e);
}

/* WRITEMAP: the meta's msync fails; the page cache (what the file reads) keeps the old meta. */
static void t_writemap_msync_fails(void)
{
    char p[600];
    int rc;
    MDB_env *env = new_env(MDB_WRITEMAP);
    for (int r = 0; r < 3; r++)
        commit_round(env, r);
    MDB_stat est;
    CHECK(mdb_env_stat(env, &est));
    psize = est.ms_psize;
    /* msyncs per commit: the last one is the meta's */
    mdbcore_fault_install();
    unsigned long before = mdbcore_fault_calls(MDBCORE_FAULT_MSYNC);
    commit_round(env, 3);
    unsigned long per = mdbcore_fault_calls(MDBCORE_FAULT_MSYNC) - before;
    REQUIRE(per >= 1);
    MDB_envinfo info;
    CHECK(mdb_env_info(env, &info));
    unsigned slot = (unsigned)((info.me_last_txnid + 1) & 1);
    data_path(p, sizeof p, work);
    size_t len;
    uint8_t *img = read_file(p, &len);
    uint8_t old[HEAD];
    memcpy(old, img + (size_t)slot * psize, HEAD);
    free(img);
    CHECK(mdbcore_fault_fail_nth(MDBCORE_FAULT_MSYNC, per, EIO));
    rc = put_commit(env, "knew", "new");
    mdbcore_fault_reset();
    EXPECT_EQ(rc, EIO);
    img = read_file(p, &len);
    EXPECT_MSG(memcmp(img + (size_t)slot * psize, old, HEAD) == 0,
               "WRITEMAP: a failed meta msync left the new meta in the page cache");
    free(img);
    mdb_env_close(env);
}

/* A new file (both metas txnid 0) whose page 0 is damaged: page 1 is used; the first
 * commit (txnid 1, page 1) first copies page 1's meta over page 0, so that at no point is
 * page 1 the only sound meta while it is being written. */
static void t_new_file_page0_damaged(void)
{
    char p[600];
    MDB_env *env = new_env(0);
    mdb_env_close(env);
    data_path(p, sizeof p, work);
    size_t len;
    uint8_t *img = read_file(p, &len);
    img[16] ^= 0xff; /* page 0's magic */
    install(img, len);
    mdbcore_meta_status st;
    env = open_status(0, &st);
    EXPECT(st.flags & MDBCORE_META_FALLBACK);
    EXPECT_EQ(st.damaged_page, 0);
    EXPECT_EQ(st.used_page, 1);
    EXPECT_EQ(st.used_txnid, 0);
    /* the first meta write of the commit is the copy into page 0: make the second fail */
    CHECK(mdbcore_fault_short_nth(2, 40, EIO));
    EXPECT_EQ(put_commit(env, "one", "1"), EIO);
    mdbcore_fault_reset();
    mdb_env_close(env);
    /* page 0 was healed with txn 0's meta, page 1 put back: both sound, both txnid 0 */
    env = open_status(0, &st);
    EXPECT_EQ(st.flags, 0);
    EXPECT_EQ(st.used_txnid, 0);
    CHECK(put_commit(env, "one", "1"));
    mdb_env_close(env);
    env = open_sound(1);
    EXPECT(check_clean(env));
    mdb_env_close(env);
    free(img);
}

/* A new file cut short after page 0: meta 1 lies past the end of the file.  The open
 * uses meta 0 without reading page 1 through the map (a SIGBUS there: the fuzzer's
 * finding), and the first commit writes page 1 whole. */
static void t_meta1_past_end_of_file(void)
{
    char p[600];
    MDB_env *env = new_env(0);
    mdb_env_close(env);
    data_path(p, sizeof p, work);
    size_t len;
    uint8_t *img = read_file(p, &len);
    REQUIRE(len == 2 * (size_t)psize);
    install(img, psize);
    for (int pass = 0; pass < 2; pass++) {
        mdbcore_meta_status st;
        env = open_status(pass ? 0 : MDB_RDONLY, &st);
        EXPECT(st.flags & MDBCORE_META_FALLBACK);
        EXPECT_EQ(st.damaged_page, 1);
        EXPECT_EQ(st.used_txnid, 0);
        EXPECT(check_clean(env));
        EXPECT_EQ(contents(env), contents(env));
        if (pass) {
            CHECK(put_commit(env, "one", "1"));
        }
        mdb_env_close(env);
    }
    mdb_env_close(open_sound(1));
    free(img);
}

/* Another process (LMDB trusts the larger txnid) may publish the damaged page's txnid in
 * the lock file: a read txn here still reads the meta in force, and says so. */
static void t_lock_file_names_damaged_page(void)
{
    expect e;
    build(&e);
    e.img[(size_t)e.slot * psize + 16] ^= 0x01; /* only the magic: the rest is T's */
    install(e.img, e.len);
    int rc;
    MDB_env *env = open_env(0, &rc);
    REQUIRE(env);
    char lp[600];
    PATHF(lp, "%s/lock.mdb", work);
    int fd = open(lp, O_RDWR);
    REQUIRE(fd >= 0);
    txnid_t t = e.tnew;
    REQUIRE(pwrite(fd, &t, sizeof t, 48) == (ssize_t)sizeof t); /* mti_txnid */
    close(fd);
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    EXPECT_EQ(mdb_txn_id(txn), e.told);
    mdb_txn_abort(txn);
    EXPECT_EQ(contents(env), e.cold);
    mdb_env_close(env);
    expect_free(&e);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    mkdir(argv[1], 0755);
    quick = argc > 2 && !strcmp(argv[2], "quick");
    PATHF(base, "%s/base", argv[1]);
    PATHF(work, "%s/work", argv[1]);
    mkdir(work, 0755);
    TEST_RUN(t_short_meta_write);
    TEST_RUN(t_writemap_msync_fails);
    TEST_RUN(t_torn_every_byte);
    TEST_RUN(t_random_damage);
    TEST_RUN(t_meta_field_edits);
    TEST_RUN(t_both_damaged);
    TEST_RUN(t_short_heal_write);
    TEST_RUN(t_new_file_page0_damaged);
    TEST_RUN(t_lock_file_names_damaged_page);
    TEST_RUN(t_meta1_past_end_of_file);
    TEST_DONE();
}
