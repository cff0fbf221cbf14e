/*
 * test_value_lifetime.c -- the lifetime LMDB gives the data a get returns: it stays valid
 * and unchanged until the txn ends (read txn) or until the txn's next write (write txn).
 * Programs collect MDB_vals while they walk and use them afterwards; this holds them to it.
 *
 * Every key and value any call returns (mdb_get and every mdb_cursor_get op, on several
 * cursors at once) is kept with a copy of its bytes.  All kept values are compared with
 * their copies just before each write of a write txn (then forgotten) and before each
 * txn ends.  The databases cover every place a value can live: plain nodes, overflow
 * runs, DUPSORT duplicates in a sub-page and in a sub-tree, DUPFIXED duplicates in a
 * sub-page and in a sub-tree, and the blocks of GET_MULTIPLE / NEXT_MULTIPLE /
 * PREV_MULTIPLE.  Keys have odd and even lengths, so sub-pages start at odd and even
 * offsets.  Read txns, write txns (with puts and deletes, through mdb_put and through
 * cursors, between the reads) and a nested write txn.
 *
 * After a failed call, and after each write, the cursors concerned are put on an item
 * again by a fresh positioning call: LMDB 0.9.24 and 0.9.36 crash on some ops from those
 * states (PREV_DUP after a missed SET, LAST_DUP after another cursor's delete).
 *
 * Compiled against Debian's lmdb.h and linked with the library under test, so the same
 * program holds real LMDB to the contract (LMDB_IMPL=system; it also passes built with
 * 0.9.36's mdb.c from tests/c/ref/lmdb0936.sh).  Deterministic (xorshift).  Exit status
 * 0 when no kept value changed and every call answered as LMDB may.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lmdb.h>

#include "mdbtest.h"

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static uint64_t rnd(void) { return mdbtest_xorshift(&rng); }
static unsigned below(unsigned n) { return (unsigned)(rnd() % n); }

/* ---- the databases ---- */
enum { K_PLAIN, K_OVERFLOW, K_DUP_SUBPAGE, K_DUP_SUBTREE, K_FIXED_SUBPAGE, K_FIXED_SUBTREE, NKINDS };
static const char *kind_name[NKINDS] = {"plain", "overflow", "dupsort-subpage",
                                        "dupsort-subtree", "dupfixed-subpage", "dupfixed-subtree"};
static const unsigned kind_flags[NKINDS] = {0, 0, MDB_DUPSORT, MDB_DUPSORT,
                                            MDB_DUPSORT | MDB_DUPFIXED, MDB_DUPSORT | MDB_DUPFIXED};
static const unsigned kind_keys[NKINDS] = {500, 60, 400, 6, 300, 5};
#define FIXED_SIZE 6

static int is_dup(int kind) { return kind >= K_DUP_SUBPAGE; }
static int is_fixed(int kind) { return kind >= K_FIXED_SUBPAGE; }

/* How many values key i of a kind starts with. */
static unsigned dups_of(int kind, unsigned i)
{
    switch (kind) {
    case K_DUP_SUBPAGE: return 1 + i % 9;
    case K_DUP_SUBTREE: return 300 + 20 * i;
    case K_FIXED_SUBPAGE: return 1 + i % 12;
    case K_FIXED_SUBTREE: return 900 + 100 * i;
    default: return 1;
    }
}

/* Key i: 3 to 10 bytes, so that the data after it starts at odd and even offsets. */
static MDB_val key_of(unsigned i, char *buf)
{
    int len = snprintf(buf, 32, "k%0*u", (int)(2 + i % 8), i);
    return (MDB_val){(size_t)len, buf};
}

/* Value j of key i (values sort by j for a given key); big for the overflow kind. */
static MDB_val value_of(int kind, unsigned i, unsigned j, uint8_t *buf)
{
    size_t len;
    if (is_fixed(kind))
        len = FIXED_SIZE;
    else if (kind == K_OVERFLOW)
        len = 2500 + (i * 977) % 7000;
    else if (kind == K_PLAIN)
        len = 1 + (i * 37) % 120;
    else
        len = 5 + (i + j) % 30;
    /* a 4-digit prefix orders the duplicates; the rest is a pattern of (i, j) */
    buf[0] = (uint8_t)('0' + j / 1000 % 10);
    buf[1] = (uint8_t)('0' + j / 100 % 10);
    buf[2] = (uint8_t)('0' + j / 10 % 10);
    buf[3] = (uint8_t)('0' + j % 10);
    for (size_t b = 4; b < len; b++)
        buf[b] = (uint8_t)('a' + (i * 7 + j * 13 + b) % 26);
    return (MDB_val){len, buf};
}

/* ---- kept values ---- */
typedef struct kept {
    const void *ptr;
    size_t len;
    uint8_t *copy;
    int kind;
    int op; /* cursor op, or -1 for mdb_get */
} kept;

static kept *keep_list;
static size_t keep_n, keep_cap;
static unsigned long long checked[NKINDS], changed[NKINDS], kept_by_op[32], multiple_bytes;

static void keep(const MDB_val *v, int kind, int op)
{
    if (!v->mv_data || v->mv_size == 0)
        return;
    if (keep_n == keep_cap) {
        keep_cap = keep_cap ? 2 * keep_cap : 4096;
        keep_list = realloc(keep_list, keep_cap * sizeof(*keep_list));
        REQUIRE(keep_list != NULL);
    }
    kept *k = &keep_list[keep_n++];
    k->ptr = v->mv_data;
    k->len = v->mv_size;
    k->copy = malloc(v->mv_size);
    REQUIRE(k->copy != NULL);
    memcpy(k->copy, v->mv_data, v->mv_size);
    k->kind = kind;
    k->op = op;
    if (op >= 0 && op < 32)
        kept_by_op[op]++;
    else
        kept_by_op[31]++;
}

/* Compare every kept value with its copy, then forget them.  `when` names the moment. */
static void verify(const char *when)
{
    unsigned long long bad = 0;
    for (size_t i = 0; i < keep_n; i++) {
        kept *k = &keep_list[i];
        checked[k->kind]++;
        if (memcmp(k->ptr, k->copy, k->len) != 0) {
            changed[k->kind]++;
            if (bad++ < 5)
                fprintf(stderr, "  changed before %s: %s value of %zu bytes from op %d\n", when,
                        kind_name[k->kind], k->len, k->op);
        }
        free(k->copy);
    }
    mdbtest_checks++;
    if (bad) {
        mdbtest_failures++;
        fprintf(stderr, "FAIL %s:%d: %llu of %zu kept values changed before %s\n", __FILE__,
                __LINE__, bad, keep_n, when);
    }
    keep_n = 0;
}

/* An answer a read may give: found, not found, or a refusal of the op in that state. */
static void expect_read_rc(int rc, int op, int kind)
{
    mdbtest_checks++;
    if (rc == 0 || rc == MDB_NOTFOUND || rc == EINVAL || rc == MDB_INCOMPATIBLE)
        return;
    mdbtest_failures++;
    fprintf(stderr, "FAIL %s:%d: op %d on %s: %s\n", __FILE__, __LINE__, op, kind_name[kind],
            mdb_strerror(rc));
}

/* ---- the walk ---- */
static const MDB_cursor_op plain_ops[] = {
    MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_NEXT, MDB_NEXT, MDB_PREV, MDB_PREV, MDB_GET_CURRENT,
    MDB_SET, MDB_SET_KEY, MDB_SET_RANGE, MDB_NEXT_NODUP, MDB_PREV_NODUP};
static const MDB_cursor_op dup_ops[] = {
    MDB_FIRST_DUP, MDB_LAST_DUP, MDB_NEXT_DUP, MDB_NEXT_DUP, MDB_PREV_DUP, MDB_PREV_DUP,
    MDB_GET_BOTH, MDB_GET_BOTH_RANGE};
static const MDB_cursor_op multi_ops[] = {MDB_GET_MULTIPLE, MDB_NEXT_MULTIPLE, MDB_PREV_MULTIPLE};

/* One random read: a cursor op (of those that make sense for the kind) or mdb_get. */
static void one_read(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *c, int kind)
{
    char kb[32];
    uint8_t vb[16384];
    unsigned i = below(kind_keys[kind] + 2); /* now and then a key that is not there */
    MDB_val inkey = key_of(i, kb);
    MDB_val indata = value_of(kind, i, below(dups_of(kind, i) + 1), vb);
    MDB_val key = inkey, data = indata;
    unsigned pick = below(100);
    int op;
    if (pick < 8) {
        int rc = mdb_get(txn, dbi, &key, &data);
        expect_read_rc(rc, -1, kind);
        if (rc == 0)
            keep(&data, kind, 31);
        return;
    }
    if (is_fixed(kind) && pick < 30)
        op = multi_ops[below(3)];
    else if (is_dup(kind) && pick < 55)
        op = dup_ops[below(sizeof(dup_ops) / sizeof(dup_ops[0]))];
    else
        op = plain_ops[below(sizeof(plain_ops) / sizeof(plain_ops[0]))];
    if (op == MDB_GET_BOTH || op == MDB_GET_BOTH_RANGE) {
        if (!is_dup(kind))
            return;
    }
    int rc = mdb_cursor_get(c, &key, &data, (MDB_cursor_op)op);
    expect_read_rc(rc, op, kind);
    if (rc) {
        /* A cursor left by a failed call is put back on an item: some ops from there make
         * LMDB itself crash (0.9.24 and 0.9.36 assert in PREV_DUP after a missed SET),
         * and where a cursor stands then is not what this test is about. */
        MDB_val k2, d2;
        if (mdb_cursor_get(c, &k2, &d2, below(2) ? MDB_FIRST : MDB_LAST) == 0) {
            keep(&k2, kind, MDB_FIRST);
            keep(&d2, kind, MDB_FIRST);
        }
        return;
    }
    /* what the call gave back, not what we passed in */
    if (key.mv_data != inkey.mv_data)
        keep(&key, kind, op);
    if (data.mv_data != indata.mv_data) {
        keep(&data, kind, op);
        if (op == MDB_GET_MULTIPLE || op == MDB_NEXT_MULTIPLE || op == MDB_PREV_MULTIPLE)
            multiple_bytes += data.mv_size;
    }
}

/* One random write (in a write txn): puts and deletes by mdb_put/mdb_del and by cursor. */
static void one_write(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *c, int kind)
{
    char kb[32];
    uint8_t vb[16384];
    unsigned i = below(kind_keys[kind] + 20);
    MDB_val key = key_of(i, kb);
    MDB_val data = value_of(kind, i, below(dups_of(kind, i) + 40), vb);
    int rc;
    switch (below(6)) {
    case 0:
    case 1:
        rc = mdb_put(txn, dbi, &key, &data, 0);
        break;
    case 2:
        rc = mdb_cursor_put(c, &key, &data, is_dup(kind) ? MDB_NODUPDATA : MDB_NOOVERWRITE);
        break;
    case 3:
        rc = mdb_del(txn, dbi, &key, is_dup(kind) && below(2) ? &data : NULL);
        break;
    case 4: {
        MDB_val k, d;
        rc = mdb_cursor_get(c, &k, &d, MDB_GET_CURRENT);
        if (rc == 0)
            rc = mdb_cursor_del(c, 0);
        else
            rc = 0;
        break;
    }
    default: {
        /* overwrite the current value with bytes of the same size and order */
        MDB_val k, d;
        rc = mdb_cursor_get(c, &k, &d, MDB_GET_CURRENT);
        if (rc == 0 && d.mv_size <= sizeof(vb)) {
            memcpy(vb, d.mv_data, d.mv_size);
            if (d.mv_size > 4)
                vb[d.mv_size - 1] ^= 1; /* past the ordering prefix */
            MDB_val nd = {d.mv_size, vb};
            rc = mdb_cursor_put(c, &k, &nd, MDB_CURRENT);
        } else {
            rc = 0;
        }
        break;
    }
    }
    mdbtest_checks++;
    if (rc && rc != MDB_NOTFOUND && rc != MDB_KEYEXIST && rc != EINVAL) {
        mdbtest_failures++;
        fprintf(stderr, "FAIL %s:%d: write on %s: %s\n", __FILE__, __LINE__, kind_name[kind],
                mdb_strerror(rc));
    }
}

#define CURSORS 3

/* `ops` random reads over all databases with CURSORS cursors each; in a write txn a write
 * every `write_every` reads, with the kept values compared just before it. */
static void walk(MDB_txn *txn, MDB_dbi *dbis, int ops, int write_every)
{
    MDB_cursor *cur[NKINDS][CURSORS];
    for (int k = 0; k < NKINDS; k++)
        for (int j = 0; j < CURSORS; j++)
            CHECK(mdb_cursor_open(txn, dbis[k], &cur[k][j]));
    /* Walks that start from both ends and stay on one database a while, so that NEXT and
     * PREV move across many keys and pages between writes. */
    for (int n = 0; n < ops;) {
        int k = (int)below(NKINDS);
        int run = 1 + (int)below(60);
        for (int r = 0; r < run && n < ops; r++, n++) {
            one_read(txn, dbis[k], cur[k][below(CURSORS)], k);
            if (write_every && n % write_every == write_every - 1) {
                verify("a write");
                int wk = (int)below(NKINDS);
                one_write(txn, dbis[wk], cur[wk][below(CURSORS)], wk);
                /* The cursors of that database go to an item again, found afresh: LMDB
                 * (0.9.24, 0.9.36) crashes on some ops from where another cursor's
                 * delete leaves a cursor, which is not what this test is about. */
                for (int j = 0; j < CURSORS; j++) {
                    char kb[32];
                    MDB_val k2 = key_of(below(kind_keys[wk]), kb), d2;
                    if (mdb_cursor_get(cur[wk][j], &k2, &d2, MDB_SET_RANGE) != 0)
                        mdb_cursor_get(cur[wk][j], &k2, &d2, MDB_FIRST);
                }
            }
        }
    }
    for (int k = 0; k < NKINDS; k++)
        for (int j = 0; j < CURSORS; j++)
            mdb_cursor_close(cur[k][j]);
}

static void fill(MDB_env *env, MDB_dbi *dbis)
{
    MDB_txn *txn;
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (int k = 0; k < NKINDS; k++) {
        CHECK(mdb_dbi_open(txn, kind_name[k], MDB_CREATE | kind_flags[k], &dbis[k]));
        char kb[32];
        uint8_t vb[16384];
        for (unsigned i = 0; i < kind_keys[k]; i++) {
            MDB_val key = key_of(i, kb);
            for (unsigned j = 0; j < dups_of(k, i); j++) {
                MDB_val data = value_of(k, i, j, vb);
                CHECK(mdb_put(txn, dbis[k], &key, &data, 0));
            }
        }
    }
    CHECK(mdb_txn_commit(txn));
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    PATHF(dir, "%s/lifetime-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    MDB_env *env = mdbtest_open_dir(dir, (size_t)512 << 20, 16, 0);
    MDB_dbi dbis[NKINDS];
    fill(env, dbis);

    for (int round = 0; round < 4; round++) {
        MDB_txn *txn;
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        walk(txn, dbis, 6000, 0);
        verify("a read txn's end");
        mdb_txn_abort(txn);
    }
    for (int round = 0; round < 4; round++) {
        MDB_txn *txn;
        CHECK(mdb_txn_begin(env, NULL, 0, &txn));
        walk(txn, dbis, 6000, 25 + 50 * (round & 1));
        verify("a write txn's commit");
        CHECK(mdb_txn_commit(txn));
    }
    {   /* a nested txn: reads of the parent's dirty pages and the child's own */
        MDB_txn *parent, *child;
        CHECK(mdb_txn_begin(env, NULL, 0, &parent));
        walk(parent, dbis, 2000, 40);
        verify("a child's begin");
        CHECK(mdb_txn_begin(env, parent, 0, &child));
        walk(child, dbis, 4000, 40);
        verify("a child's commit");
        CHECK(mdb_txn_commit(child));
        walk(parent, dbis, 2000, 40);
        verify("a write txn's commit");
        CHECK(mdb_txn_commit(parent));
    }
    {   /* and a read txn again over what the writes left */
        MDB_txn *txn;
        CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        walk(txn, dbis, 6000, 0);
        verify("a read txn's end");
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    mdbtest_unlink_env(dir);
    rmdir(dir);

    unsigned long long all = 0, bad = 0;
    for (int k = 0; k < NKINDS; k++) {
        printf("  %-18s %8llu values checked, %llu changed\n", kind_name[k], checked[k],
               changed[k]);
        all += checked[k];
        bad += changed[k];
    }
    static const char *op_name[] = {
        "FIRST", "FIRST_DUP", "GET_BOTH", "GET_BOTH_RANGE", "GET_CURRENT", "GET_MULTIPLE",
        "LAST", "LAST_DUP", "NEXT", "NEXT_DUP", "NEXT_MULTIPLE", "NEXT_NODUP", "PREV",
        "PREV_DUP", "PREV_NODUP", "SET", "SET_KEY", "SET_RANGE", "PREV_MULTIPLE"};
    printf("  kept by op:");
    for (int op = 0; op < 19; op++) {
        printf(" %s %llu", op_name[op], kept_by_op[op]);
        /* every op must have given something to check, or the walk proves nothing */
        mdbtest_checks++;
        if (kept_by_op[op] == 0) {
            mdbtest_failures++;
            fprintf(stderr, "FAIL: no value kept from op %s\n", op_name[op]);
        }
    }
    printf(", mdb_get %llu; %llu bytes of MULTIPLE blocks\n", kept_by_op[31], multiple_bytes);
    printf("test_value_lifetime: %llu values checked, %llu changed; %d checks, %d failed\n", all,
           bad, mdbtest_checks, mdbtest_failures);
    return TEST_STATUS();
}
