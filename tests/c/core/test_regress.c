/*
 * test_regress.c -- regressions for behaviour where we once differed from LMDB 0.9.
 * Each case states LMDB's observable behaviour; the file also builds against Debian's
 * liblmdb (cc test_regress.c -llmdb) to confirm the expectations on the real thing.
 *   test_regress WORKDIR
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbtest.h"

static const char *base;
static char dirbuf[4096];

static const char *fresh_dir(const char *name)
{
    snprintf(dirbuf, sizeof(dirbuf), "%s/%s", base, name);
    mkdir(dirbuf, 0755);
    mdbtest_unlink_env(dirbuf);
    return dirbuf;
}

static MDB_env *open_env(const char *name, size_t mapsize, unsigned maxdbs, unsigned flags)
{
    MDB_env *env = mdbtest_env(mapsize, maxdbs);
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
    REQUIRE(info.me_mapaddr == NULL);
    MDB_txn *txn;
    MDB_dbi dbi = mdbtest_begin_main(env, &txn);
    MDB_val k = {1, "k"}, v = {1, "v"};
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_env_info(env, &info));
    REQUIRE(info.me_mapaddr == NULL);
    mdb_env_close(env);

    /* made with FIXEDMAP: the address is recorded and reported */
    env = open_env("mapaddr-fixed", 0, 0, MDB_FIXEDMAP);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_put(txn, dbi, &k, &v, 0));
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_env_info(env, &info));
    REQUIRE(info.me_mapaddr != NULL);
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
    REQUIRE(info.me_mapsize >= 2 * 4096);
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    mdb_txn_abort(txn);
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    MDB_val k = {1, "k"}, v = {1, "v"};
    CHECK_RC(mdb_put(txn, dbi, &k, &v, 0), MDB_MAP_FULL);
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
    dbi = mdbtest_read_main(env, &txn);
    MDB_val kk = {9, "key001999"}, got;
    CHECK(mdb_get(txn, dbi, &kk, &got));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    puts("tiny map: raised to the used size; begin works, a put that needs room is MAP_FULL");
}

/* DUPFIXED with 1-byte values: on LEAF2 sub-pages lower grows 2 bytes per value while the
 * value takes 1, so upper runs past the sub-page size; that is LMDB's layout, not damage.
 * Fills keys with 1..256 values (sub-pages of every size), deletes some, and compares
 * everything with a model, in the same txn and after reopening. */
static unsigned char model[64][256];

static void check_model(MDB_txn *txn, MDB_dbi dbi)
{
    MDB_cursor *c;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    for (int k = 0; k < 64; k++) {
        char kb[8];
        MDB_val key = {(size_t)snprintf(kb, sizeof(kb), "k%02d", k), kb}, val;
        size_t want = 0, cnt;
        for (int v = 0; v < 256; v++)
            want += model[k][v];
        int rc = mdb_cursor_get(c, &key, &val, MDB_SET_KEY);
        if (!want) {
            CHECK_RC(rc, MDB_NOTFOUND);
            continue;
        }
        CHECK(rc);
        CHECK(mdb_cursor_count(c, &cnt));
        REQUIRE(cnt == want);
        int v = -1;
        for (size_t j = 0; j < want; j++) {
            if (j)
                CHECK(mdb_cursor_get(c, &key, &val, MDB_NEXT_DUP));
            REQUIRE(val.mv_size == 1);
            int got = *(unsigned char *)val.mv_data;
            REQUIRE(got > v && model[k][got]);
            v = got;
        }
        CHECK_RC(mdb_cursor_get(c, &key, &val, MDB_NEXT_DUP), MDB_NOTFOUND);
        /* the packed form: GET_MULTIPLE hands back the values as one array */
        CHECK(mdb_cursor_get(c, &key, &val, MDB_SET_KEY));
        CHECK(mdb_cursor_get(c, &key, &val, MDB_GET_MULTIPLE));
        REQUIRE(val.mv_size == want);
    }
    mdb_cursor_close(c);
}

static void dupfixed_1byte(void)
{
    MDB_env *env = open_env("dupfixed1", 1 << 24, 4, 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    unsigned seed = 7;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "f", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &dbi));
    for (int k = 0; k < 64; k++) {
        char kb[8];
        MDB_val key = {(size_t)snprintf(kb, sizeof(kb), "k%02d", k), kb};
        int n = k < 8 ? k + 1 : (k * 37) % 257;
        for (int j = 0; j < n; j++) {
            seed = seed * 1103515245u + 12345u;
            unsigned char b = (unsigned char)(j % 2 ? (seed >> 16) : (unsigned)j);
            MDB_val val = {1, &b};
            int rc = mdb_put(txn, dbi, &key, &val, MDB_NODUPDATA);
            REQUIRE(rc == 0 || (rc == MDB_KEYEXIST && model[k][b]));
            model[k][b] = 1;
        }
    }
    check_model(txn, dbi);
    CHECK(mdb_txn_commit(txn));
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int k = 0; k < 64; k += 3) {
        char kb[8];
        MDB_val key = {(size_t)snprintf(kb, sizeof(kb), "k%02d", k), kb};
        for (int b = 0; b < 256; b += 1 + k % 5) {
            unsigned char bb = (unsigned char)b;
            MDB_val val = {1, &bb};
            int rc = mdb_del(txn, dbi, &key, &val);
            REQUIRE(rc == (model[k][b] ? 0 : MDB_NOTFOUND));
            model[k][b] = 0;
        }
    }
    check_model(txn, dbi);
    CHECK(mdb_txn_commit(txn));
    char path[4096];
    snprintf(path, sizeof(path), "%s", dirbuf);
    mdb_env_close(env);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_open(env, path, 0, 0644));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_dbi_open(txn, "f", 0, &dbi));
    check_model(txn, dbi);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    puts("DUPFIXED 1-byte values: puts, deletes and reads agree with the model");
}

/* --write-probe: one write txn; exit 0 if every call succeeded, 3 if any failed.  run.sh
 * runs it with MDBCORE_FAULT="write:1+:EIO" against the production archive (the variable
 * must do nothing there) and against libmdbcore-test.so (where it must fail the writes). */
static int write_probe(const char *dir)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    mkdir(dir, 0755);
    int rc = mdb_env_create(&env);
    if (!rc)
        rc = mdb_env_open(env, dir, MDB_NOSYNC, 0644);
    if (!rc)
        rc = mdb_txn_begin(env, NULL, 0, &txn);
    if (!rc && !(rc = mdb_dbi_open(txn, NULL, 0, &dbi))) {
        MDB_val k = {1, "k"}, v = {1, "v"};
        rc = mdb_put(txn, dbi, &k, &v, 0);
        rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
    }
    mdb_env_close(env);
    printf("write probe: %s\n", rc ? mdb_strerror(rc) : "all writes succeeded");
    return rc ? 3 : 0;
}

/* A LEAF2 page whose upper disagrees with its key count is damage, even though upper may
 * pass the page size: reads report MDB_CORRUPTED instead of trusting the free space.
 * The one case here where we differ from LMDB on purpose: LMDB 0.9 trusts the key count
 * and its scan ends in MDB_NOTFOUND, so the liblmdb build of this file stops here. */
static void leaf2_damage(void)
{
    MDB_env *env = open_env("leaf2bad", 1 << 24, 4, 0);
    MDB_txn *txn;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, "f", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &dbi));
    MDB_val k = {1, "k"};
    for (unsigned i = 0; i < 3000; i++) {
        MDB_val v = {4, &i};
        CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
    char path[4200];
    snprintf(path, sizeof(path), "%s/data.mdb", dirbuf);
    mdb_env_close(env);
    FILE *f = fopen(path, "r+b");
    REQUIRE(f != NULL);
    unsigned char pg[4096];
    long off = -1;
    for (long at = 2 * 4096; fseek(f, at, SEEK_SET) == 0 && fread(pg, 1, 4096, f) == 4096;
         at += 4096) {
        if ((pg[10] | pg[11] << 8) == 0x22) { /* P_LEAF | P_LEAF2 */
            off = at;
            break;
        }
    }
    REQUIRE(off > 0);
    unsigned upper = pg[14] | pg[15] << 8;
    upper += 2;
    unsigned char b[2] = {(unsigned char)upper, (unsigned char)(upper >> 8)};
    REQUIRE(fseek(f, off + 14, SEEK_SET) == 0 && fwrite(b, 1, 2, f) == 2);
    fclose(f);
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_open(env, dirbuf, MDB_RDONLY, 0644));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    CHECK(mdb_dbi_open(txn, "f", 0, &dbi));
    MDB_cursor *c;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    MDB_val key, val;
    int rc = mdb_cursor_get(c, &key, &val, MDB_FIRST);
    while (rc == 0)
        rc = mdb_cursor_get(c, &key, &val, MDB_NEXT);
    CHECK_RC(rc, MDB_CORRUPTED);
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    puts("LEAF2 page with inconsistent bounds: MDB_CORRUPTED");
}

/* ---- free-list records off 8-byte alignment ---- */
static void put_range(MDB_env *env, unsigned from, unsigned to, int del)
{
    MDB_txn *txn;
    MDB_dbi dbi;
    char kb[16], vb[100];
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (unsigned i = from; i < to; i++) {
        snprintf(kb, sizeof kb, "k%06u", i);
        memset(vb, 'a' + i % 26, sizeof vb);
        MDB_val k = {strlen(kb), kb}, v = {sizeof vb, vb};
        if (del)
            CHECK(mdb_del(txn, dbi, &k, NULL));
        else
            CHECK(mdb_put(txn, dbi, &k, &v, 0));
    }
    CHECK(mdb_txn_commit(txn));
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static unsigned le16(const unsigned char *p)
{
    return p[0] | p[1] << 8;
}

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

/* Rebuild the free DB's root leaf (pgsz bytes at pg) with every record one byte longer:
 * a record's length then is odd, nodes sit on 2-byte boundaries only, and the records
 * a later commit adds to this leaf land off 8-byte alignment.  The extra byte lies past
 * the count each record starts with, so every page number stays readable. */
static void lengthen_free_records(unsigned char *pg, unsigned pgsz)
{
    unsigned n = (le16(pg + 12) - 16) / 2;
    unsigned char *out = calloc(1, pgsz);
    REQUIRE(out != NULL);
    memcpy(out, pg, 16);
    unsigned top = pgsz;
    for (unsigned i = 0; i < n; i++) {
        const unsigned char *nd = pg + le16(pg + 16 + 2 * i);
        unsigned dsize = le16(nd) | le16(nd + 2) << 16, ksize = le16(nd + 6);
        unsigned len = 8 + ksize + dsize + 1;
        top -= len + (len & 1);
        memcpy(out + top, nd, 8 + ksize + dsize);
        put16(out + top, (dsize + 1) & 0xffff);
        put16(out + top + 2, (dsize + 1) >> 16);
        put16(out + 16 + 2 * i, top);
    }
    put16(out + 14, top);
    memcpy(pg, out, pgsz);
    free(out);
}

/* A free DB whose records have odd lengths (another writer's choice, or damage that
 * leaves every page number readable) is used as it is: commits add records to its leaf
 * at addresses off 8-byte alignment, and storing the page numbers there must not assume
 * alignment (UBSan's finding in CI's fuzz smoke: a misaligned 8-byte store). */
static void freelist_odd_records(void)
{
    MDB_env *env = open_env("oddfree", 1 << 24, 0, 0);
    put_range(env, 0, 2000, 0);
    put_range(env, 0, 600, 1);
    put_range(env, 600, 1200, 1);
    mdb_env_close(env);

    char path[4200];
    snprintf(path, sizeof(path), "%s/data.mdb", dirbuf);
    FILE *f = fopen(path, "r+b");
    REQUIRE(f != NULL);
    unsigned char metas[2][4096], pg[4096];
    REQUIRE(fread(metas, 1, sizeof metas, f) == sizeof metas);
    /* the newer meta (higher txnid at byte 144) names the free DB's root (byte 80) */
    int m = le64(metas[1] + 144) > le64(metas[0] + 144);
    uint64_t root = le64(metas[m] + 80);
    REQUIRE(root > 1 && root != ~(uint64_t)0);
    REQUIRE(fseek(f, (long)(root * 4096), SEEK_SET) == 0 && fread(pg, 1, 4096, f) == 4096);
    REQUIRE((le16(pg + 10) & 0x02) && le16(pg + 12) > 16); /* a leaf with records */
    lengthen_free_records(pg, 4096);
    REQUIRE(fseek(f, (long)(root * 4096), SEEK_SET) == 0 && fwrite(pg, 1, 4096, f) == 4096);
    fclose(f);

    env = mdbtest_env(1 << 24, 0);
    CHECK(mdb_env_open(env, dirbuf, 0, 0644));
    for (unsigned round = 0; round < 6; round++) {
        put_range(env, 0, 1200, 0);
        put_range(env, 0, 1200, 1);
    }
    put_range(env, 0, 300, 0);
    MDB_txn *txn;
    MDB_dbi dbi = mdbtest_read_main(env, &txn);
    MDB_stat st;
    CHECK(mdb_stat(txn, dbi, &st));
    REQUIRE(st.ms_entries == 1100);
    for (unsigned i = 0; i < 2000; i += 7) {
        char kb[16];
        snprintf(kb, sizeof kb, "k%06u", i);
        MDB_val k = {strlen(kb), kb}, v;
        int rc = mdb_get(txn, dbi, &k, &v);
        if (i < 300 || i >= 1200) {
            CHECK(rc);
            REQUIRE(v.mv_size == 100 && ((char *)v.mv_data)[99] == 'a' + (char)(i % 26));
        } else {
            CHECK_RC(rc, MDB_NOTFOUND);
        }
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
    puts("free DB records of odd length: 13 commits reuse its pages, every record intact");
}

/* ---- many named databases ---- */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static MDB_env *many_env(const char *name, unsigned ndbs, MDB_dbi *dbi)
{
    MDB_env *env = open_env(name, 1u << 28, ndbs + 4, MDB_NOTLS); /* several readers per thread */
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (unsigned i = 0; i < ndbs; i++) {
        char nm[32], v[32];
        snprintf(nm, sizeof(nm), "db%06u", i);
        CHECK(mdb_dbi_open(txn, nm, MDB_CREATE, &dbi[i]));
        MDB_val k = {1, "k"}, d = {(size_t)snprintf(v, sizeof(v), "v%u", i), v};
        CHECK(mdb_put(txn, dbi[i], &k, &d, 0));
    }
    CHECK(mdb_txn_commit(txn));
    return env;
}

/* Best of 5: microseconds per (begin RDONLY, cursor open/close on one DB, abort). */
static double begin_cost(MDB_env *env, MDB_dbi dbi)
{
    double best = 1e9;
    for (int r = 0; r < 5; r++) {
        double t0 = now_s();
        for (int i = 0; i < 20000; i++) {
            MDB_txn *txn;
            MDB_cursor *c;
            CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
            CHECK(mdb_cursor_open(txn, dbi, &c));
            mdb_cursor_close(c);
            mdb_txn_abort(txn);
        }
        double t = (now_s() - t0) / 20000 * 1e6;
        if (t < best)
            best = t;
    }
    return best;
}

static void expect_value(MDB_txn *txn, MDB_dbi dbi, const char *want)
{
    MDB_val k = {1, "k"}, d;
    CHECK(mdb_get(txn, dbi, &k, &d));
    REQUIRE(d.mv_size == strlen(want) && !memcmp(d.mv_data, want, d.mv_size));
}

/* (Ours only: LMDB 0.9 copies every handle at begin, and refuses handles opened after a
 * txn began.)  A read txn sets up only the handles it uses: its begin/abort cost does not grow with
 * the number of named databases (it was ~100x at 10,000 DBs).  Handles opened after a txn
 * began are usable in it wherever the DB exists in its snapshot. */
static void many_dbs(void)
{
    static MDB_dbi small[10], big[5000];
    MDB_env *e1 = many_env("many10", 10, small);
    MDB_env *e2 = many_env("many5000", 5000, big);
    double c1 = begin_cost(e1, small[0]), c2 = begin_cost(e2, big[0]);
    printf("many DBs: begin+cursor+abort %.3f us at 10 DBs, %.3f us at 5000 DBs\n", c1, c2);
    REQUIRE(c2 < 4 * c1 + 0.2);
    mdb_env_close(e1);

    MDB_env *env = e2;
    MDB_txn *old, *w, *r;
    MDB_dbi late, late2;
    /* a reader that began before "late" existed, one before it was opened but after it
     * was committed, and a later one */
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &old));
    expect_value(old, big[4321], "v4321");
    CHECK(mdb_txn_begin(env, NULL, 0, &w));
    CHECK(mdb_dbi_open(w, "late", MDB_CREATE, &late));
    MDB_val k = {1, "k"}, d = {5, "late1"};
    CHECK(mdb_put(w, late, &k, &d, 0));
    d.mv_data = "v0new";
    CHECK(mdb_put(w, big[0], &k, &d, 0));
    CHECK(mdb_txn_commit(w));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    expect_value(r, late, "late1");
    expect_value(r, big[0], "v0new");
    /* the old snapshot has no "late": its handle is refused there, not misread */
    MDB_val got;
    REQUIRE(mdb_get(old, late, &k, &got) != 0);
    expect_value(old, big[0], "v0"); /* and big[0] as of that snapshot */
    mdb_txn_abort(r);
    mdb_txn_abort(old);
    /* a handle committed in one txn works in every later one, read or write */
    for (int i = 0; i < 3; i++) {
        CHECK(mdb_txn_begin(env, NULL, i == 1 ? 0 : MDB_RDONLY, &r));
        expect_value(r, late, "late1");
        expect_value(r, big[4999], "v4999");
        mdb_txn_abort(r);
    }
    /* reset/renew: the renewed snapshot sees a commit made meanwhile */
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    expect_value(r, big[7], "v7");
    mdb_txn_reset(r);
    CHECK(mdb_txn_begin(env, NULL, 0, &w));
    d.mv_data = "v7new";
    CHECK(mdb_put(w, big[7], &k, &d, 0));
    CHECK(mdb_txn_commit(w));
    CHECK(mdb_txn_renew(r));
    expect_value(r, big[7], "v7new");
    mdb_txn_abort(r);
    /* a slot closed and reused for another DB: no txn sees the old record under it */
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    expect_value(r, late, "late1");
    mdb_txn_abort(r);
    mdb_dbi_close(env, late);
    CHECK(mdb_txn_begin(env, NULL, 0, &w));
    CHECK(mdb_dbi_open(w, "late2", MDB_CREATE, &late2));
    d.mv_data = "late2";
    CHECK(mdb_put(w, late2, &k, &d, 0));
    CHECK(mdb_txn_commit(w));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    expect_value(r, late2, "late2");
    mdb_txn_abort(r);
    /* the DB exists before a reader begins, its handle is opened (by another txn) after:
     * the reader can use it */
    MDB_dbi pre;
    CHECK(mdb_txn_begin(env, NULL, 0, &w));
    CHECK(mdb_dbi_open(w, "pre", MDB_CREATE, &pre));
    d.mv_data = "pre-1";
    CHECK(mdb_put(w, pre, &k, &d, 0));
    CHECK(mdb_txn_commit(w));
    mdb_dbi_close(env, pre);
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &old));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    CHECK(mdb_dbi_open(r, "pre", 0, &pre));
    CHECK(mdb_txn_commit(r));
    expect_value(old, pre, "pre-1");
    mdb_txn_abort(old);
    /* nested: a child uses handles its parent never touched; abort leaves the parent as it
     * was, commit hands the change up */
    CHECK(mdb_txn_begin(env, NULL, 0, &w));
    MDB_txn *child;
    CHECK(mdb_txn_begin(env, w, 0, &child));
    d.mv_data = "child";
    CHECK(mdb_put(child, big[100], &k, &d, 0));
    mdb_txn_abort(child);
    expect_value(w, big[100], "v100");
    CHECK(mdb_txn_begin(env, w, 0, &child));
    CHECK(mdb_put(child, big[100], &k, &d, 0));
    CHECK(mdb_txn_commit(child));
    expect_value(w, big[100], "child");
    CHECK(mdb_txn_commit(w));
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    expect_value(r, big[100], "child");
    expect_value(r, big[101], "v101");
    mdb_txn_abort(r);
    mdb_env_close(env);
    puts("many DBs: lazy per-txn handle state; late handles usable; slot reuse, renew, nested");
}

/* Deleting many keys in key order.  Emptied pages on the left leave their parents; with a
 * full sibling branch that could not take a merge, an emptied branch once stayed in the
 * tree and the next delete stopped with MDB_CORRUPTED (20,000 keys, delete #5023).
 * After every 1,000 deletes the count and a full scan must agree with what is left. */
static size_t scan_count(MDB_txn *txn, MDB_dbi dbi, int first_left)
{
    MDB_cursor *c;
    MDB_val k, v;
    size_t n = 0;
    int rc;
    CHECK(mdb_cursor_open(txn, dbi, &c));
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT), n++) {
        if (n == 0 && first_left >= 0) {
            char want[32];
            snprintf(want, sizeof want, "%016d", first_left);
            REQUIRE(k.mv_size == 16 && !memcmp(k.mv_data, want, 16));
        }
        REQUIRE(v.mv_size == 100);
    }
    REQUIRE(rc == MDB_NOTFOUND);
    mdb_cursor_close(c);
    return n;
}

static void delete_in_order(void)
{
    const int n = 20000;
    char v[100];
    memset(v, 'v', sizeof v);
    for (int mode = 0; mode < 6; mode++) {
        int descending = mode & 1, commit_between = (mode >> 1) & 1, stop70 = mode >= 4;
        MDB_env *env = open_env("delorder", 1 << 28, 0, 0);
        MDB_txn *txn;
        MDB_dbi dbi = mdbtest_begin_main(env, &txn);
        for (int i = 0; i < n; i++) {
            char kb[32];
            snprintf(kb, sizeof kb, "%016d", i);
            MDB_val k = {16, kb}, d = {100, v};
            CHECK(mdb_put(txn, dbi, &k, &d, 0));
        }
        if (commit_between) {
            CHECK(mdb_txn_commit(txn));
            CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        }
        int last = stop70 ? n * 7 / 10 : n;
        for (int j = 0; j < last; j++) {
            int i = descending ? n - 1 - j : j;
            char kb[32];
            snprintf(kb, sizeof kb, "%016d", i);
            MDB_val k = {16, kb};
            CHECK(mdb_del(txn, dbi, &k, NULL));
            if ((j + 1) % 1000 == 0) {
                MDB_stat st;
                CHECK(mdb_stat(txn, dbi, &st));
                REQUIRE(st.ms_entries == (size_t)(n - j - 1));
                REQUIRE(scan_count(txn, dbi, descending ? 0 : j + 1) == (size_t)(n - j - 1));
            }
        }
        CHECK(mdb_txn_commit(txn));
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        MDB_stat st;
        CHECK(mdb_stat(txn, dbi, &st));
        REQUIRE(st.ms_entries == (size_t)(n - last));
        REQUIRE(scan_count(txn, dbi, descending || last == n ? -1 : last) == (size_t)(n - last));
        if (last == n)
            REQUIRE(st.ms_depth == 0 && st.ms_leaf_pages == 0 && st.ms_branch_pages == 0);
        mdb_txn_abort(txn);
        mdb_env_close(env);
    }
    puts("delete in key order: 20,000 keys, ascending and descending, in the loading txn and "
         "after a commit, to empty and to 30% left: counts and scans agree throughout");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s WORKDIR\n", argv[0]);
        return 2;
    }
    if (argc == 3 && !strcmp(argv[1], "--write-probe"))
        return write_probe(argv[2]);
    base = argv[1];
    mkdir(base, 0755);
    env_info_mapaddr();
    tiny_map();
    dupfixed_1byte();
    leaf2_damage();
    freelist_odd_records();
    many_dbs();
    delete_in_order();
    puts("test_regress: PASS");
    return 0;
}
