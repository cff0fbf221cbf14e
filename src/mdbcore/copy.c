/*
 * copy.c -- env_copy (layer L6): a consistent backup of the current snapshot.
 * Plain mode: under the writer mutex, begin a read txn and take the two meta pages from
 * the map (no commit can run, so they match the snapshot); then release the mutex and
 * stream pages 2..next_pgno-1 from the map while the read txn pins them.  Free pages are
 * copied as they are.
 * Compacting mode (MDB_CP_COMPACT): walk every tree of the snapshot depth-first and write
 * each page as soon as its children are written (post-order), numbering pages from 2 in
 * writing order, so the output is one sequential stream and the main root is the last
 * page.  Free pages are left out; the page count is known up front (next_pgno minus metas,
 * free-listed pages and the free list's own pages), and a walk that writes a different
 * number of pages means pages had leaked: MDB_INCOMPATIBLE.  Meta 0 is an empty template
 * (txnid 0), meta 1 the copy (txnid 1).
 * Writes use write(2) because the target may be a pipe.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "core.h"
#include "os.h"

static int write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- compacting copy ---- */
#define CW_BUF (1u << 20)

typedef struct cwalk {
    MDB_txn *txn;
    int fd;
    size_t psize;
    pgno_t next;   /* number the next written page gets */
    uint8_t *buf;  /* output buffer */
    size_t used;
    int rc;
} cwalk;

static int cw_flush(cwalk *w)
{
    int rc = write_all(w->fd, w->buf, w->used);
    w->used = 0;
    return rc;
}

static int cw_put(cwalk *w, const void *p, size_t len)
{
    const uint8_t *s = p;
    while (len) {
        size_t k = CW_BUF - w->used < len ? CW_BUF - w->used : len;
        memcpy(w->buf + w->used, s, k);
        w->used += k;
        s += k;
        len -= k;
        if (w->used == CW_BUF) {
            int rc = cw_flush(w);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int cw_tree(cwalk *w, pgno_t pg, unsigned depth, pgno_t *out);

/* A db_record inside a node: copy its tree and point the record at the new root. */
static int cw_record(cwalk *w, node_header *n)
{
    db_record rec;
    if (node_dsize(n) != sizeof(rec))
        return CORRUPT_AT(0);
    memcpy(&rec, node_data(n), sizeof(rec));
    if (rec.root == P_INVALID)
        return 0;
    int rc = cw_tree(w, rec.root, 1, &rec.root);
    if (!rc)
        memcpy(node_data(n), &rec, sizeof(rec));
    return rc;
}

static int cw_tree(cwalk *w, pgno_t pg, unsigned depth, pgno_t *out)
{
    if (depth > CURSOR_STACK)
        return CORRUPT_AT(pg);
    page *src;
    int rc = page_get(w->txn, pg, &src);
    if (rc)
        return rc;
    if (src->flags & P_OVERFLOW)
        return CORRUPT_AT(pg);
    page *p = malloc(w->psize);
    if (!p)
        return ENOMEM;
    memcpy(p, src, w->psize);
    unsigned nk = PG_NKEYS(p);
    for (unsigned i = 0; i < nk && !rc && !(p->flags & P_LEAF2); i++) {
        if ((rc = node_check(w->txn->env, p, i)) != 0)
            break;
        node_header *n = PG_NODE(p, i);
        if (IS_BRANCH(p)) {
            pgno_t c;
            if ((rc = cw_tree(w, node_child(n), depth + 1, &c)) == 0)
                node_set_child(n, c);
        } else if (n->flags & F_BIGDATA) {
            pgno_t ov;
            page *op;
            memcpy(&ov, node_data(n), sizeof(ov));
            if ((rc = page_get(w->txn, ov, &op)) != 0)
                break;
            size_t np = op->u.overflow_pages;
            if (!(op->flags & P_OVERFLOW) || !np || ov + np > w->txn->next_pgno) {
                rc = CORRUPT_AT(ov);
                break;
            }
            page_header h = *op;
            h.pgno = w->next;
            memcpy(node_data(n), &w->next, sizeof(pgno_t));
            w->next += np;
            if ((rc = cw_put(w, &h, PAGEHDRSZ)) == 0)
                rc = cw_put(w, (uint8_t *)op + PAGEHDRSZ, np * w->psize - PAGEHDRSZ);
        } else if (n->flags & F_SUBDATA) {
            rc = cw_record(w, n); /* a named DB, or a key's sub-tree of duplicates */
        }
    }
    if (!rc) {
        p->pgno = w->next++;
        *out = p->pgno;
        rc = cw_put(w, p, w->psize);
    }
    free(p);
    return rc;
}

/* Pages the compact copy will hold: everything but metas, free pages and the free DB. */
static int cw_expected(MDB_txn *txn, pgno_t *out)
{
    db_record *f = &txn->dbs[FREE_DBI];
    pgno_t skip = CORE_DBS + f->branch_pages + f->leaf_pages + f->overflow_pages;
    MDB_cursor mc;
    cursor_init(&mc, txn, FREE_DBI);
    MDB_val k, v;
    int rc;
    while ((rc = cursor_get(&mc, &k, &v, MDB_NEXT)) == 0) {
        pgno_t cnt;
        if (v.mv_size < sizeof(cnt))
            return CORRUPT_AT(0);
        memcpy(&cnt, v.mv_data, sizeof(cnt));
        skip += cnt;
    }
    if (rc != MDB_NOTFOUND)
        return rc;
    if (skip > txn->next_pgno)
        return MDB_INCOMPATIBLE;
    *out = txn->next_pgno - skip;
    return 0;
}

static int copy_compact(MDB_env *env, int fd)
{
    MDB_txn *txn;
    int rc = txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return rc;
    cwalk w = {txn, fd, env->psize, CORE_DBS, malloc(CW_BUF), 0, 0};
    uint8_t *metas = calloc(2, env->psize);
    pgno_t expect = 0;
    if (!w.buf || !metas) {
        rc = ENOMEM;
        goto out;
    }
    if ((rc = cw_expected(txn, &expect)) != 0)
        goto out;
    meta_record m = *meta_newest(env);
    m.dbs[FREE_DBI].depth = 0;
    m.dbs[FREE_DBI].branch_pages = m.dbs[FREE_DBI].leaf_pages = 0;
    m.dbs[FREE_DBI].overflow_pages = m.dbs[FREE_DBI].entries = 0;
    m.dbs[FREE_DBI].root = P_INVALID;
    m.dbs[MAIN_DBI] = txn->dbs[MAIN_DBI];
    m.mapsize = env->mapsize;
    for (int i = 0; i < 2; i++) {
        page_header *ph = (page_header *)(metas + (size_t)i * env->psize);
        ph->pgno = (pgno_t)i;
        ph->flags = P_META;
        meta_record *mm = (meta_record *)((uint8_t *)ph + PAGEHDRSZ);
        *mm = m;
        if (i == 0) { /* the empty template */
            mm->dbs[MAIN_DBI].depth = 0;
            mm->dbs[MAIN_DBI].branch_pages = mm->dbs[MAIN_DBI].leaf_pages = 0;
            mm->dbs[MAIN_DBI].overflow_pages = mm->dbs[MAIN_DBI].entries = 0;
            mm->dbs[MAIN_DBI].root = P_INVALID;
            mm->last_pg = CORE_DBS - 1;
            mm->txnid = 0;
        } else {
            /* post-order: the main root is the last page written */
            if (m.dbs[MAIN_DBI].root != P_INVALID)
                mm->dbs[MAIN_DBI].root = CORE_DBS + expect - 1;
            mm->last_pg = CORE_DBS + expect - 1;
            mm->txnid = 1;
        }
    }
    if ((rc = cw_put(&w, metas, env->psize * 2)) != 0)
        goto out;
    if (txn->dbs[MAIN_DBI].root != P_INVALID) {
        pgno_t root;
        if ((rc = cw_tree(&w, txn->dbs[MAIN_DBI].root, 1, &root)) != 0)
            goto out;
        if (root != CORE_DBS + expect - 1) {
            rc = MDB_INCOMPATIBLE; /* pages leaked: the file is not what the metas say */
            goto out;
        }
    } else if (expect != 0) {
        rc = MDB_INCOMPATIBLE;
        goto out;
    }
    rc = cw_flush(&w);
out:
    free(w.buf);
    free(metas);
    txn_abort(txn);
    return rc;
}

int env_copyfd(MDB_env *env, int fd, unsigned flags)
{
    if (flags & ~MDB_CP_COMPACT)
        return EINVAL;
    if (flags & MDB_CP_COMPACT)
        return copy_compact(env, fd);
    size_t psize = env->psize;
    uint8_t *metas = malloc(psize * 2);
    if (!metas)
        return ENOMEM;
    MDB_txn *txn;
    int rc = env_writer_lock(env);
    if (rc) {
        free(metas);
        return rc;
    }
    rc = txn_begin(env, NULL, MDB_RDONLY, &txn);
    if (!rc)
        memcpy(metas, env_map(env), psize * 2);
    env_writer_unlock(env);
    if (rc) {
        free(metas);
        return rc;
    }
    rc = write_all(fd, metas, psize * 2);
    free(metas);
    if (!rc) {
        datafile_refresh_size(env);
        size_t end = (size_t)txn->next_pgno * psize;
        size_t fsz = (size_t)env->file_pages * psize;
        if (end > fsz)
            end = fsz;
        for (size_t off = psize * 2; off < end && !rc;) {
            size_t chunk = end - off < (1u << 20) ? end - off : (1u << 20);
            rc = write_all(fd, env_map(env) + off, chunk);
            off += chunk;
        }
    }
    txn_abort(txn);
    return rc;
}

int env_copy_path(MDB_env *env, const char *path, unsigned flags)
{
    if (flags & ~MDB_CP_COMPACT)
        return EINVAL; /* before creating a file we could not fill */
    char *target;
    if (env->flags & MDB_NOSUBDIR) {
        target = strdup(path);
    } else {
        size_t n = strlen(path);
        target = malloc(n + sizeof("/data.mdb"));
        if (target) {
            memcpy(target, path, n);
            memcpy(target + n, "/data.mdb", sizeof("/data.mdb"));
        }
    }
    if (!target)
        return ENOMEM;
    int fd;
    int rc = os_current->open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666, &fd);
    free(target);
    if (rc)
        return rc;
    rc = env_copyfd(env, fd, flags);
    if (!rc)
        rc = os_current->fsync(fd);
    int rc2 = os_current->close(fd);
    return rc ? rc : rc2;
}
