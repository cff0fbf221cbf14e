/*
 * test_spill.c -- write txns larger than the dirty-page limit (src/mdbcore/spill.c).
 *   test_spill DIR [big]
 *
 * With the limit lowered to 256 pages (mdbcore_env_set_dirty_limit), one txn does
 * thousands of random puts, overwrites and deletes over a plain DB (values up to overflow
 * size) and a DUPSORT DB, so pages are written out early and taken back many times:
 *   - cursors parked on items stay on them through every spill (their pages are kept);
 *   - the txn sees its own writes (model check) and a reader opened before it sees none;
 *   - commit: a new reader sees the model, the structural checker is clean, and the file
 *     reopens with the same content;
 *   - abort after spills, and a process killed after spills, leave the previous
 *     snapshot intact and the checker clean;
 *   - a nested txn over a parent that spilled: its abort leaves the parent's view, its
 *     commit joins it;
 *   - a spill write that fails: the put says EIO, the txn cannot go on, nothing is lost;
 *   - the same under MDB_WRITEMAP (but nested txns, which LMDB refuses there).
 * "big": without the knob, one txn dirties more than LMDB's 131,071-page list holds
 * (about 600 MB) and must commit instead of failing with MDB_TXN_FULL.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmdb.h"
#include "mdbcore.h"
#include "mdbtest.h"

#define NKEYS 6000   /* plain DB key space */
#define NDKEYS 40    /* DUPSORT DB keys */
#define NDUPS 300    /* possible duplicates per key */
#define LIMIT 256

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static unsigned rnd(void)
{
    return (unsigned)(mdbtest_xorshift(&rng) >> 11);
}

/* The model: per plain key a value length (-1 = absent) and a version that seeds its
 * bytes; per DUPSORT key a bitmap of present duplicates. */
typedef struct model {
    int len[NKEYS];
    unsigned ver[NKEYS];
    unsigned char dup[NDKEYS][NDUPS];
} model;

static void key_of(char *buf, unsigned i) { snprintf(buf, 16, "k%07u", i); }
static void dkey_of(char *buf, unsigned i) { snprintf(buf, 16, "d%03u", i); }
static void dup_of(char *buf, unsigned i) { snprintf(buf, 16, "v%06u", i * 7919u % 1000003u); }

static void fill(unsigned char *buf, size_t n, unsigned key, unsigned ver)
{
    uint32_t x = key * 2654435761u ^ ver * 40503u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (unsigned char)(x >> 16);
    }
}

static size_t pick_len(void)
{
    unsigned s = rnd() % 100;
    if (s < 60)
        return 10 + rnd() % 200;
    if (s < 95)
        return 200 + rnd() % 3000;
    return 5000 + rnd() % 30000; /* overflow runs */
}

static unsigned char *vbuf, *cbuf;

/* Compare a txn's view of both DBs with the model. */
static void verify(MDB_txn *txn, MDB_dbi plain, MDB_dbi dups, const model *m, const char *what)
{
    MDB_cursor *c;
    MDB_val k, v;
    CHECK(mdb_cursor_open(txn, plain, &c));
    unsigned seen = 0;
    int rc;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        unsigned i;
        char kb[9] = {0};
        if (k.mv_size == 8)
            memcpy(kb, k.mv_data, 8); /* the key is not NUL-terminated in the map */
        if (k.mv_size != 8 || sscanf(kb, "k%7u", &i) != 1 || i >= NKEYS)
            FAIL("%s: stray key", what);
        if (m->len[i] < 0 || v.mv_size != (size_t)m->len[i])
            FAIL("%s: key %u: size %zu, model %d", what, i, v.mv_size, m->len[i]);
        fill(cbuf, v.mv_size, i, m->ver[i]);
        if (memcmp(v.mv_data, cbuf, v.mv_size))
            FAIL("%s: key %u: bytes differ", what, i);
        seen++;
    }
    if (rc != MDB_NOTFOUND)
        CHECK(rc);
    unsigned want = 0;
    for (unsigned i = 0; i < NKEYS; i++)
        want += m->len[i] >= 0;
    if (seen != want)
        FAIL("%s: %u plain keys, model %u", what, seen, want);
    mdb_cursor_close(c);

    CHECK(mdb_cursor_open(txn, dups, &c));
    for (unsigned d = 0; d < NDKEYS; d++) {
        char kb[16];
        dkey_of(kb, d);
        MDB_val dk = {strlen(kb), kb};
        size_t want_n = 0, n = 0;
        for (unsigned j = 0; j < NDUPS; j++)
            want_n += m->dup[d][j];
        rc = mdb_cursor_get(c, &dk, &v, MDB_SET);
        if (rc == MDB_NOTFOUND && want_n == 0)
            continue;
        CHECK(rc);
        CHECK(mdb_cursor_count(c, &n));
        if (n != want_n)
            FAIL("%s: dup key %u: %zu dups, model %zu", what, d, n, want_n);
        for (unsigned j = 0; j < NDUPS; j++) {
            if (!m->dup[d][j])
                continue;
            char vb[16];
            dup_of(vb, j);
            MDB_val dv = {strlen(vb), vb};
            CHECK(mdb_cursor_get(c, &dk, &dv, MDB_GET_BOTH));
        }
    }
    mdb_cursor_close(c);
}

typedef struct env_set {
    MDB_env *env;
    MDB_dbi plain, dups;
} env_set;

static env_set open_env(const char *dir, unsigned flags, int knob)
{
    env_set e;
    mkdir(dir, 0755);
    CHECK(mdb_env_create(&e.env));
    CHECK(mdb_env_set_mapsize(e.env, (size_t)1 << 31));
    CHECK(mdb_env_set_maxdbs(e.env, 4));
    if (knob)
        CHECK(mdbcore_env_set_dirty_limit(e.env, LIMIT));
    CHECK(mdb_env_open(e.env, dir, flags, 0644));
    MDB_txn *t;
    CHECK(mdb_txn_begin(e.env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, "plain", MDB_CREATE, &e.plain));
    CHECK(mdb_dbi_open(t, "dups", MDB_CREATE | MDB_DUPSORT, &e.dups));
    CHECK(mdb_txn_commit(t));
    return e;
}

static void env_clean(MDB_env *env, const char *when)
{
    mdbcore_check_report rep;
    int rc = mdbcore_check_env(env, &rep);
    if (rc) {
        fprintf(stderr, "checker after %s: %s\n", when, mdb_strerror(rc));
        mdbcore_check_report_free(&rep);
        exit(1);
    }
    mdbcore_check_report_free(&rep);
}

/* What a new reader sees equals the model, and the checker finds the file sound. */
static void committed_state_is(const env_set *e, const model *m, const char *what)
{
    MDB_txn *r;
    CHECK(mdb_txn_begin(e->env, NULL, MDB_RDONLY, &r));
    verify(r, e->plain, e->dups, m, what);
    mdb_txn_abort(r);
    env_clean(e->env, what);
}

/* One random write.  Parked keys (plain 0, dup key 0 / dup 0) are never deleted. */
static void one_write(MDB_txn *txn, const env_set *e, model *m)
{
    char kb[16], vb[16];
    unsigned r = rnd() % 100;
    if (r < 65) {
        unsigned i = rnd() % NKEYS;
        key_of(kb, i);
        MDB_val k = {8, kb};
        if (r < 5 && m->len[i] >= 0) {
            /* put a value back from where mdb_get points, often a dirty page: that page
             * must not be spilled before the put has read it */
            MDB_val v;
            CHECK(mdb_get(txn, e->plain, &k, &v));
            CHECK(mdb_put(txn, e->plain, &k, &v, 0));
        } else if (r < 50 || i == 0) {
            size_t len = pick_len();
            m->ver[i]++;
            fill(vbuf, len, i, m->ver[i]);
            MDB_val v = {len, vbuf};
            CHECK(mdb_put(txn, e->plain, &k, &v, 0));
            m->len[i] = (int)len;
        } else {
            int rc = mdb_del(txn, e->plain, &k, NULL);
            if ((rc == 0) != (m->len[i] >= 0))
                FAIL("del %u: rc %d, model len %d", i, rc, m->len[i]);
            if (rc && rc != MDB_NOTFOUND)
                CHECK(rc);
            m->len[i] = -1;
        }
    } else {
        unsigned d = rnd() % NDKEYS, j = rnd() % NDUPS;
        dkey_of(kb, d);
        dup_of(vb, j);
        MDB_val k = {strlen(kb), kb}, v = {strlen(vb), vb};
        if (r < 90 || (d == 0 && j == 0)) {
            int rc = mdb_put(txn, e->dups, &k, &v, MDB_NODUPDATA);
            if (rc && rc != MDB_KEYEXIST)
                CHECK(rc);
            m->dup[d][j] = 1;
        } else {
            int rc = mdb_del(txn, e->dups, &k, &v);
            if ((rc == 0) != m->dup[d][j])
                FAIL("dup del %u/%u: rc %d, model %d", d, j, rc, m->dup[d][j]);
            if (rc && rc != MDB_NOTFOUND)
                CHECK(rc);
            m->dup[d][j] = 0;
        }
    }
}

/* Cursors parked on plain key 0 and on (dup key 0, dup 0) must still be there. */
static void check_parked(MDB_cursor *pc, MDB_cursor *dc, const model *m)
{
    MDB_val k, v;
    char kb[16], vb[16];
    CHECK(mdb_cursor_get(pc, &k, &v, MDB_GET_CURRENT));
    key_of(kb, 0);
    if (k.mv_size != 8 || memcmp(k.mv_data, kb, 8) || v.mv_size != (size_t)m->len[0])
        FAIL("parked plain cursor moved");
    fill(cbuf, v.mv_size, 0, m->ver[0]);
    if (memcmp(v.mv_data, cbuf, v.mv_size))
        FAIL("parked plain cursor reads wrong bytes");
    CHECK(mdb_cursor_get(dc, &k, &v, MDB_GET_CURRENT));
    dkey_of(kb, 0);
    dup_of(vb, 0);
    if (k.mv_size != strlen(kb) || memcmp(k.mv_data, kb, k.mv_size) ||
        v.mv_size != strlen(vb) || memcmp(v.mv_data, vb, v.mv_size))
        FAIL("parked dup cursor moved");
}

static void seed_parked(const env_set *e, model *m)
{
    MDB_txn *t;
    CHECK(mdb_txn_begin(e->env, NULL, 0, &t));
    char kb[16], vb[16];
    key_of(kb, 0);
    m->ver[0]++;
    m->len[0] = 100;
    fill(vbuf, 100, 0, m->ver[0]);
    MDB_val k = {8, kb}, v = {100, vbuf};
    CHECK(mdb_put(t, e->plain, &k, &v, 0));
    dkey_of(kb, 0);
    dup_of(vb, 0);
    MDB_val dk = {strlen(kb), kb}, dv = {strlen(vb), vb};
    CHECK(mdb_put(t, e->dups, &dk, &dv, 0));
    m->dup[0][0] = 1;
    CHECK(mdb_txn_commit(t));
}

/* The main scenario: one long txn with parked cursors and a reader from before it. */
static void big_txn(const env_set *e, model *m, int ops, int commit, const char *what)
{
    model *before = malloc(sizeof(*before));
    *before = *m;
    MDB_txn *reader, *txn;
    CHECK(mdb_txn_begin(e->env, NULL, MDB_RDONLY, &reader));
    uint64_t spilled0 = mdbcore_env_spilled_pages(e->env);
    CHECK(mdb_txn_begin(e->env, NULL, 0, &txn));
    MDB_cursor *pc, *dc;
    CHECK(mdb_cursor_open(txn, e->plain, &pc));
    CHECK(mdb_cursor_open(txn, e->dups, &dc));
    char kb[16], vb[16];
    key_of(kb, 0);
    MDB_val k = {8, kb}, v;
    CHECK(mdb_cursor_get(pc, &k, &v, MDB_SET));
    dkey_of(kb, 0);
    dup_of(vb, 0);
    MDB_val dk = {strlen(kb), kb}, dv = {strlen(vb), vb};
    CHECK(mdb_cursor_get(dc, &dk, &dv, MDB_GET_BOTH));
    for (int i = 1; i <= ops; i++) {
        one_write(txn, e, m);
        if (i % 250 == 0)
            check_parked(pc, dc, m);
        if (i % 2000 == 0) {
            verify(txn, e->plain, e->dups, m, "in the txn");
            verify(reader, e->plain, e->dups, before, "reader from before");
        }
    }
    uint64_t spilled = mdbcore_env_spilled_pages(e->env) - spilled0;
    if (spilled == 0)
        FAIL("%s: %d writes never spilled", what, ops);
    verify(txn, e->plain, e->dups, m, "end of the txn");
    mdb_cursor_close(pc);
    mdb_cursor_close(dc);
    if (commit) {
        CHECK(mdb_txn_commit(txn));
    } else {
        mdb_txn_abort(txn);
        *m = *before;
    }
    verify(reader, e->plain, e->dups, before, "reader from before, after the end");
    mdb_txn_abort(reader);
    committed_state_is(e, m, commit ? "after commit" : "after abort");
    printf("  %s: %d writes, %llu pages spilled\n", what, ops, (unsigned long long)spilled);
    free(before);
}

/* A nested txn over a parent that spilled. */
static void nested(const env_set *e, model *m)
{
    MDB_txn *parent, *child;
    CHECK(mdb_txn_begin(e->env, NULL, 0, &parent));
    for (int i = 0; i < 3000; i++)
        one_write(parent, e, m);
    model *keep = malloc(sizeof(*keep));
    *keep = *m;
    /* the child rewrites keys all over the tree, so it meets spilled pages */
    CHECK(mdb_txn_begin(e->env, parent, 0, &child));
    for (int i = 0; i < 150; i++)
        one_write(child, e, m);
    verify(child, e->plain, e->dups, m, "child");
    mdb_txn_abort(child);
    *m = *keep;
    verify(parent, e->plain, e->dups, m, "parent after child abort");
    CHECK(mdb_txn_begin(e->env, parent, 0, &child));
    for (int i = 0; i < 150; i++)
        one_write(child, e, m);
    CHECK(mdb_txn_commit(child));
    for (int i = 0; i < 500; i++)
        one_write(parent, e, m);
    verify(parent, e->plain, e->dups, m, "parent after child commit");
    CHECK(mdb_txn_commit(parent));
    committed_state_is(e, m, "after nested commit");
    free(keep);
    printf("  nested: parent spilled, child aborted then committed\n");
}

/* A writer killed after spilling: the last snapshot is what reopens. */
static void killed(const char *dir, model *m, unsigned flags)
{
    fflush(stdout); /* the child must not inherit (and flush) our buffered lines */
    pid_t pid = fork();
    if (pid == 0) {
        env_set e = open_env(dir, flags, 1);
        model *scratch = malloc(sizeof(*scratch));
        *scratch = *m;
        MDB_txn *t;
        CHECK(mdb_txn_begin(e.env, NULL, 0, &t));
        for (int i = 0; i < 4000; i++)
            one_write(t, &e, scratch);
        _exit(mdbcore_env_spilled_pages(e.env) ? 0 : 3);
    }
    int st;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        FAIL("killed writer: child status %d (3 = it never spilled)", st);
    env_set e = open_env(dir, flags, 1);
    committed_state_is(&e, m, "after a writer died mid-txn");
    big_txn(&e, m, 3000, 1, "commit after the dead writer");
    mdb_env_close(e.env);
    printf("  killed writer: previous snapshot intact\n");
}

static void reopen_same(const char *dir, const model *m)
{
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_maxdbs(env, 4));
    CHECK(mdb_env_open(env, dir, MDB_RDONLY, 0644));
    MDB_txn *r;
    MDB_dbi p, d;
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    CHECK(mdb_dbi_open(r, "plain", 0, &p));
    CHECK(mdb_dbi_open(r, "dups", 0, &d));
    verify(r, p, d, m, "reopened");
    mdb_txn_abort(r);
    mdb_env_close(env);
}

/* A spill write that fails (a full or failing disk): the put reports the error, the txn
 * can only be aborted, and the file keeps the previous snapshot. */
static void failed_spill(const env_set *e, model *m)
{
    MDB_txn *txn;
    CHECK(mdb_txn_begin(e->env, NULL, 0, &txn));
    model *scratch = malloc(sizeof(*scratch));
    *scratch = *m;
    uint64_t before = mdbcore_env_spilled_pages(e->env);
    CHECK(mdbcore_fault_fail_nth(MDBCORE_FAULT_WRITE, 1, EIO));
    int rc = 0;
    for (int i = 0; i < 20000 && !rc; i++) {
        char kb[16];
        unsigned k = rnd() % NKEYS;
        key_of(kb, k);
        fill(vbuf, 500, k, ++scratch->ver[k]);
        MDB_val key = {8, kb}, v = {500, vbuf};
        rc = mdb_put(txn, e->plain, &key, &v, 0);
    }
    mdbcore_fault_reset();
    if (rc != EIO)
        FAIL("failed spill: put returned %d (%s), want EIO", rc, mdb_strerror(rc));
    if (mdbcore_env_spilled_pages(e->env) != before)
        FAIL("failed spill: pages were counted as spilled");
    char kb[16];
    key_of(kb, 0);
    MDB_val key = {8, kb}, v = {3, "abc"};
    if (mdb_put(txn, e->plain, &key, &v, 0) == 0 || mdb_txn_commit(txn) == 0)
        FAIL("failed spill: the txn went on after a failed write");
    committed_state_is(e, m, "after a failed spill");
    free(scratch);
    printf("  failed spill write: EIO from the put, txn refused to go on, snapshot intact\n");
}

static void scenario(const char *root, const char *name, unsigned flags)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    printf("%s:\n", name);
    model *m = calloc(1, sizeof(*m));
    for (unsigned i = 0; i < NKEYS; i++)
        m->len[i] = -1;
    env_set e = open_env(dir, flags, 1);
    seed_parked(&e, m);
    big_txn(&e, m, 6000, 1, "commit");
    big_txn(&e, m, 6000, 0, "abort");
    big_txn(&e, m, 6000, 1, "second commit");
    if (!(flags & MDB_WRITEMAP)) { /* LMDB refuses nested txns under WRITEMAP */
        nested(&e, m);
        failed_spill(&e, m); /* under WRITEMAP a spill writes nothing */
    }
    mdb_env_close(e.env);
    reopen_same(dir, m);
    killed(dir, m, flags);
    free(m);
}

/* Past LMDB's real list size, without the knob. */
static void big(const char *root)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/big", root);
    mkdir(dir, 0755);
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    CHECK(mdb_env_set_mapsize(env, (size_t)2 << 30));
    CHECK(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
    MDB_txn *t;
    MDB_dbi dbi;
    CHECK(mdb_txn_begin(env, NULL, 0, &t));
    CHECK(mdb_dbi_open(t, NULL, 0, &dbi));
    const unsigned n = 150000; /* one 3000-byte value per leaf page: > 131,071 pages */
    char kb[16];
    for (unsigned i = 0; i < n; i++) {
        key_of(kb, i);
        fill(vbuf, 3000, i, 1);
        MDB_val k = {8, kb}, v = {3000, vbuf};
        CHECK(mdb_put(t, dbi, &k, &v, MDB_APPEND));
    }
    CHECK(mdb_txn_commit(t));
    uint64_t spilled = mdbcore_env_spilled_pages(env);
    if (!spilled)
        FAIL("big: %u pages in one txn never spilled", n);
    CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
    MDB_cursor *c;
    CHECK(mdb_cursor_open(t, dbi, &c));
    MDB_val k, v;
    unsigned i = 0;
    int rc;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT), i++) {
        key_of(kb, i);
        fill(cbuf, 3000, i, 1);
        if (k.mv_size != 8 || memcmp(k.mv_data, kb, 8) || v.mv_size != 3000 ||
            memcmp(v.mv_data, cbuf, 3000))
            FAIL("big: record %u differs", i);
    }
    if (rc != MDB_NOTFOUND || i != n)
        FAIL("big: %u records read back of %u (rc %d)", i, n, rc);
    mdb_cursor_close(c);
    mdb_txn_abort(t);
    env_clean(env, "big");
    mdb_env_close(env);
    printf("big: %u pages in one txn committed, %llu spilled\n", n, (unsigned long long)spilled);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [big]\n", argv[0]);
        return 2;
    }
    vbuf = malloc(1 << 16);
    cbuf = malloc(1 << 16);
    mkdir(argv[1], 0755);
    if (argc > 2 && !strcmp(argv[2], "big")) {
        big(argv[1]);
        return 0;
    }
    /* the knob refuses what it cannot honour */
    MDB_env *env;
    CHECK(mdb_env_create(&env));
    if (mdbcore_env_set_dirty_limit(env, 10) != EINVAL ||
        mdbcore_env_set_dirty_limit(env, 1u << 20) != EINVAL)
        FAIL("dirty limit outside 256..131071 was accepted");
    mdb_env_close(env);
    scenario(argv[1], "default", 0);
    scenario(argv[1], "writemap", MDB_WRITEMAP);
    printf("test_spill: OK\n");
    return 0;
}
