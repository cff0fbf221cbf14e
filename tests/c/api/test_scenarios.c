/*
 * test_scenarios.c -- deterministic scenarios through the public API, in the spirit of
 * LMDB's mtest*.c sample programs but with real assertions on results, not only on return
 * codes.  Compiled against Debian's lmdb.h, linked with the library under test (so it is
 * proven against real LMDB in LMDB_IMPL=system first).
 *
 *   s_random_model     random puts/deletes with NOOVERWRITE over several txns (some
 *                      aborted), checked against an in-memory model after each txn
 *   s_delete_while_walking   mdb_cursor_del during a NEXT walk deletes every other key
 *   s_dupsort          DUPSORT: NODUPDATA, per-pair delete, NEXT_DUP/NEXT_NODUP/PREV_DUP,
 *                      GET_BOTH_RANGE, a key grown to 500 dups (sub-DB), count
 *   s_dupfixed         DUPSORT|DUPFIXED: GET_MULTIPLE/NEXT_MULTIPLE return the values
 *                      packed, in order, all of them
 *   s_nested           child txns: commit merges, abort discards, the parent sees both
 *   s_append_reserve   APPEND in order, APPEND out of order -> MDB_KEYEXIST, RESERVE
 *   s_map_full_resize  a small map fills (MDB_MAP_FULL), the txn is aborted, the map is
 *                      grown with mdb_env_set_mapsize and the same txn then commits
 *   s_copy             mdb_env_copy and mdb_env_copy2(MDB_CP_COMPACT) give environments
 *                      with the same content; the compacted one is not larger
 *   s_readers          mdb_reader_list shows our reader; mdb_reader_check finds no dead one
 *   s_long_lookup_keys lookups with keys over the maximum size miss (MDB_NOTFOUND; SET_RANGE
 *                      finds the next key); an empty key is MDB_BAD_VALSIZE
 *   s_cursor_after_delete  where a cursor stands after mdb_cursor_del and after a call that
 *                      fails or succeeds next to it, on plain and DUPSORT databases, and
 *                      after a put into the tree its delete emptied
 *   s_next_after_first_dup  MDB_NEXT after MDB_LAST, MDB_FIRST_DUP: the next duplicate from
 *                      LMDB 0.9.36 on, MDB_NOTFOUND in 0.9.24 and older (by mdb_version);
 *                      the same split for PREV_DUP on a cursor standing on no item
 *   s_cursor_after_miss  after an exact lookup misses on a DUPSORT database, GET_CURRENT,
 *                      FIRST_DUP, LAST_DUP, count and mdb_cursor_del answer EINVAL on a key
 *                      with duplicates and nothing is deleted; on a key with one value, and
 *                      on a plain database, the cursor stands on the next key
 *                      (a cursor at the end whose miss needs no search keeps its end mark)
 *   s_txn_error_paths  nested begin under MDB_WRITEMAP (MDB_BAD_TXN), calls on a reset read
 *                      txn (EINVAL), a named database's record written through the main
 *                      database (MDB_INCOMPATIBLE; a delete fails the txn and its parent)
 *   s_refused_dup_put_commits  a DUPSORT put refused because the pair exists (NODUPDATA,
 *                      APPENDDUP) still makes the commit a new snapshot (txn id + 1), as
 *                      in LMDB; a refused NOOVERWRITE put or a missed delete does not
 *   s_handle_slots     2,000 named databases: handles are given out in slot order, reopened
 *                      by name to the same handle; closed and aborted handles free their
 *                      slots, which new names then take lowest first (as LMDB does)
 *   s_parent_cursor_in_child  a cursor of a txn that begins a child works in the child
 *                      (mdb_cursor_txn is the child, it sees the child's writes and moves
 *                      past them); the child's abort puts it back where it stood, its
 *                      commit leaves it where the child left it; closing it inside the
 *                      child or aborting the parent with the child alive is safe
 *
 * Every scenario runs in its own environment under $TMPDIR.  Exit status 0 when every
 * check passed; each failed check is printed with its line.
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

#include "mdbtest.h" /* MUST stops the scenario (not the program) when a step it depends on failed */

static char base[4096];

static MDB_val S(const char *s) {
    MDB_val v = {strlen(s), (void *)s};
    return v;
}
static int eq(MDB_val v, const void *p, size_t n) {
    return v.mv_size == n && (n == 0 || memcmp(v.mv_data, p, n) == 0);
}

static unsigned long long rng = MDBTEST_XORSHIFT_SEED;
static uint64_t rnd(void) {
    return mdbtest_xorshift(&rng);
}

/* A fresh environment directory for one scenario. */
static MDB_env *open_env(const char *name, size_t mapsize, int maxdbs, unsigned flags,
                         char *dir_out) {
    MDB_env *env;
    snprintf(dir_out, 4200, "%s/%s", base, name);
    mkdir(dir_out, 0755);
    if (mdb_env_create(&env)) return NULL;
    mdb_env_set_mapsize(env, mapsize);
    mdb_env_set_maxdbs(env, (MDB_dbi)maxdbs);
    int rc = mdb_env_open(env, dir_out, flags, 0644);
    if (rc) {
        fprintf(stderr, "FAIL %s: mdb_env_open(%s): %s\n", name, dir_out, mdb_strerror(rc));
        mdbtest_failures++;
        mdb_env_close(env);
        return NULL;
    }
    return env;
}

/* ---- random puts and deletes against a model ---- */
#define NK 600
static void s_random_model(void) {
    char dir[4200];
    MDB_env *env = open_env("random", 64 << 20, 0, 0, dir);
    if (!env) return;
    int model[NK]; /* -1 = absent, else the value's length */
    for (int i = 0; i < NK; i++) model[i] = -1;
    static char vbuf[6000];
    memset(vbuf, 'v', sizeof vbuf);
    for (int round = 0; round < 30; round++) {
        MDB_txn *txn;
        MDB_dbi dbi;
        int shadow[NK];
        memcpy(shadow, model, sizeof model);
        MUST(mdb_txn_begin(env, NULL, 0, &txn));
        MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
        for (int op = 0; op < 80; op++) {
            int i = (int)(rnd() % NK);
            char kb[16];
            snprintf(kb, sizeof kb, "key%05d", i);
            MDB_val k = S(kb);
            if (rnd() % 3) {
                int len = (int)(rnd() % 8 == 0 ? rnd() % 6000 : rnd() % 100);
                MDB_val v = {(size_t)len, vbuf};
                int rc = mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE);
                if (shadow[i] >= 0) {
                    EXPECT_MSG(rc == MDB_KEYEXIST, "NOOVERWRITE on existing key%05d: %d", i, rc);
                    EXPECT_MSG(rc != MDB_KEYEXIST || v.mv_size == (size_t)shadow[i],
                           "KEYEXIST returns the existing value (%zu, want %d)", v.mv_size,
                           shadow[i]);
                } else {
                    EXPECT_MSG(rc == 0, "put key%05d: %s", i, mdb_strerror(rc));
                    shadow[i] = len;
                }
            } else {
                int rc = mdb_del(txn, dbi, &k, NULL);
                EXPECT_MSG(rc == (shadow[i] >= 0 ? 0 : MDB_NOTFOUND), "del key%05d: %d", i, rc);
                shadow[i] = -1;
            }
        }
        if (round % 5 == 4) {
            mdb_txn_abort(txn); /* the model keeps the old state */
        } else {
            MUST(mdb_txn_commit(txn));
            memcpy(model, shadow, sizeof model);
        }
        /* Check the whole content in a read txn, forwards and backwards. */
        MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
        MDB_cursor *cur;
        MUST(mdb_cursor_open(txn, dbi, &cur));
        MDB_val k, v;
        int rc, expect_i = -1, seen = 0, bad = 0;
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            do expect_i++; while (expect_i < NK && model[expect_i] < 0);
            char want[16];
            snprintf(want, sizeof want, "key%05d", expect_i);
            if (expect_i >= NK || !eq(k, want, strlen(want)) ||
                v.mv_size != (size_t)model[expect_i])
                bad++;
            seen++;
        }
        int present = 0;
        for (int i = 0; i < NK; i++) present += model[i] >= 0;
        EXPECT_MSG(rc == MDB_NOTFOUND && bad == 0 && seen == present,
               "round %d: walked %d items (%d wrong), model has %d", round, seen, bad, present);
        int back = 0;
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_LAST); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_PREV))
            back++;
        EXPECT_MSG(back == present, "round %d: backward walk %d, want %d", round, back, present);
        MDB_stat st;
        EXPECT_OK(mdb_stat(txn, dbi, &st));
        EXPECT_MSG(st.ms_entries == (size_t)present, "entries %zu want %d", st.ms_entries, present);
        mdb_cursor_close(cur);
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
}

/* ---- cursor delete during a walk ---- */
static void s_delete_while_walking(void) {
    char dir[4200];
    MDB_env *env = open_env("cdel", 16 << 20, 0, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    char kb[16];
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (int i = 0; i < 2000; i++) {
        snprintf(kb, sizeof kb, "k%05d", i);
        k = S(kb);
        v = S("some value of moderate length");
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
    }
    MUST(mdb_cursor_open(txn, dbi, &cur));
    int n = 0, rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (n++ % 2 == 0) EXPECT_OK(mdb_cursor_del(cur, 0));
    }
    EXPECT_MSG(n == 2000, "walk while deleting saw %d items, want 2000", n);
    MDB_stat st;
    EXPECT_OK(mdb_stat(txn, dbi, &st));
    EXPECT_MSG(st.ms_entries == 1000, "entries after deleting every other: %zu", st.ms_entries);
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_FIRST));
    EXPECT_MSG(eq(k, "k00001", 6), "first remaining key is k00001");
    EXPECT_OK(mdb_txn_commit(txn));
    mdb_env_close(env);
}

/* ---- DUPSORT ---- */
static void s_dupsort(void) {
    char dir[4200];
    MDB_env *env = open_env("dupsort", 16 << 20, 2, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    char vb[32];
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, "d", MDB_CREATE | MDB_DUPSORT, &dbi));
    const char *keys[] = {"apple", "banana", "cherry"};
    for (int kk = 0; kk < 3; kk++)
        for (int j = 9; j >= 0; j--) {
            snprintf(vb, sizeof vb, "v%02d", j * 3);
            k = S(keys[kk]);
            v = S(vb);
            EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
        }
    k = S("banana");
    v = S("v03");
    EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_NODUPDATA), MDB_KEYEXIST);
    EXPECT_OK(mdb_del(txn, dbi, &k, &v)); /* one pair */
    for (int j = 0; j < 500; j++) { /* grow one key into a sub-database */
        snprintf(vb, sizeof vb, "big-%04d-padding-padding", j);
        k = S("zebra");
        v = S(vb);
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
    }
    MUST(mdb_txn_commit(txn));

    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    MUST(mdb_cursor_open(txn, dbi, &cur));
    k = S("banana");
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_SET));
    size_t cnt = 0;
    EXPECT_OK(mdb_cursor_count(cur, &cnt));
    EXPECT_MSG(cnt == 9, "banana has %zu dups, want 9", cnt);
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_FIRST_DUP));
    EXPECT_MSG(eq(v, "v00", 3), "first dup v00");
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP));
    EXPECT_MSG(eq(v, "v06", 3), "v03 was deleted, next dup is v06");
    int n = 2;
    while (mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP) == 0) n++;
    EXPECT_MSG(n == 9, "NEXT_DUP walked %d dups", n);
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_PREV_DUP));
    EXPECT_MSG(eq(v, "v24", 3), "PREV_DUP from the last goes to v24");
    k = S("cherry");
    v = S("v10");
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_GET_BOTH_RANGE));
    EXPECT_MSG(eq(v, "v12", 3), "GET_BOTH_RANGE v10 -> v12");
    int nodup = 0;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_NODUP))
        nodup++;
    EXPECT_MSG(nodup == 4, "NEXT_NODUP sees %d keys, want 4", nodup);
    k = S("zebra");
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_SET));
    EXPECT_OK(mdb_cursor_count(cur, &cnt));
    EXPECT_MSG(cnt == 500, "zebra has %zu dups, want 500", cnt);
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_LAST_DUP));
    EXPECT_MSG(eq(v, "big-0499-padding-padding", 24), "last dup of zebra");
    MDB_stat st;
    EXPECT_OK(mdb_stat(txn, dbi, &st));
    EXPECT_MSG(st.ms_entries == 3 * 10 - 1 + 500, "entries %zu", st.ms_entries);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

/* ---- DUPFIXED and the MULTIPLE ops ---- */
static void s_dupfixed(void) {
    char dir[4200];
    MDB_env *env = open_env("dupfixed", 16 << 20, 2, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, "f", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &dbi));
    for (uint64_t j = 0; j < 3000; j++) {
        uint64_t x = (j * 7919) % 3000; /* out of order */
        k = S("ids");
        v.mv_size = sizeof x;
        v.mv_data = &x;
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
    }
    MUST(mdb_txn_commit(txn));
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    MUST(mdb_cursor_open(txn, dbi, &cur));
    k = S("ids");
    EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_SET));
    size_t total = 0;
    int sorted = 1, rc;
    static unsigned char seen[3000];
    unsigned char prev[8] = {0};
    memset(seen, 0, sizeof seen);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_GET_MULTIPLE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_MULTIPLE)) {
        EXPECT_MSG(v.mv_size % 8 == 0 && v.mv_size > 0, "MULTIPLE block of %zu bytes", v.mv_size);
        for (size_t off = 0; off + 8 <= v.mv_size; off += 8) {
            uint64_t x;
            const unsigned char *p = (const unsigned char *)v.mv_data + off;
            memcpy(&x, p, 8);
            /* No INTEGERDUP: duplicates sort as bytes (memcmp of the little-endian form). */
            if (total > 0 && memcmp(prev, p, 8) >= 0) sorted = 0;
            memcpy(prev, p, 8);
            if (x < 3000) seen[x]++;
            total++;
        }
    }
    int each_once = 1;
    for (int j = 0; j < 3000; j++) each_once &= seen[j] == 1;
    EXPECT_MSG(rc == MDB_NOTFOUND, "MULTIPLE walk ended with %d", rc);
    EXPECT_MSG(total == 3000 && each_once && sorted,
           "MULTIPLE returned %zu values (want 3000), each once: %d, sorted: %d", total,
           each_once, sorted);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

/* ---- nested transactions ---- */
static void s_nested(void) {
    char dir[4200];
    MDB_env *env = open_env("nested", 16 << 20, 0, 0, dir);
    if (!env) return;
    MDB_txn *parent, *child;
    MDB_dbi dbi;
    MDB_val k, v;
    MUST(mdb_txn_begin(env, NULL, 0, &parent));
    MUST(mdb_dbi_open(parent, NULL, 0, &dbi));
    k = S("p");
    v = S("parent");
    EXPECT_OK(mdb_put(parent, dbi, &k, &v, 0));
    MUST(mdb_txn_begin(env, parent, 0, &child));
    k = S("c1");
    v = S("committed child");
    EXPECT_OK(mdb_put(child, dbi, &k, &v, 0));
    k = S("p");
    EXPECT_OK(mdb_get(child, dbi, &k, &v));
    EXPECT_MSG(eq(v, "parent", 6), "child sees the parent's write");
    MUST(mdb_txn_commit(child));
    MUST(mdb_txn_begin(env, parent, 0, &child));
    k = S("c2");
    v = S("aborted child");
    EXPECT_OK(mdb_put(child, dbi, &k, &v, 0));
    k = S("p");
    EXPECT_OK(mdb_del(child, dbi, &k, NULL));
    mdb_txn_abort(child);
    k = S("c1");
    EXPECT_OK(mdb_get(parent, dbi, &k, &v));
    k = S("c2");
    EXPECT_RC(mdb_get(parent, dbi, &k, &v), MDB_NOTFOUND);
    k = S("p");
    EXPECT_OK(mdb_get(parent, dbi, &k, &v));
    MUST(mdb_txn_commit(parent));
    MDB_txn *r;
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    MDB_stat st;
    EXPECT_OK(mdb_stat(r, dbi, &st));
    EXPECT_MSG(st.ms_entries == 2, "after nested commits: %zu entries, want 2 (p, c1)",
           st.ms_entries);
    mdb_txn_abort(r);
    mdb_env_close(env);
}

/* ---- APPEND and RESERVE ---- */
static void s_append_reserve(void) {
    char dir[4200];
    MDB_env *env = open_env("append", 16 << 20, 0, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k, v;
    char kb[16];
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (int i = 0; i < 5000; i++) {
        snprintf(kb, sizeof kb, "a%06d", i);
        k = S(kb);
        v = S("appended");
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, MDB_APPEND));
    }
    k = S("a000100");
    v = S("late");
    EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_APPEND), MDB_KEYEXIST);
    k = S("reserved");
    v.mv_size = 3000;
    v.mv_data = NULL;
    EXPECT_OK(mdb_put(txn, dbi, &k, &v, MDB_RESERVE));
    EXPECT_MSG(v.mv_data != NULL && v.mv_size == 3000, "RESERVE gives a 3000-byte buffer");
    if (v.mv_data) memset(v.mv_data, 'R', 3000);
    MUST(mdb_txn_commit(txn));
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    MDB_stat st;
    EXPECT_OK(mdb_stat(txn, dbi, &st));
    EXPECT_MSG(st.ms_entries == 5001, "entries %zu", st.ms_entries);
    k = S("reserved");
    EXPECT_OK(mdb_get(txn, dbi, &k, &v));
    int all_r = v.mv_size == 3000;
    for (size_t i = 0; all_r && i < v.mv_size; i++) all_r &= ((char *)v.mv_data)[i] == 'R';
    EXPECT_MSG(all_r, "the reserved value holds what was written into it");
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

/* ---- MDB_MAP_FULL, then a bigger map ---- */
static void s_map_full_resize(void) {
    char dir[4200];
    MDB_env *env = open_env("mapfull", 1 << 20, 0, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k, v;
    char kb[16];
    static char big[1000];
    memset(big, 'x', sizeof big);
    int rc = 0, i;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (i = 0; i < 5000 && rc == 0; i++) {
        snprintf(kb, sizeof kb, "m%05d", i);
        k = S(kb);
        v.mv_size = sizeof big;
        v.mv_data = big;
        rc = mdb_put(txn, dbi, &k, &v, 0);
    }
    EXPECT_MSG(rc == MDB_MAP_FULL, "a 1 MiB map filled with 5 MB: rc %d (%s) after %d puts", rc,
           mdb_strerror(rc), i);
    mdb_txn_abort(txn);
    EXPECT_OK(mdb_env_set_mapsize(env, 64 << 20));
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    for (i = 0; i < 5000; i++) {
        snprintf(kb, sizeof kb, "m%05d", i);
        k = S(kb);
        v.mv_size = sizeof big;
        v.mv_data = big;
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
    }
    EXPECT_OK(mdb_txn_commit(txn));
    MDB_envinfo info;
    EXPECT_OK(mdb_env_info(env, &info));
    EXPECT_MSG(info.me_mapsize == 64 << 20, "mapsize after resize %zu", info.me_mapsize);
    mdb_env_close(env);
    /* Reopen with mapsize 0: the size recorded in the file is adopted. */
    MDB_env *env2;
    MUST(mdb_env_create(&env2));
    EXPECT_OK(mdb_env_open(env2, dir, MDB_RDONLY, 0644));
    EXPECT_OK(mdb_env_info(env2, &info));
    EXPECT_MSG(info.me_mapsize == 64 << 20, "reopened mapsize %zu (want the persisted 64 MiB)",
           info.me_mapsize);
    mdb_env_close(env2);
}

/* Count all items of a DB of the env at dir (read-only open). */
static long count_items(const char *dir, size_t *filesize) {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_stat st;
    char p[4300];
    struct stat sb;
    snprintf(p, sizeof p, "%s/data.mdb", dir);
    *filesize = stat(p, &sb) == 0 ? (size_t)sb.st_size : 0;
    if (mdb_env_create(&env)) return -1;
    if (mdb_env_open(env, dir, MDB_RDONLY, 0644)) { mdb_env_close(env); return -1; }
    long n = -1;
    if (mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
        if (mdb_dbi_open(txn, NULL, 0, &dbi) == 0 && mdb_stat(txn, dbi, &st) == 0)
            n = (long)st.ms_entries;
        mdb_txn_abort(txn);
    }
    mdb_env_close(env);
    return n;
}

/* ---- copies ---- */
static void s_copy(void) {
    char dir[4200], c1[4300], c2[4300];
    MDB_env *env = open_env("copysrc", 64 << 20, 0, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_val k, v;
    char kb[16];
    static char val[700];
    memset(val, 'c', sizeof val);
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
    for (int i = 0; i < 4000; i++) {
        snprintf(kb, sizeof kb, "c%05d", i);
        k = S(kb);
        v.mv_size = sizeof val;
        v.mv_data = val;
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
    }
    MUST(mdb_txn_commit(txn));
    MUST(mdb_txn_begin(env, NULL, 0, &txn)); /* free half of it */
    for (int i = 0; i < 4000; i += 2) {
        snprintf(kb, sizeof kb, "c%05d", i);
        k = S(kb);
        EXPECT_OK(mdb_del(txn, dbi, &k, NULL));
    }
    MUST(mdb_txn_commit(txn));
    snprintf(c1, sizeof c1, "%s/copy-plain", base);
    snprintf(c2, sizeof c2, "%s/copy-compact", base);
    mkdir(c1, 0755);
    mkdir(c2, 0755);
    EXPECT_OK(mdb_env_copy(env, c1));
    EXPECT_OK(mdb_env_copy2(env, c2, MDB_CP_COMPACT));
    mdb_env_close(env);
    size_t s0, s1, s2;
    long n0 = count_items(dir, &s0), n1 = count_items(c1, &s1), n2 = count_items(c2, &s2);
    EXPECT_MSG(n0 == 2000 && n1 == 2000 && n2 == 2000, "items: source %ld, copy %ld, compact %ld",
           n0, n1, n2);
    EXPECT_MSG(s2 > 0 && s2 <= s1, "compacted copy %zu bytes, plain copy %zu", s2, s1);
}

/* ---- the reader table ---- */
static int collect(const char *msg, void *ctx) {
    strncat((char *)ctx, msg, 4000 - strlen((char *)ctx) - 1);
    return 0;
}
static void s_readers(void) {
    char dir[4200];
    MDB_env *env = open_env("readers", 16 << 20, 0, 0, dir);
    if (!env) return;
    MDB_txn *w, *r;
    MDB_dbi dbi;
    MDB_val k = S("k"), v = S("v");
    MUST(mdb_txn_begin(env, NULL, 0, &w));
    MUST(mdb_dbi_open(w, NULL, 0, &dbi));
    EXPECT_OK(mdb_put(w, dbi, &k, &v, 0));
    MUST(mdb_txn_commit(w));
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
    char buf[4000] = "";
    EXPECT_OK(mdb_reader_list(env, collect, buf));
    char pid[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    EXPECT_MSG(strstr(buf, "pid") && strstr(buf, "txnid") && strstr(buf, pid),
           "reader list shows our pid %s:\n%s", pid, buf);
    int dead = -1;
    EXPECT_OK(mdb_reader_check(env, &dead));
    EXPECT_MSG(dead == 0, "dead readers %d", dead);
    mdb_txn_abort(r);
    mdb_env_close(env);
}

/* ---- lookups with keys longer than any key can be (issue 12, divergence 1) ----
 * A stored key is at most mdb_env_get_maxkeysize() bytes, so a longer lookup key is an
 * ordinary miss: MDB_NOTFOUND from mdb_get, mdb_del, MDB_SET, MDB_SET_KEY and
 * MDB_GET_BOTH; MDB_SET_RANGE finds the next key in order.  Only an empty key is
 * MDB_BAD_VALSIZE.  LMDB behaves so; programs look up user-supplied keys this way. */
static void s_long_lookup_keys(void) {
    char dir[4200];
    MDB_env *env = open_env("longkeys", 16 << 20, 4, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi plain, dups;
    MDB_cursor *cur;
    MDB_val k, v;
    int maxkey = mdb_env_get_maxkeysize(env);
    size_t sizes[] = {(size_t)maxkey + 1, 600, 2 * (size_t)maxkey + 1, 5000};
    char *big = malloc(6000);
    if (!big) return;
    memset(big, 'm', 6000); /* sorts between "a..." and "z..." */
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, "plain", MDB_CREATE, &plain));
    MUST(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dups));
    const char *keys[] = {"apple", "mango", "zebra"};
    for (int i = 0; i < 3; i++) {
        k = S(keys[i]);
        v = S("value");
        EXPECT_OK(mdb_put(txn, plain, &k, &v, 0));
        EXPECT_OK(mdb_put(txn, dups, &k, &v, 0));
        v = S("second");
        EXPECT_OK(mdb_put(txn, dups, &k, &v, 0));
    }
    MUST(mdb_txn_commit(txn));

    MDB_dbi dbis[] = {plain, dups};
    for (int d = 0; d < 2; d++) {
        MUST(mdb_txn_begin(env, NULL, 0, &txn));
        MUST(mdb_cursor_open(txn, dbis[d], &cur));
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            MDB_val lk = {sizes[s], big};
            k = lk;
            EXPECT_RC(mdb_get(txn, dbis[d], &k, &v), MDB_NOTFOUND);
            k = lk;
            EXPECT_RC(mdb_del(txn, dbis[d], &k, NULL), MDB_NOTFOUND);
            k = lk;
            EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_SET), MDB_NOTFOUND);
            k = lk;
            EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_SET_KEY), MDB_NOTFOUND);
            k = lk;
            EXPECT_OK(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE));
            EXPECT_MSG(eq(k, "zebra", 5), "SET_RANGE with a %zu-byte key lands on zebra", sizes[s]);
            if (dbis[d] == dups) {
                k = lk;
                v = S("value");
                EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_GET_BOTH), MDB_NOTFOUND);
                k = S("mango");
                v = lk;
                EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_GET_BOTH), MDB_NOTFOUND);
                k = S("mango");
                v = lk;
                EXPECT_RC(mdb_del(txn, dbis[d], &k, &v), MDB_NOTFOUND);
            }
        }
        /* an over-long key past every key: SET_RANGE misses too */
        memset(big, '~', 600);
        k.mv_size = 600;
        k.mv_data = big;
        EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE), MDB_NOTFOUND);
        memset(big, 'm', 600);
        /* an empty key stays an error */
        MDB_val ek = {0, big};
        k = ek;
        EXPECT_RC(mdb_get(txn, dbis[d], &k, &v), MDB_BAD_VALSIZE);
        k = ek;
        EXPECT_RC(mdb_del(txn, dbis[d], &k, NULL), MDB_BAD_VALSIZE);
        k = ek;
        EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_SET), MDB_BAD_VALSIZE);
        k = ek;
        EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE), MDB_BAD_VALSIZE);
        /* the misses changed nothing and did not end the txn */
        k = S("mango");
        EXPECT_OK(mdb_get(txn, dbis[d], &k, &v));
        mdb_cursor_close(cur);
        MDB_stat st;
        EXPECT_OK(mdb_stat(txn, dbis[d], &st));
        EXPECT_MSG(st.ms_entries == (d ? 6u : 3u), "entries %zu after the misses", st.ms_entries);
        EXPECT_OK(mdb_txn_commit(txn));
    }
    free(big);
    mdb_env_close(env);
}

/* ---- cursor position after deletes (issue 12, divergences 3 and 4) ---- */

/* One step of a cursor script: the op, and the key/value it must land on ("" = the call
 * must fail with `want_rc`). */
struct step {
    MDB_cursor_op op;
    const char *key, *val; /* the lookup key/value for SET/GET_BOTH, else NULL */
    int want_rc;
    const char *want_key, *want_val;
};
#define DEL_STEP ((MDB_cursor_op)-1)
#define DELND_STEP ((MDB_cursor_op)-2) /* mdb_cursor_del(MDB_NODUPDATA) */
#define COUNT_STEP ((MDB_cursor_op)-3) /* mdb_cursor_count: want_rc, then the count in want_val */
#define ENTRIES_STEP ((MDB_cursor_op)-4) /* mdb_stat: the entries must be want_rc */
#define PUTNO_STEP ((MDB_cursor_op)-5)   /* mdb_cursor_put(key, val, MDB_NOOVERWRITE) */
#define TXNPUT_STEP ((MDB_cursor_op)-6)  /* mdb_put(txn, key, val, 0): the cursor stays put */
#define CURPUT_STEP ((MDB_cursor_op)-7)  /* mdb_cursor_put(key, val, MDB_CURRENT) */
#define APPEND_STEP ((MDB_cursor_op)-8)  /* mdb_cursor_put(key, val, MDB_APPEND) */
#define CPUT_STEP ((MDB_cursor_op)-9)    /* mdb_cursor_put(key, val, 0) */

/* Fill a fresh database from "k=v k=v ..." and run the steps on one cursor. */
static void run_cursor_script(const char *name, unsigned dbflags, const char *pairs,
                              const struct step *steps, int nsteps) {
    char dir[4200];
    MDB_env *env = open_env(name, 16 << 20, 2, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, "t", MDB_CREATE | dbflags, &dbi));
    char buf[512];
    snprintf(buf, sizeof buf, "%s", pairs);
    for (char *save = NULL, *p = strtok_r(buf, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
        char *eqs = strchr(p, '=');
        *eqs = 0;
        MDB_val k = S(p), v = S(eqs + 1);
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
    }
    MUST(mdb_cursor_open(txn, dbi, &cur));
    for (int i = 0; i < nsteps; i++) {
        const struct step *st = &steps[i];
        int rc;
        MDB_val k = {0, NULL}, v = {0, NULL};
        if (st->op == DEL_STEP || st->op == DELND_STEP) {
            rc = mdb_cursor_del(cur, st->op == DELND_STEP ? MDB_NODUPDATA : 0);
        } else if (st->op == COUNT_STEP) {
            size_t n = 0;
            rc = mdb_cursor_count(cur, &n);
            if (rc == 0 && st->want_val)
                EXPECT_MSG(n == (size_t)atoi(st->want_val), "%s step %d: count %zu, want %s",
                           name, i, n, st->want_val);
            EXPECT_MSG(rc == st->want_rc, "%s step %d (count): rc %d (%s), want %d", name, i,
                       rc, mdb_strerror(rc), st->want_rc);
            continue;
        } else if (st->op == PUTNO_STEP) {
            k = S(st->key), v = S(st->val);
            rc = mdb_cursor_put(cur, &k, &v, MDB_NOOVERWRITE);
        } else if (st->op == CURPUT_STEP || st->op == APPEND_STEP || st->op == CPUT_STEP) {
            k = S(st->key), v = S(st->val);
            rc = mdb_cursor_put(cur, &k, &v,
                                st->op == CURPUT_STEP ? MDB_CURRENT
                                : st->op == APPEND_STEP ? MDB_APPEND : 0);
        } else if (st->op == TXNPUT_STEP) {
            k = S(st->key), v = S(st->val);
            rc = mdb_put(txn, dbi, &k, &v, 0);
            EXPECT_MSG(rc == st->want_rc, "%s step %d (put): rc %d (%s), want %d", name, i, rc,
                       mdb_strerror(rc), st->want_rc);
            continue;
        } else if (st->op == ENTRIES_STEP) {
            MDB_stat stat;
            EXPECT_OK(mdb_stat(txn, dbi, &stat));
            EXPECT_MSG(stat.ms_entries == (size_t)st->want_rc, "%s step %d: %zu entries, want %d",
                       name, i, stat.ms_entries, st->want_rc);
            continue;
        } else {
            if (st->key) k = S(st->key);
            if (st->val) v = S(st->val);
            rc = mdb_cursor_get(cur, &k, &v, st->op);
        }
        EXPECT_MSG(rc == st->want_rc, "%s step %d (op %d): rc %d (%s), want %d", name, i,
               (int)st->op, rc, mdb_strerror(rc), st->want_rc);
        if (rc == 0 && st->want_key) {
            /* FIRST_DUP/LAST_DUP and friends leave the key alone; check it only when set */
            EXPECT_MSG(k.mv_data == NULL || eq(k, st->want_key, strlen(st->want_key)),
                   "%s step %d: key %.*s, want %s", name, i, (int)k.mv_size,
                   (char *)k.mv_data, st->want_key);
            EXPECT_MSG(eq(v, st->want_val, strlen(st->want_val)), "%s step %d: value %.*s, want %s",
                   name, i, (int)v.mv_size, (char *)v.mv_data, st->want_val);
        }
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}
#define NSTEPS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void s_cursor_after_delete(void) {
    /* A delete leaves the cursor on the record that slid into the slot: the next NEXT
     * returns it.  Any other call in between -- failed or not -- ends that: NEXT then moves
     * past it (LMDB 0.9, all releases). */
    const struct step fail_between[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_GET_BOTH, "b", "1", MDB_INCOMPATIBLE, NULL, NULL},
        {MDB_NEXT, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("del-fail-next", 0, "a=1 b=1 c=1 d=1", fail_between, NSTEPS(fail_between));
    const struct step current_between[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, 0, "b", "1"},
        {MDB_NEXT, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("del-current-next", 0, "a=1 b=1 c=1 d=1", current_between,
                      NSTEPS(current_between));
    const struct step next_right_away[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_NEXT, NULL, NULL, 0, "b", "1"},
        {MDB_NEXT, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("del-next", 0, "a=1 b=1 c=1 d=1", next_right_away, NSTEPS(next_right_away));
    /* DUPSORT: a whole key deleted, its successor has duplicates; a failed call in between
     * still leaves NEXT on the successor's first value (the mark moved to its duplicates) */
    const struct step dup_successor[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_GET_MULTIPLE, NULL, NULL, MDB_INCOMPATIBLE, NULL, NULL},
        {MDB_NEXT, NULL, NULL, 0, "b", "1"},
        {MDB_NEXT, NULL, NULL, 0, "b", "2"},
    };
    run_cursor_script("dup-del-fail-next", MDB_DUPSORT, "a=1 b=1 b=2 b=3", dup_successor,
                      NSTEPS(dup_successor));
    const struct step dup_successor_current[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, 0, "b", "1"},
        {MDB_NEXT, NULL, NULL, 0, "b", "2"},
        {MDB_NEXT, NULL, NULL, 0, "b", "3"},
        {MDB_NEXT, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
    };
    run_cursor_script("dup-del-current", MDB_DUPSORT, "a=1 b=1 b=2 b=3", dup_successor_current,
                      NSTEPS(dup_successor_current));
    /* DUPSORT: the last value of a key deleted while others remain: the cursor stays on the
     * key, past its last value */
    const struct step last_dup_next[] = {
        {MDB_GET_BOTH, "b", "2", 0, "b", "2"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_NEXT, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("lastdup-next", MDB_DUPSORT, "a=1 b=1 b=2 c=1", last_dup_next,
                      NSTEPS(last_dup_next));
    const struct step last_dup_prev[] = {
        {MDB_GET_BOTH, "b", "2", 0, "b", "2"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_PREV, NULL, NULL, 0, "b", "1"},
    };
    run_cursor_script("lastdup-prev", MDB_DUPSORT, "a=1 b=1 b=2 c=1", last_dup_prev,
                      NSTEPS(last_dup_prev));
    const struct step last_dup_prev_nodup[] = {
        {MDB_GET_BOTH, "b", "2", 0, "b", "2"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_PREV_NODUP, NULL, NULL, 0, "a", "1"},
    };
    run_cursor_script("lastdup-prevnodup", MDB_DUPSORT, "a=1 b=1 b=2 c=1", last_dup_prev_nodup,
                      NSTEPS(last_dup_prev_nodup));
    const struct step last_dup_next_dup[] = {
        {MDB_GET_BOTH, "b", "2", 0, "b", "2"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_NEXT_DUP, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_NEXT, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("lastdup-nextdup", MDB_DUPSORT, "a=1 b=1 b=2 c=1", last_dup_next_dup,
                      NSTEPS(last_dup_next_dup));
    /* The delete mark of a whole-key delete survives a put refused by MDB_NOOVERWRITE
     * (LMDB clears it only past that check) and the delete of one of several duplicates
     * (which leaves the main cursor's marks alone): NEXT_DUP then answers NOTFOUND */
    const struct step mark_kept[] = {
        {MDB_SET_KEY, "c", NULL, 0, "c", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {PUTNO_STEP, "b", "9", MDB_KEYEXIST, NULL, NULL},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_NEXT_DUP, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
        {ENTRIES_STEP, NULL, NULL, 3, NULL, NULL},
    };
    run_cursor_script("delmark-kept", MDB_DUPSORT, "a=1 b=1 b=2 c=1 d=1", mark_kept,
                      NSTEPS(mark_kept));
    /* The delete that empties the tree leaves the cursor unset with its end mark; the mark
     * outlasts a lookup in the empty tree and a put that makes the new root keeps it: NEXT
     * then answers MDB_NOTFOUND even where duplicates follow the cursor's (LMDB 0.9.36, and
     * ours; fuzz_apidiff found it with MDB_MULTIPLE).  0.9.24 walks on to the duplicate. */
    int major, minor, patch;
    mdb_version(&major, &minor, &patch);
    int old = major == 0 && minor == 9 && patch <= 24;
    const struct step emptied_put[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {PUTNO_STEP, "c", "1", 0, NULL, NULL},
        {TXNPUT_STEP, "c", "2", 0, NULL, NULL},
        {MDB_NEXT, NULL, NULL, old ? 0 : MDB_NOTFOUND, "c", "2"},
        {MDB_FIRST, NULL, NULL, 0, "c", "1"},
        {MDB_NEXT, NULL, NULL, 0, "c", "2"},
    };
    run_cursor_script("emptied-put-next", MDB_DUPSORT, "a=1", emptied_put, NSTEPS(emptied_put));
    const struct step emptied_lookup_put[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DELND_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_FIRST, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_SET, "a", NULL, MDB_NOTFOUND, NULL, NULL},
        {PUTNO_STEP, "b", "1", 0, NULL, NULL},
        {TXNPUT_STEP, "b", "2", 0, NULL, NULL},
        {MDB_NEXT, NULL, NULL, old ? 0 : MDB_NOTFOUND, "b", "2"},
        {MDB_LAST, NULL, NULL, 0, "b", "2"},
    };
    run_cursor_script("emptied-lookup-put-next", MDB_DUPSORT, "a=1 a=2", emptied_lookup_put,
                      NSTEPS(emptied_lookup_put));
    /* a put into a tree that has items again searches it, and that clears the mark */
    const struct step refilled_put[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {TXNPUT_STEP, "c", "1", 0, NULL, NULL},
        {TXNPUT_STEP, "c", "2", 0, NULL, NULL},
        {PUTNO_STEP, "b", "1", 0, NULL, NULL},
        {MDB_NEXT, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("emptied-refilled-next", MDB_DUPSORT, "a=1", refilled_put,
                      NSTEPS(refilled_put));
    /* MDB_CURRENT writes where the cursor stands without a lookup: the end mark left by
     * LAST and a miss before the first key stays, and NEXT after deleting the item the
     * cursor stands on reports the end (0.9.36; fuzz_apidiff) */
    const struct step current_keeps_end[] = {
        {MDB_LAST, NULL, NULL, 0, "c", "1"},
        {MDB_SET, "0", NULL, MDB_NOTFOUND, NULL, NULL},
        {CURPUT_STEP, "a", "a-longer-value", 0, NULL, NULL},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_NEXT, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_FIRST, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("current-put-keeps-end", 0, "a=1 c=1", current_keeps_end,
                      NSTEPS(current_keeps_end));
    /* A refused MDB_APPEND (the key is not past the last one) has gone through LMDB's
     * MDB_LAST: the cursor stands on the last item with the end mark, which the put of a
     * key before the first one (no lookup needed) and the delete of that item keep, so
     * NEXT from the last item of the page reports the end (0.9.24, 0.9.36; fuzz_apidiff) */
    const struct step refused_append[] = {
        {MDB_FIRST, NULL, NULL, 0, "c", "1"},
        {APPEND_STEP, "b", "1", MDB_KEYEXIST, NULL, NULL},
        {CPUT_STEP, "a", "1", 0, NULL, NULL},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_NEXT_NODUP, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_FIRST, NULL, NULL, 0, "c", "1"},
    };
    run_cursor_script("refused-append-keeps-end", 0, "c=1", refused_append,
                      NSTEPS(refused_append));
    /* ... and it keeps the delete mark of the delete before it: after a count (which
     * clears the end mark) NEXT answers the item the cursor stands on (0.9.36;
     * fuzz_apidiff) */
    const struct step refused_append_del[] = {
        {MDB_LAST, NULL, NULL, 0, "c", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {APPEND_STEP, "0", "1", MDB_KEYEXIST, NULL, NULL},
        {COUNT_STEP, NULL, NULL, 0, NULL, "1"},
        {MDB_NEXT, NULL, NULL, 0, "a", "1"},
    };
    run_cursor_script("refused-append-keeps-del", MDB_DUPSORT, "a=1 c=1", refused_append_del,
                      NSTEPS(refused_append_del));
}

static void s_next_after_first_dup(void) {
    int major, minor, patch;
    mdb_version(&major, &minor, &patch);
    int old = major == 0 && minor == 9 && patch <= 24;
    /* 0.9.24 kept the end mark that MDB_LAST set, so NEXT answered NOTFOUND; 0.9.36 (and
     * ours, whatever version number it reports) walks on through the duplicates */
    const struct step first_dup[] = {
        {MDB_LAST, NULL, NULL, 0, "b", "3"},
        {MDB_FIRST_DUP, NULL, NULL, 0, "b", "1"},
        {MDB_NEXT, NULL, NULL, old ? MDB_NOTFOUND : 0, "b", "2"},
        {MDB_NEXT, NULL, NULL, old ? MDB_NOTFOUND : 0, "b", "3"},
        {MDB_NEXT, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
    };
    run_cursor_script("last-firstdup-next", MDB_DUPSORT, "a=1 a=2 a=3 b=1 b=2 b=3", first_dup,
                      NSTEPS(first_dup));
    const struct step last_dup[] = {
        {MDB_FIRST, NULL, NULL, 0, "a", "1"},
        {MDB_LAST_DUP, NULL, NULL, 0, "a", "3"},
        {MDB_NEXT, NULL, NULL, 0, "b", "1"},
        {MDB_PREV, NULL, NULL, 0, "a", "3"},
    };
    run_cursor_script("first-lastdup-next", MDB_DUPSORT, "a=1 a=2 a=3 b=1 b=2 b=3", last_dup,
                      NSTEPS(last_dup));
    /* PREV_DUP on a cursor that stands on no item: 0.9.36 steps back as PREV does */
    const struct step prev_dup_fresh[] = {
        {MDB_PREV_DUP, NULL, NULL, old ? MDB_NOTFOUND : 0, "b", "3"},
    };
    run_cursor_script("fresh-prevdup", MDB_DUPSORT, "a=1 a=2 b=1 b=2 b=3", prev_dup_fresh,
                      NSTEPS(prev_dup_fresh));
    const struct step prev_dup_after_last_gone[] = {
        {MDB_LAST, NULL, NULL, 0, "c", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_PREV_DUP, NULL, NULL, old ? MDB_NOTFOUND : 0, "b", "3"},
    };
    run_cursor_script("lastgone-prevdup", MDB_DUPSORT, "a=1 b=1 b=2 b=3 c=1",
                      prev_dup_after_last_gone, NSTEPS(prev_dup_after_last_gone));
}

static void s_cursor_after_miss(void) {
    /* An exact lookup (SET, SET_KEY, GET_BOTH) that misses leaves the cursor at the
     * insertion point with no duplicate position: on a key with duplicates the calls that
     * need one answer EINVAL and delete nothing (LMDB 0.9.24 and 0.9.36). */
    const struct step miss_del[] = {
        {MDB_SET, "k2", NULL, 0, NULL, NULL},
        {MDB_SET, "k5", NULL, MDB_NOTFOUND, NULL, NULL},
        {DEL_STEP, NULL, NULL, EINVAL, NULL, NULL},
        {ENTRIES_STEP, NULL, NULL, 6, NULL, NULL},
    };
    run_cursor_script("miss-del", MDB_DUPSORT, "k2=1 k2=2 k4=1 k4=2 k6=1 k6=2", miss_del,
                      NSTEPS(miss_del));
    const struct step miss_calls[] = {
        {MDB_SET_KEY, "k3", NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, EINVAL, NULL, NULL},
        {MDB_FIRST_DUP, NULL, NULL, EINVAL, NULL, NULL},
        {MDB_LAST_DUP, NULL, NULL, EINVAL, NULL, NULL},
        {COUNT_STEP, NULL, NULL, EINVAL, NULL, NULL},
        {DEL_STEP, NULL, NULL, EINVAL, NULL, NULL},
        {ENTRIES_STEP, NULL, NULL, 6, NULL, NULL},
        /* (NEXT_NODUP steps from the insertion point, past k4, as on any database) */
        {MDB_NEXT_NODUP, NULL, NULL, 0, "k6", "1"},
        {MDB_GET_CURRENT, NULL, NULL, 0, "k6", "1"},
        {COUNT_STEP, NULL, NULL, 0, NULL, "2"},
    };
    run_cursor_script("miss-calls", MDB_DUPSORT, "k2=1 k2=2 k4=1 k4=2 k6=1 k6=2", miss_calls,
                      NSTEPS(miss_calls));
    const struct step miss_get_both[] = {
        {MDB_GET_BOTH, "k3", "1", MDB_NOTFOUND, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, EINVAL, NULL, NULL},
        {DEL_STEP, NULL, NULL, EINVAL, NULL, NULL},
        {MDB_PREV_NODUP, NULL, NULL, 0, "k2", "2"},
        {ENTRIES_STEP, NULL, NULL, 6, NULL, NULL},
    };
    run_cursor_script("miss-getboth", MDB_DUPSORT, "k2=1 k2=2 k4=1 k4=2 k6=1 k6=2",
                      miss_get_both, NSTEPS(miss_get_both));
    /* A cursor at the end (MDB_LAST) whose lookup misses without a search -- here a key
     * before the first in a tree of one page -- keeps its end mark in LMDB: after deleting
     * the key the miss stood on, NEXT reports the end although a key follows. */
    const struct step miss_keeps_end[] = {
        {MDB_LAST, NULL, NULL, 0, "k4", "1"},
        {MDB_SET, "k1", NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, 0, "k2", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {MDB_NEXT, NULL, NULL, MDB_NOTFOUND, NULL, NULL},
        {ENTRIES_STEP, NULL, NULL, 1, NULL, NULL},
        {MDB_FIRST, NULL, NULL, 0, "k4", "1"},
    };
    run_cursor_script("miss-keeps-end", 0, "k2=1 k4=1", miss_keeps_end, NSTEPS(miss_keeps_end));
    /* Where the key at the insertion point holds one value, LMDB has no duplicate
     * position to miss: GET_CURRENT returns that key and mdb_cursor_del deletes it, as on a
     * database without duplicates.  Ours does the same. */
    const struct step miss_single[] = {
        {MDB_SET, "k3", NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, 0, "k4", "1"},
        {DEL_STEP, NULL, NULL, 0, NULL, NULL},
        {ENTRIES_STEP, NULL, NULL, 4, NULL, NULL},
    };
    run_cursor_script("miss-single", MDB_DUPSORT, "k2=1 k2=2 k4=1 k6=1 k6=2", miss_single,
                      NSTEPS(miss_single));
    const struct step miss_plain[] = {
        {MDB_SET, "k3", NULL, MDB_NOTFOUND, NULL, NULL},
        {MDB_GET_CURRENT, NULL, NULL, 0, "k4", "1"},
        {MDB_NEXT, NULL, NULL, 0, "k6", "1"},
    };
    run_cursor_script("miss-plain", 0, "k2=1 k4=1 k6=1", miss_plain, NSTEPS(miss_plain));
}

/* Error paths of the txn API, with LMDB's answers. */
#define MAIN_DBI 1 /* the main database's handle (LMDB's is 1; not in lmdb.h) */
static void s_txn_error_paths(void) {
    char dir[4200];
    MDB_txn *txn, *child;
    MDB_dbi a, b;
    MDB_val k, v;
    /* a nested txn under MDB_WRITEMAP: MDB_BAD_TXN */
    MDB_env *env = open_env("err-writemap", 16 << 20, 4, MDB_WRITEMAP, dir);
    if (!env) return;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    EXPECT_RC(mdb_txn_begin(env, txn, 0, &child), MDB_BAD_TXN);
    EXPECT_OK(mdb_txn_commit(txn));
    mdb_env_close(env);

    env = open_env("err-state", 16 << 20, 4, 0, dir);
    if (!env) return;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, "a", MDB_CREATE, &a));
    MUST(mdb_dbi_open(txn, "b", MDB_CREATE, &b));
    k = S("x"), v = S("1");
    EXPECT_OK(mdb_put(txn, a, &k, &v, 0));
    MUST(mdb_txn_commit(txn));

    /* a read txn after mdb_txn_reset has no database handles: EINVAL */
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    mdb_txn_reset(txn);
    MDB_stat st;
    MDB_cursor *c;
    unsigned fl;
    k = S("x");
    EXPECT_RC(mdb_get(txn, a, &k, &v), EINVAL);
    EXPECT_RC(mdb_put(txn, a, &k, &v, 0), EINVAL);
    EXPECT_RC(mdb_del(txn, a, &k, NULL), EINVAL);
    EXPECT_RC(mdb_stat(txn, a, &st), EINVAL);
    EXPECT_RC(mdb_dbi_flags(txn, a, &fl), EINVAL);
    EXPECT_RC(mdb_cursor_open(txn, a, &c), EINVAL);
    EXPECT_OK(mdb_txn_renew(txn));
    EXPECT_OK(mdb_get(txn, a, &k, &v));
    mdb_txn_abort(txn);

    /* a named database's record written through the main database: MDB_INCOMPATIBLE.  A
     * put leaves the txn usable; a delete fails it (later calls MDB_BAD_TXN, the commit
     * too), and nothing of it is committed */
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MDB_val name = S("a");
    v = S("junk");
    EXPECT_RC(mdb_put(txn, MAIN_DBI, &name, &v, 0), MDB_INCOMPATIBLE);
    k = S("y"), v = S("2");
    EXPECT_OK(mdb_put(txn, b, &k, &v, 0));
    EXPECT_RC(mdb_del(txn, MAIN_DBI, &name, NULL), MDB_INCOMPATIBLE);
    k = S("z");
    EXPECT_RC(mdb_put(txn, b, &k, &v, 0), MDB_BAD_TXN);
    EXPECT_RC(mdb_get(txn, a, &name, &v), MDB_BAD_TXN);
    EXPECT_RC(mdb_txn_commit(txn), MDB_BAD_TXN);
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    k = S("y");
    EXPECT_RC(mdb_get(txn, b, &k, &v), MDB_NOTFOUND);
    k = S("x");
    EXPECT_OK(mdb_get(txn, a, &k, &v));
    mdb_txn_abort(txn);

    /* the refused put has already touched the path: the commit is a new snapshot (found
     * by fuzz_apidiff); with MDB_NOOVERWRITE LMDB answers MDB_KEYEXIST first, with the
     * record's bytes */
    MDB_envinfo ei;
    EXPECT_OK(mdb_env_info(env, &ei));
    size_t before = ei.me_last_txnid;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    v = S("junk");
    EXPECT_RC(mdb_put(txn, MAIN_DBI, &name, &v, MDB_NOOVERWRITE), MDB_KEYEXIST);
    EXPECT_MSG(v.mv_size == 48, "NOOVERWRITE onto a named record: old value of %zu bytes",
               v.mv_size);
    v = S("junk");
    EXPECT_RC(mdb_put(txn, MAIN_DBI, &name, &v, 0), MDB_INCOMPATIBLE);
    EXPECT_OK(mdb_txn_commit(txn));
    EXPECT_OK(mdb_env_info(env, &ei));
    EXPECT_MSG(ei.me_last_txnid == before + 1, "refused put of a named record: txn id %zu -> %zu",
               before, ei.me_last_txnid);

    /* the same in a child: its commit fails, and so does its parent */
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_txn_begin(env, txn, 0, &child));
    EXPECT_RC(mdb_del(child, MAIN_DBI, &name, NULL), MDB_INCOMPATIBLE);
    EXPECT_RC(mdb_txn_commit(child), MDB_BAD_TXN);
    k = S("w");
    EXPECT_RC(mdb_put(txn, b, &k, &v, 0), MDB_BAD_TXN);
    EXPECT_RC(mdb_txn_commit(txn), MDB_BAD_TXN);
    mdb_env_close(env);
}

static void s_refused_dup_put_commits(void) {
    char dir[4200];
    MDB_env *env = open_env("refused", 16 << 20, 2, 0, dir);
    if (!env) return;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_envinfo ei;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    MUST(mdb_dbi_open(txn, "d", MDB_CREATE | MDB_DUPSORT, &dbi));
    const char *start[][2] = {{"a", "1"}, {"a", "2"}, {"b", "1"}};
    for (int i = 0; i < 3; i++) {
        MDB_val k = S(start[i][0]), v = S(start[i][1]);
        EXPECT_OK(mdb_put(txn, dbi, &k, &v, 0));
    }
    MUST(mdb_txn_commit(txn));
    /* key, value, flags (0: a delete of a missing key), does the commit advance */
    struct { const char *k, *v; unsigned fl; int advances; } cases[] = {
        {"a", "1", MDB_NODUPDATA, 1},   {"b", "1", MDB_NODUPDATA, 1},
        {"a", "0", MDB_APPENDDUP, 1},   {"b", "0", MDB_APPENDDUP, 1},
        {"c", "1", 0, 0},               {"a", "1", MDB_NOOVERWRITE, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        EXPECT_OK(mdb_env_info(env, &ei));
        size_t before = ei.me_last_txnid;
        MUST(mdb_txn_begin(env, NULL, 0, &txn));
        MDB_val k = S(cases[i].k), v = S(cases[i].v);
        if (cases[i].fl)
            EXPECT_RC(mdb_put(txn, dbi, &k, &v, cases[i].fl), MDB_KEYEXIST);
        else
            EXPECT_RC(mdb_del(txn, dbi, &k, NULL), MDB_NOTFOUND);
        EXPECT_OK(mdb_txn_commit(txn));
        EXPECT_OK(mdb_env_info(env, &ei));
        EXPECT_MSG(ei.me_last_txnid == before + (size_t)cases[i].advances,
               "case %zu (%s/%s flags %#x): txn id %zu -> %zu", i, cases[i].k, cases[i].v,
               cases[i].fl, before, ei.me_last_txnid);
    }
    mdb_env_close(env);
}

#define NHANDLES 2000
static void s_handle_slots(void) {
    char dir[4200], name[32];
    MDB_env *env = open_env("handles", 64 << 20, NHANDLES + 100, 0, dir);
    if (!env) return;
    static MDB_dbi h[NHANDLES];
    MDB_txn *txn;
    MDB_dbi d;
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    for (int i = 0; i < NHANDLES; i++) {
        snprintf(name, sizeof name, "n%05d", i);
        MUST(mdb_dbi_open(txn, name, MDB_CREATE, &h[i]));
        EXPECT_MSG(h[i] == (MDB_dbi)(2 + i), "%s: handle %u, want %d", name, h[i], 2 + i);
    }
    MUST(mdb_txn_commit(txn));
    /* by name again, in reverse: the same handles */
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    for (int i = NHANDLES - 1; i >= 0; i--) {
        snprintf(name, sizeof name, "n%05d", i);
        EXPECT_OK(mdb_dbi_open(txn, name, 0, &d));
        EXPECT_MSG(d == h[i], "reopen %s: handle %u, want %u", name, d, h[i]);
    }
    mdb_txn_abort(txn);
    /* close every third: its slot is free for the next new name, lowest first */
    int freed = 0;
    for (int i = 0; i < NHANDLES; i += 3, freed++)
        mdb_dbi_close(env, h[i]);
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    for (int k = 0; k < freed + 20; k++) {
        snprintf(name, sizeof name, "m%05d", k);
        MUST(mdb_dbi_open(txn, name, MDB_CREATE, &d));
        MDB_dbi want = k < freed ? h[3 * k] : (MDB_dbi)(2 + NHANDLES + (k - freed));
        EXPECT_MSG(d == want, "new %s: handle %u, want %u", name, d, want);
    }
    /* names still open keep their handles, even among the new ones */
    snprintf(name, sizeof name, "n%05d", 1);
    EXPECT_OK(mdb_dbi_open(txn, name, 0, &d));
    EXPECT_MSG(d == h[1], "n00001: handle %u, want %u", d, h[1]);
    mdb_txn_abort(txn);
    /* the abort forgot the new handles: their slots are free again */
    MUST(mdb_txn_begin(env, NULL, 0, &txn));
    snprintf(name, sizeof name, "m%05d", 7);
    EXPECT_OK(mdb_dbi_open(txn, name, MDB_CREATE, &d));
    EXPECT_MSG(d == h[0], "after abort, %s: handle %u, want %u", name, d, h[0]);
    /* a closed name that exists on disk comes back in the next free slot */
    snprintf(name, sizeof name, "n%05d", 3);
    EXPECT_OK(mdb_dbi_open(txn, name, 0, &d));
    EXPECT_MSG(d == h[3], "reopened closed %s: handle %u, want %u", name, d, h[3]);
    MUST(mdb_txn_commit(txn));
    /* after the commit both names are found by name in a new txn */
    MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
    snprintf(name, sizeof name, "m%05d", 7);
    EXPECT_OK(mdb_dbi_open(txn, name, 0, &d));
    EXPECT_MSG(d == h[0], "committed %s: handle %u, want %u", name, d, h[0]);
    snprintf(name, sizeof name, "m%05d", 8);
    EXPECT_RC(mdb_dbi_open(txn, name, 0, &d), MDB_NOTFOUND);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

static void s_parent_cursor_in_child(void) {
    char dir[4200];
    MDB_env *env = open_env("parentcur", 16 << 20, 2, 0, dir);
    if (!env) return;
    MDB_txn *t, *child;
    MDB_dbi dbi;
    MDB_cursor *c;
    MDB_val k, v = S("v");
    MUST(mdb_txn_begin(env, NULL, 0, &t));
    MUST(mdb_dbi_open(t, NULL, 0, &dbi));
    const char *keys[] = {"b", "d", "f"};
    for (int i = 0; i < 3; i++) {
        k = S(keys[i]);
        EXPECT_OK(mdb_put(t, dbi, &k, &v, 0));
    }
    MUST(mdb_txn_commit(t));
    for (int mode = 0; mode < 4; mode++) {
        MUST(mdb_txn_begin(env, NULL, 0, &t));
        MUST(mdb_cursor_open(t, dbi, &c));
        EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_FIRST)); /* on "b" */
        MUST(mdb_txn_begin(env, t, 0, &child));
        EXPECT_MSG(mdb_cursor_txn(c) == child, "mode %d: the cursor's txn is not the child", mode);
        k = S("e");
        EXPECT_OK(mdb_put(child, dbi, &k, &v, 0));
        EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_NEXT)); /* "d" */
        EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_NEXT)); /* the child's "e" */
        EXPECT_MSG(eq(k, "e", 1), "mode %d: NEXT in the child gave %.*s, want e", mode,
               (int)k.mv_size, (char *)k.mv_data);
        if (mode == 0) {
            mdb_txn_abort(child);
            EXPECT_MSG(mdb_cursor_txn(c) == t, "abort: the cursor did not come back to the parent");
            EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT));
            EXPECT_MSG(eq(k, "b", 1), "after the child's abort: on %.*s, want b", (int)k.mv_size,
                   (char *)k.mv_data);
            EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_NEXT));
            EXPECT_MSG(eq(k, "d", 1), "after abort, NEXT: %.*s, want d", (int)k.mv_size,
                   (char *)k.mv_data);
            EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_NEXT));
            EXPECT_MSG(eq(k, "f", 1), "after abort the child's e is gone: %.*s", (int)k.mv_size,
                   (char *)k.mv_data);
            mdb_txn_abort(t);
        } else if (mode == 1) {
            EXPECT_OK(mdb_txn_commit(child));
            EXPECT_MSG(mdb_cursor_txn(c) == t, "commit: the cursor did not come back to the parent");
            EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT));
            EXPECT_MSG(eq(k, "e", 1), "after the child's commit: on %.*s, want e", (int)k.mv_size,
                   (char *)k.mv_data);
            EXPECT_OK(mdb_cursor_get(c, &k, &v, MDB_NEXT));
            EXPECT_MSG(eq(k, "f", 1), "after commit, NEXT: %.*s, want f", (int)k.mv_size,
                   (char *)k.mv_data);
            mdb_txn_abort(t);
        } else if (mode == 2) {
            mdb_cursor_close(c);
            mdb_txn_abort(child);
            mdb_txn_abort(t);
        } else {
            mdb_txn_abort(t); /* the child goes with it */
        }
    }
    mdb_env_close(env);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/scenarios-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base)) { perror("mkdtemp"); return 2; }
    s_random_model();
    s_delete_while_walking();
    s_dupsort();
    s_dupfixed();
    s_nested();
    s_append_reserve();
    s_map_full_resize();
    s_copy();
    s_readers();
    s_long_lookup_keys();
    s_cursor_after_delete();
    s_next_after_first_dup();
    s_cursor_after_miss();
    s_txn_error_paths();
    s_refused_dup_put_commits();
    s_handle_slots();
    s_parent_cursor_in_child();
    printf("test_scenarios: %d checks, %d failed (files in %s)\n", mdbtest_checks, mdbtest_failures, base);
    return TEST_STATUS();
}
