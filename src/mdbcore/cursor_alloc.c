/*
 * cursor_alloc.c -- the memory of the cursors mdb_cursor_open hands out.
 *
 * A write txn's cursors end with it (LMDB's rule, which programs rely on: slapd never closes
 * the cursors of its write txns).  Some programs also close such a cursor after the commit:
 * OpenLDAP 2.5's slapadd -w does, for the cursor it used to add the last entries, once it
 * has updated the suffix's contextCSN in the same txn.  Under LMDB that is a use after free
 * and a double free, which glibc happens not to catch there; freeing at the commit made the
 * same slapadd abort on ours ("double free detected in tcache 2").
 *
 * So a write txn's cursors are not freed when it ends but retired: marked C_RETIRED, with no
 * txn, and kept in a short per-environment pool that the next write txn's mdb_cursor_open
 * draws from.  Closing a retired cursor does nothing; any other call on it sees no txn and
 * returns EINVAL.  Invariants: a pooled cursor has C_RETIRED and txn == NULL and owns no
 * tracking buffer or shadow; the pool is touched only by the writer, holding the writer lock
 * (open of a write-txn cursor, end of a write txn), so it needs no lock of its own; it holds
 * at most CURSOR_POOL_MAX cursors, the rest are freed.  A stale pointer to a cursor already
 * reused aliases the new one -- as under LMDB, where the allocator reuses the memory.
 */
#include <stdlib.h>

#include "core.h"

#define CURSOR_POOL_MAX 32

/* A DUPSORT cursor is one allocation of both parts.  glibc serves requests up to 1,032
 * bytes from a per-thread cache in a few dozen instructions; a larger one goes to its bins
 * and may first consolidate the fast bins, about 2,000 instructions a call under slapd,
 * which opens and closes several cursors per operation.  Keep the pair inside the cache. */
_Static_assert(sizeof(MDB_cursor) + sizeof(struct xcursor) <= 1032,
               "a DUPSORT cursor no longer fits glibc's per-thread cache");
#define CURSOR_ALLOC_PLAIN 1 /* room for the cursor only */
#define CURSOR_ALLOC_DUPS 2  /* room for the cursor and its xcursor */

MDB_cursor *cursor_obj_alloc(MDB_txn *txn, int with_xcursor)
{
    uint8_t want = with_xcursor ? CURSOR_ALLOC_DUPS : CURSOR_ALLOC_PLAIN;
    MDB_env *env = txn->env;
    if (!(txn->flags & TXN_RDONLY)) {
        for (MDB_cursor **pp = &env->cursor_pool; *pp; pp = &(*pp)->next) {
            if ((*pp)->alloc_kind == want) {
                MDB_cursor *c = *pp;
                *pp = c->next;
                env->cursor_pooled--;
                return c;
            }
        }
    }
    MDB_cursor *c = malloc(sizeof(*c) + (with_xcursor ? sizeof(struct xcursor) : 0));
    if (c)
        c->alloc_kind = want;
    return c;
}

void cursor_obj_retire(MDB_env *env, MDB_cursor *c)
{
    cursor_shadow_free(c);
    free(c->trk_key);
    c->trk_key = NULL;
    c->txn = NULL;
    c->flags = C_RETIRED;
    if (env->cursor_pooled >= CURSOR_POOL_MAX || !c->alloc_kind) {
        free(c);
        return;
    }
    c->next = env->cursor_pool;
    env->cursor_pool = c;
    env->cursor_pooled++;
}

void cursor_obj_free(MDB_cursor *c)
{
    cursor_shadow_free(c);
    free(c->trk_key);
    free(c);
}

void cursor_pool_free(MDB_env *env)
{
    while (env->cursor_pool) {
        MDB_cursor *c = env->cursor_pool;
        env->cursor_pool = c->next;
        free(c);
    }
    env->cursor_pooled = 0;
}
