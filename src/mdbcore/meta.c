/*
 * meta.c -- the two meta pages (layer L1): validation on open, the initial pair of a new
 * file, choosing the newer one, and the commit point.
 *
 * Commit point: txn T writes only the tail of the meta (mapsize onwards) into page T & 1,
 * through the O_DSYNC descriptor unless NOSYNC/NOMETASYNC.  The other meta still
 * describes T-1, whose pages T never overwrote, so a torn or failed write leaves the
 * previous snapshot intact.  A failed write marks the environment fatal (MDB_PANIC).
 */
#include <stdlib.h>

#include "core.h"
#include <sys/mman.h>

#include "os.h"

static int meta_check(const uint8_t *buf, size_t got)
{
    if (got < PAGEHDRSZ + sizeof(meta_record))
        return MDB_INVALID;
    const page_header *ph = (const page_header *)buf;
    const meta_record *m = (const meta_record *)(buf + PAGEHDRSZ);
    if (!(ph->flags & P_META) || m->magic != MDB_DATA_MAGIC)
        return MDB_INVALID;
    if (m->version != MDB_DATA_VERSION)
        return MDB_VERSION_MISMATCH;
    return 0;
}

static int meta_sane(const meta_record *m, unsigned psize)
{
    if (m->last_pg < CORE_DBS - 1)
        return CORRUPT_AT(0);
    for (int i = 0; i < CORE_DBS; i++) {
        const db_record *d = &m->dbs[i];
        if (d->root != P_INVALID && (d->root < CORE_DBS || d->root > m->last_pg))
            return CORRUPT_AT(d->root);
        if (d->depth > CURSOR_STACK)
            return CORRUPT_AT(d->root);
        if ((d->root == P_INVALID) != (d->depth == 0))
            return CORRUPT_AT(d->root);
    }
    (void)psize;
    return 0;
}

int meta_read(MDB_env *env, meta_record *newest, unsigned *psize_out)
{
    uint8_t buf[2][PAGEHDRSZ + sizeof(meta_record)];
    size_t got;
    int rc = os_current->pread(env->data_fd, buf[0], sizeof(buf[0]), 0, &got);
    if (rc)
        return rc;
    if (got == 0)
        return ENOENT;
    if ((rc = meta_check(buf[0], got)) != 0)
        return rc;
    const meta_record *m0 = (const meta_record *)(buf[0] + PAGEHDRSZ);
    unsigned psize = m0->dbs[FREE_DBI].pad;
    if (psize < MIN_PAGESIZE || psize > 0x10000 || (psize & (psize - 1)))
        return MDB_INVALID;
    rc = os_current->pread(env->data_fd, buf[1], sizeof(buf[1]), psize, &got);
    if (rc)
        return rc;
    if ((rc = meta_check(buf[1], got)) != 0)
        return rc;
    const meta_record *m1 = (const meta_record *)(buf[1] + PAGEHDRSZ);
    if (m1->dbs[FREE_DBI].pad != psize)
        return MDB_INVALID;
    const meta_record *m = m1->txnid > m0->txnid ? m1 : m0;
    if ((rc = meta_sane(m, psize)) != 0)
        return rc;
    *newest = *m;
    *psize_out = psize;
    return 0;
}

int meta_create(MDB_env *env)
{
    unsigned psize = env->psize;
    uint8_t *buf = calloc(2, psize);
    if (!buf)
        return ENOMEM;
    for (int i = 0; i < 2; i++) {
        page_header *ph = (page_header *)(buf + (size_t)i * psize);
        ph->pgno = (pgno_t)i;
        ph->flags = P_META;
        meta_record *m = (meta_record *)((uint8_t *)ph + PAGEHDRSZ);
        m->magic = MDB_DATA_MAGIC;
        m->version = MDB_DATA_VERSION;
        m->mapsize = env->mapsize;
        m->dbs[FREE_DBI].pad = psize;
        /* the free DB's flags word doubles as the persistent env flags */
        m->dbs[FREE_DBI].flags = (uint16_t)((env->flags & 0xffff) | MDB_INTEGERKEY);
        m->dbs[FREE_DBI].root = P_INVALID;
        m->dbs[MAIN_DBI].root = P_INVALID;
        m->last_pg = CORE_DBS - 1;
        m->txnid = 0;
    }
    int rc = os_current->pwrite(env->data_fd, buf, (size_t)psize * 2, 0);
    free(buf);
    if (!rc && !(env->flags & MDB_NOSYNC))
        rc = os_current->fsync(env->data_fd);
    return rc;
}

meta_record *meta_newest(MDB_env *env)
{
    /* another thread may be moving the map (datafile.c): either map holds the metas */
    meta_record *a = __atomic_load_n(&env->metas[0], __ATOMIC_RELAXED);
    meta_record *b = __atomic_load_n(&env->metas[1], __ATOMIC_RELAXED);
    return b->txnid > a->txnid ? b : a;
}

int meta_write(MDB_env *env, MDB_txn *txn)
{
    meta_record *cur = meta_newest(env);
    meta_record m = *cur;
    if (env->mapsize > m.mapsize)
        m.mapsize = env->mapsize;
    m.dbs[FREE_DBI] = txn->dbs[FREE_DBI];
    m.dbs[MAIN_DBI] = txn->dbs[MAIN_DBI];
    m.last_pg = txn->next_pgno - 1;
    m.txnid = txn->txnid;
    size_t tail = sizeof(meta_record) - META_TAIL_OFFSET;
    off_t off = (off_t)(txn->txnid & 1) * env->psize + PAGEHDRSZ + META_TAIL_OFFSET;
    int rc;
    if (env->flags & MDB_WRITEMAP) {
        /* data was msynced first (commit.c); now the meta page, in place */
        uint8_t *mp = env_map(env) + off;
        memcpy(mp, (uint8_t *)&m + META_TAIL_OFFSET, tail);
        rc = 0;
        if (!(env->flags & (MDB_NOSYNC | MDB_NOMETASYNC))) {
            size_t pg = (size_t)(txn->txnid & 1) * env->psize;
            int how = (env->flags & MDB_MAPASYNC) ? MS_ASYNC : MS_SYNC;
            rc = os_current->msync(env_map(env) + pg, env->psize, how);
        }
        if (rc)
            env->flags |= ENV_FATAL;
        return rc;
    }
    int fd = (env->flags & (MDB_NOSYNC | MDB_NOMETASYNC)) ? env->data_fd : env->meta_fd;
    rc = os_current->pwrite(fd, (uint8_t *)&m + META_TAIL_OFFSET, tail, off);
    if (rc) {
        /* put back what the slot held so a reader never trusts a half-written meta */
        meta_record *old = env->metas[txn->txnid & 1];
        meta_record back = *old;
        os_current->pwrite(env->data_fd, (uint8_t *)&back + META_TAIL_OFFSET, tail, off);
        env->flags |= ENV_FATAL;
        return rc;
    }
    return 0;
}
