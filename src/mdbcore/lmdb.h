/*
 * lmdb.h -- public API of mdb, a from-scratch engine with the C API, ABI and file formats
 * of LMDB 0.9 (data format 1, lock format 1) on Linux x86-64.
 *
 * Programs written against LMDB 0.9 compile and link against this header unchanged: every
 * name, constant, struct layout and function signature below is the LMDB 0.9 one.  The
 * comments are ours.
 *
 * Version: we report 0.9.29.  The API has not changed from 0.9.24 to 0.9.35, so any of
 * those numbers would be truthful about the interface; 0.9.29 is chosen because OpenLDAP's
 * back-mdb (as shipped by Debian) refuses to start unless mdb_version() returns exactly
 * 0.9.29, and we want to be loadable under it.
 */
#ifndef _LMDB_H_
#define _LMDB_H_

#include <sys/types.h>
#include <inttypes.h>
#include <limits.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The mode type passed to mdb_env_open (a Unix permission mode). */
typedef mode_t mdb_mode_t;
/* An open file descriptor. */
typedef int mdb_filehandle_t;

/* ---- version ---------------------------------------------------------------------- */
#define MDB_VERSION_MAJOR 0
#define MDB_VERSION_MINOR 9
#define MDB_VERSION_PATCH 29
#define MDB_VERINT(a, b, c) (((a) << 24) | ((b) << 16) | (c))
#define MDB_VERSION_FULL MDB_VERINT(MDB_VERSION_MAJOR, MDB_VERSION_MINOR, MDB_VERSION_PATCH)
#define MDB_VERSION_DATE "March 16, 2021"
#define MDB_VERSTR(a, b, c, d) "LMDB " #a "." #b "." #c ": (" d ")"
#define MDB_VERFOO(a, b, c, d) MDB_VERSTR(a, b, c, d)
#define MDB_VERSION_STRING \
    MDB_VERFOO(MDB_VERSION_MAJOR, MDB_VERSION_MINOR, MDB_VERSION_PATCH, MDB_VERSION_DATE)

/* ---- handles ---------------------------------------------------------------------- */
/* An environment: one data file, its lock file and its memory map. */
typedef struct MDB_env MDB_env;
/* A transaction: a read snapshot, or the single write transaction of an environment. */
typedef struct MDB_txn MDB_txn;
/* A database handle: 0 is the free list, 1 the unnamed main database, 2+ named ones. */
typedef unsigned int MDB_dbi;
/* A position inside one database of one transaction. */
typedef struct MDB_cursor MDB_cursor;

/* A key or value: size first, then the pointer.  Values returned by the library point into
 * the map or into transaction-owned pages and stay valid until the next update or the end
 * of the transaction. */
typedef struct MDB_val {
    size_t mv_size;
    void *mv_data;
} MDB_val;

/* Orders two keys (or two duplicate values): <0, 0, >0 like memcmp. */
typedef int(MDB_cmp_func)(const MDB_val *a, const MDB_val *b);
/* Relocation hook for FIXEDMAP; accepted and stored, never called (as in LMDB 0.9). */
typedef void(MDB_rel_func)(MDB_val *item, void *oldptr, void *newptr, void *relctx);

/* ---- environment flags (mdb_env_open, mdb_env_set_flags) ---------------------------- */
#define MDB_FIXEDMAP 0x01      /* map at the address recorded in the file */
#define MDB_NOSUBDIR 0x4000    /* path names the data file itself; lock file is path-lock */
#define MDB_NOSYNC 0x10000     /* no sync at commit (changeable) */
#define MDB_RDONLY 0x20000     /* read-only environment (also a txn flag) */
#define MDB_NOMETASYNC 0x40000 /* sync data but not the meta page at commit (changeable) */
#define MDB_WRITEMAP 0x80000   /* writable map */
#define MDB_MAPASYNC 0x100000  /* with WRITEMAP: asynchronous msync (changeable) */
#define MDB_NOTLS 0x200000     /* reader slot belongs to the txn, not to the thread */
#define MDB_NOLOCK 0x400000    /* no lock file; the caller serialises access */
#define MDB_NORDAHEAD 0x800000 /* advise the kernel against read-ahead */
#define MDB_NOMEMINIT 0x1000000 /* do not zero new pages before writing (changeable) */

/* ---- database flags (mdb_dbi_open) -------------------------------------------------- */
#define MDB_REVERSEKEY 0x02 /* compare keys from their last byte */
#define MDB_DUPSORT 0x04    /* sorted duplicate values per key */
#define MDB_INTEGERKEY 0x08 /* keys are native unsigned int or size_t */
#define MDB_DUPFIXED 0x10   /* with DUPSORT: all values of one size */
#define MDB_INTEGERDUP 0x20 /* with DUPSORT: values are native integers */
#define MDB_REVERSEDUP 0x40 /* with DUPSORT: compare values from their last byte */
#define MDB_CREATE 0x40000  /* create the named database if missing */

/* ---- write flags (mdb_put, mdb_cursor_put, mdb_cursor_del) --------------------------- */
#define MDB_NOOVERWRITE 0x10 /* fail with MDB_KEYEXIST if the key is present */
#define MDB_NODUPDATA 0x20   /* DUPSORT: fail if the pair is present; cursor_del: all dups */
#define MDB_CURRENT 0x40     /* cursor_put: replace the item under the cursor */
#define MDB_RESERVE 0x10000  /* reserve space and return its address in data->mv_data */
#define MDB_APPEND 0x20000   /* keys arrive in ascending order */
#define MDB_APPENDDUP 0x40000 /* duplicates arrive in ascending order */
#define MDB_MULTIPLE 0x80000 /* DUPFIXED: store several values at once */

/* ---- copy flags --------------------------------------------------------------------- */
#define MDB_CP_COMPACT 0x01 /* omit free pages and renumber the rest */

/* ---- cursor operations (the values are ABI) ------------------------------------------ */
typedef enum MDB_cursor_op {
    MDB_FIRST,
    MDB_FIRST_DUP,
    MDB_GET_BOTH,
    MDB_GET_BOTH_RANGE,
    MDB_GET_CURRENT,
    MDB_GET_MULTIPLE,
    MDB_LAST,
    MDB_LAST_DUP,
    MDB_NEXT,
    MDB_NEXT_DUP,
    MDB_NEXT_MULTIPLE,
    MDB_NEXT_NODUP,
    MDB_PREV,
    MDB_PREV_DUP,
    MDB_PREV_NODUP,
    MDB_SET,
    MDB_SET_KEY,
    MDB_SET_RANGE,
    MDB_PREV_MULTIPLE
} MDB_cursor_op;

/* ---- return codes (mdb_strerror gives the text) -------------------------------------- */
#define MDB_SUCCESS 0
#define MDB_KEYEXIST (-30799)
#define MDB_NOTFOUND (-30798)
#define MDB_PAGE_NOTFOUND (-30797)
#define MDB_CORRUPTED (-30796)
#define MDB_PANIC (-30795)
#define MDB_VERSION_MISMATCH (-30794)
#define MDB_INVALID (-30793)
#define MDB_MAP_FULL (-30792)
#define MDB_DBS_FULL (-30791)
#define MDB_READERS_FULL (-30790)
#define MDB_TLS_FULL (-30789)
#define MDB_TXN_FULL (-30788)
#define MDB_CURSOR_FULL (-30787)
#define MDB_PAGE_FULL (-30786)
#define MDB_MAP_RESIZED (-30785)
#define MDB_INCOMPATIBLE (-30784)
#define MDB_BAD_RSLOT (-30783)
#define MDB_BAD_TXN (-30782)
#define MDB_BAD_VALSIZE (-30781)
#define MDB_BAD_DBI (-30780)
#define MDB_LAST_ERRCODE MDB_BAD_DBI

/* Statistics of one B+tree. */
typedef struct MDB_stat {
    unsigned int ms_psize;     /* page size in bytes */
    unsigned int ms_depth;     /* tree height */
    size_t ms_branch_pages;    /* interior pages */
    size_t ms_leaf_pages;      /* leaf pages */
    size_t ms_overflow_pages;  /* pages holding large values */
    size_t ms_entries;         /* key/value pairs */
} MDB_stat;

/* Facts about an environment. */
typedef struct MDB_envinfo {
    void *me_mapaddr;          /* where the map starts */
    size_t me_mapsize;         /* map size in bytes */
    size_t me_last_pgno;       /* highest page number in use */
    size_t me_last_txnid;      /* last committed transaction id */
    unsigned int me_maxreaders; /* reader table size */
    unsigned int me_numreaders; /* reader slots ever used (high-water mark) */
} MDB_envinfo;

/* Library version: the string, and optionally its three numbers. */
char *mdb_version(int *major, int *minor, int *patch);
/* A message for any return code of this library, or for an errno value. */
char *mdb_strerror(int err);

/* ---- environment -------------------------------------------------------------------- */
/* Allocate an environment handle with default settings (126 readers, no named DBs). */
int mdb_env_create(MDB_env **env);
/* Open (creating if allowed) the environment at path.  On failure the handle must still be
 * released with mdb_env_close. */
int mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode);
/* Copy the environment to an empty directory (or file, with NOSUBDIR). */
int mdb_env_copy(MDB_env *env, const char *path);
/* Copy the environment to an open file descriptor. */
int mdb_env_copyfd(MDB_env *env, mdb_filehandle_t fd);
/* mdb_env_copy with options (MDB_CP_COMPACT). */
int mdb_env_copy2(MDB_env *env, const char *path, unsigned int flags);
/* mdb_env_copyfd with options (MDB_CP_COMPACT). */
int mdb_env_copyfd2(MDB_env *env, mdb_filehandle_t fd, unsigned int flags);
/* Statistics of the main database as of the newest commit. */
int mdb_env_stat(MDB_env *env, MDB_stat *stat);
/* Map and file facts. */
int mdb_env_info(MDB_env *env, MDB_envinfo *stat);
/* Flush to disk; force=1 syncs even under NOSYNC/MAPASYNC. */
int mdb_env_sync(MDB_env *env, int force);
/* Release the environment, its map, files and this process's reader slots. */
void mdb_env_close(MDB_env *env);
/* Turn changeable flags on (onoff != 0) or off. */
int mdb_env_set_flags(MDB_env *env, unsigned int flags, int onoff);
/* The environment's flags. */
int mdb_env_get_flags(MDB_env *env, unsigned int *flags);
/* The path passed to mdb_env_open. */
int mdb_env_get_path(MDB_env *env, const char **path);
/* The data file's descriptor. */
int mdb_env_get_fd(MDB_env *env, mdb_filehandle_t *fd);
/* Map size: before open, or after open with no transaction active in this process. */
int mdb_env_set_mapsize(MDB_env *env, size_t size);
/* Reader table size; before open only. */
int mdb_env_set_maxreaders(MDB_env *env, unsigned int readers);
/* Reader table size in force. */
int mdb_env_get_maxreaders(MDB_env *env, unsigned int *readers);
/* Number of named databases allowed; before open only. */
int mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs);
/* Largest key (and DUPSORT value) accepted: 511. */
int mdb_env_get_maxkeysize(MDB_env *env);
/* An opaque pointer kept for the application. */
int mdb_env_set_userctx(MDB_env *env, void *ctx);
void *mdb_env_get_userctx(MDB_env *env);

/* Called with a message before the library aborts on a broken internal assumption. */
typedef void MDB_assert_func(MDB_env *env, const char *msg);
int mdb_env_set_assert(MDB_env *env, MDB_assert_func *func);

/* ---- transactions ------------------------------------------------------------------- */
/* Begin a transaction; flags may hold MDB_RDONLY.  Only one write txn exists at a time. */
int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
MDB_env *mdb_txn_env(MDB_txn *txn);
/* Snapshot id of a read txn, or the id a write txn will commit as. */
size_t mdb_txn_id(MDB_txn *txn);
/* Commit and free the handle (also on failure). */
int mdb_txn_commit(MDB_txn *txn);
/* Discard and free the handle. */
void mdb_txn_abort(MDB_txn *txn);
/* Read txns: release the snapshot but keep the handle and slot for mdb_txn_renew. */
void mdb_txn_reset(MDB_txn *txn);
int mdb_txn_renew(MDB_txn *txn);

#define mdb_open(txn, name, flags, dbi) mdb_dbi_open(txn, name, flags, dbi)
#define mdb_close(env, dbi) mdb_dbi_close(env, dbi)

/* ---- databases ---------------------------------------------------------------------- */
/* Open the main (name NULL) or a named database.  A handle opened in a write txn becomes
 * visible to other txns only when that txn commits. */
int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
int mdb_dbi_flags(MDB_txn *txn, MDB_dbi dbi, unsigned int *flags);
void mdb_dbi_close(MDB_env *env, MDB_dbi dbi);
/* del=0: empty the database; del=1: also delete it and close the handle. */
int mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);
/* Custom orderings; set before any access, identically in every process. */
int mdb_set_compare(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp);
int mdb_set_dupsort(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp);
int mdb_set_relfunc(MDB_txn *txn, MDB_dbi dbi, MDB_rel_func *rel);
int mdb_set_relctx(MDB_txn *txn, MDB_dbi dbi, void *ctx);

/* ---- data --------------------------------------------------------------------------- */
int mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags);
int mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);

/* ---- cursors ------------------------------------------------------------------------ */
int mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
void mdb_cursor_close(MDB_cursor *cursor);
/* Rebind a read-only cursor to another read txn. */
int mdb_cursor_renew(MDB_txn *txn, MDB_cursor *cursor);
MDB_txn *mdb_cursor_txn(MDB_cursor *cursor);
MDB_dbi mdb_cursor_dbi(MDB_cursor *cursor);
int mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
int mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags);
int mdb_cursor_del(MDB_cursor *cursor, unsigned int flags);
int mdb_cursor_count(MDB_cursor *cursor, size_t *countp);

/* Compare with the database's key / duplicate ordering. */
int mdb_cmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b);
int mdb_dcmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b);

/* ---- reader table ------------------------------------------------------------------- */
/* Receives one line of mdb_reader_list output; a negative return stops the listing. */
typedef int(MDB_msg_func)(const char *msg, void *ctx);
int mdb_reader_list(MDB_env *env, MDB_msg_func *func, void *ctx);
/* Clear the slots of processes that died; *dead gets how many were cleared. */
int mdb_reader_check(MDB_env *env, int *dead);

#ifdef __cplusplus
}
#endif
#endif /* _LMDB_H_ */
