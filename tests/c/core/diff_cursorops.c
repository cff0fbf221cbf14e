/*
 * diff_cursorops.c -- every cursor op from every kind of position (unset, first, middle, last,
 * past the end, just after a delete) on plain, DUPSORT, DUPFIXED and DUPFIXED-sub-DB
 * databases; prints the result and where the cursor was left.  Built twice by run.sh, with
 * Debian's LMDB 0.9.24 and with ours: the outputs must be identical (the *_DUP ops on a
 * plain DB, *_MULTIPLE without DUPFIXED, PREV_DUP from nowhere were the cases we got wrong;
 * the 3000-value DUPFIXED keys also pin where LEAF2 pages split: *_MULTIPLE batches show it).
 *   diff_cursorops WORKDIR [--lmdb0924] > out.txt
 * The behaviour matched is LMDB 0.9.36's (run.sh builds it from py-lmdb 3.0's sdist when it
 * can).  --lmdb0924 prints "(release-dependent)" for the two cases where Debian's 0.9.24
 * differs from 0.9.36 (docs/compat.md): PREV_DUP on a cursor that stands on no item
 * (0.9.24 NOTFOUND, 0.9.36 the last value of the item before) and NEXT after LAST,
 * FIRST_DUP (0.9.24 NOTFOUND, 0.9.36 the next duplicate).
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <lmdb.h>
static const char *opn[] = {"FIRST","FIRST_DUP","GET_BOTH","GET_BOTH_RANGE","GET_CURRENT","GET_MULTIPLE","LAST","LAST_DUP","NEXT","NEXT_DUP","NEXT_MULTIPLE","NEXT_NODUP","PREV","PREV_DUP","PREV_NODUP","SET","SET_KEY","SET_RANGE","PREV_MULTIPLE"};
static void show(int rc, MDB_val *k, MDB_val *d) {
  printf(" rc=%d", rc);
  if (!rc) printf(" k=%.*s d=%.*s(%zu)", (int)k->mv_size, k->mv_data ? (char*)k->mv_data : "", (int)(d->mv_size > 20 ? 20 : d->mv_size), d->mv_data ? (char*)d->mv_data : "", d->mv_size);
}
int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s WORKDIR [--lmdb0924]\n", argv[0]); return 2; }
  int lmdb0924 = argc > 2 && strcmp(argv[2], "--lmdb0924") == 0;
  MDB_env *env; MDB_txn *txn; MDB_dbi dbs[5]; MDB_cursor *c;
  mkdir(argv[1], 0755);
  mdb_env_create(&env); mdb_env_set_maxdbs(env, 8); mdb_env_set_mapsize(env, 1<<24);
  if (mdb_env_open(env, argv[1], 0, 0644)) return 1;
  mdb_txn_begin(env, NULL, 0, &txn);
  MDB_txn *keep = txn;
  const char *names[] = {"plain", "dups", "fixed", "dups1", "bigfixed"};
  unsigned fl[] = {0, MDB_DUPSORT, MDB_DUPSORT|MDB_DUPFIXED, MDB_DUPSORT, MDB_DUPSORT|MDB_DUPFIXED};
  for (int i = 0; i < 5; i++) {
    mdb_dbi_open(txn, names[i], MDB_CREATE|fl[i], &dbs[i]);
    for (int k = 0; k < 4; k++) for (int j = 0; j < (i == 4 ? (k == 3 || k == 1 ? 3000 : 2) : i == 3 ? (k % 2 ? 1 : 3) : i ? 3 : 1); j++) {
      char kb[8], vb[8]; sprintf(kb, "k%d", k); sprintf(vb, "v%03d", j%1000); if (j>=1000) vb[0]=(char)('a'+j/1000);
      MDB_val K = {2, kb}, V = {i == 4 ? 4 : 2, vb}; mdb_put(txn, dbs[i], &K, &V, 0);
    }
  }
  mdb_txn_commit(keep); mdb_txn_begin(env, NULL, 0, &txn);
  for (int i = 0; i < 5; i++) {
    /* positions: unset, first, middle(k1, dup0 / k1 v1), last */
    for (int pos = 0; pos < 7; pos++) {
      for (int op = 0; op <= MDB_PREV_MULTIPLE; op++) {
        { int orc = mdb_cursor_open(txn, dbs[i], &c); if (orc) { printf("open rc=%d\n", orc); return 1; } }
        MDB_val k = {0, 0}, d = {0, 0};
        int prc = 0;
        if (pos == 1) prc = mdb_cursor_get(c, &k, &d, MDB_FIRST);
        if (pos == 2) { k.mv_size = 2; k.mv_data = "k1"; prc = mdb_cursor_get(c, &k, &d, MDB_SET); if (i) prc |= mdb_cursor_get(c, &k, &d, MDB_NEXT_DUP); }
        if (pos == 3) prc = mdb_cursor_get(c, &k, &d, MDB_LAST);
        if (pos == 4) { k.mv_size = 2; k.mv_data = "k9"; prc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE); } /* failed seek */
        if (pos == 5) { k.mv_size = 2; k.mv_data = "k1"; prc = mdb_cursor_get(c, &k, &d, MDB_SET); prc |= mdb_cursor_del(c, 0); }
        if (pos == 6) { k.mv_size = 2; k.mv_data = "k3"; prc = mdb_cursor_get(c, &k, &d, MDB_SET); prc |= mdb_cursor_del(c, 0); }
        printf("%s pos%d(%d) %-14s", names[i], pos, prc, opn[op]);
        /* positions 0, 4 and 6 stand on no item; PREV_DUP there differs between releases */
        if (lmdb0924 && i > 0 && op == MDB_PREV_DUP && (pos == 0 || pos == 4 || pos == 6)) {
          printf(" (release-dependent)\n");
          mdb_cursor_close(c);
          if (pos >= 5) { mdb_txn_abort(txn); if (mdb_txn_begin(env, NULL, 0, &txn)) return 1; }
          continue;
        }
        MDB_val kk = {2, "k2"}, dd = {2, "v1"};
        int rc;
        if (op == MDB_GET_BOTH || op == MDB_GET_BOTH_RANGE || op == MDB_SET || op == MDB_SET_KEY || op == MDB_SET_RANGE)
          rc = mdb_cursor_get(c, &kk, &dd, op), show(rc, &kk, &dd);
        else { rc = mdb_cursor_get(c, &k, &d, op); show(rc, &k, &d); }
        /* where did it leave the cursor? */
        MDB_val k2, d2; int rc2 = mdb_cursor_get(c, &k2, &d2, MDB_GET_CURRENT);
        printf(" | cur"); show(rc2, &k2, &d2);
        rc2 = mdb_cursor_get(c, &k2, &d2, MDB_NEXT);
        if (lmdb0924 && pos == 3 && op == MDB_FIRST_DUP) printf(" | next (release-dependent)");
        else { printf(" | next"); show(rc2, &k2, &d2); }
        size_t cnt = 0; rc2 = mdb_cursor_count(c, &cnt);
        printf(" | count rc=%d n=%zu\n", rc2, rc2 ? 0 : cnt);
        mdb_cursor_close(c);
        if (pos >= 5) { mdb_txn_abort(txn); int brc = mdb_txn_begin(env, NULL, 0, &txn); if (brc) { printf("begin rc=%d\n", brc); return 1; } }
      }
    }
  }
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return 0;
}
