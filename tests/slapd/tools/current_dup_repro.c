/*
 * current_dup_repro.c -- the call pattern that breaks back-mdb's dn2i subtree counts on our
 * library (found with lmdbtrace.c): mdb_cursor_put(MDB_CURRENT) on a DUPSORT database with
 * a value that compares equal under the database's dupsort function (mdb_set_dupsort) but
 * has other bytes.  LMDB stores the new bytes; the program prints what is stored after.
 *
 *   cc current_dup_repro.c -llmdb -o repro && mkdir -p d/1 d/2 && ./repro d
 */
#include <stdio.h>
#include <string.h>
#include "lmdb.h"
static int prefix2(const MDB_val *a, const MDB_val *b) { return memcmp(a->mv_data, b->mv_data, 2); }
static void show(MDB_txn *t, MDB_dbi d, const char *why) {
  MDB_cursor *c; MDB_val k = {1, "k"}, v; mdb_cursor_open(t, d, &c);
  int rc = mdb_cursor_get(c, &k, &v, MDB_SET);
  printf("  %s:", why);
  while (rc == 0) { printf(" %.*s", (int)v.mv_size, (char *)v.mv_data); rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP); }
  printf("\n"); mdb_cursor_close(c); }
int main(int argc, char **argv) {
  for (int ndups = 1; ndups <= 2; ndups++) {
    MDB_env *env; MDB_txn *t; MDB_dbi d; MDB_cursor *c; char dir[256];
    snprintf(dir, sizeof dir, "%s/%d", argv[1], ndups);
    mdb_env_create(&env); mdb_env_set_maxdbs(env, 2); if (mdb_env_open(env, dir, 0, 0644)) return 1;
    mdb_txn_begin(env, NULL, 0, &t); mdb_dbi_open(t, "x", MDB_CREATE | MDB_DUPSORT, &d);
    mdb_set_dupsort(t, d, prefix2);
    MDB_val k = {1, "k"}, a = {5, "AAxx1"}, b = {5, "BBxx1"};
    mdb_put(t, d, &k, &a, 0); if (ndups == 2) mdb_put(t, d, &k, &b, 0);
    printf("%d dup(s):\n", ndups); show(t, d, "before");
    mdb_cursor_open(t, d, &c);
    MDB_val q = {5, "AAzz9"}; int rc = mdb_cursor_get(c, &k, &q, MDB_GET_BOTH);
    MDB_val n = {5, "AAyy2"}; int rc2 = mdb_cursor_put(c, &k, &n, MDB_CURRENT);
    printf("  get_both rc=%d  put CURRENT rc=%d\n", rc, rc2); mdb_cursor_close(c);
    show(t, d, "after (same txn)");
    printf("  commit rc=%d\n", mdb_txn_commit(t));
    mdb_txn_begin(env, NULL, MDB_RDONLY, &t); mdb_set_dupsort(t, d, prefix2); show(t, d, "after commit"); mdb_txn_abort(t);
    mdb_env_close(env);
  }
  return 0; }
