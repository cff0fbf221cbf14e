/*
 * meta.c -- the two meta pages (layer L1): judging each one on open, the initial pair of
 * a new file, choosing the meta in force, and the commit point.
 *
 * Open: each meta is judged on its own (meta_judge): its page header, magic, version and
 * page size, a txnid that fits its slot, a last page in range, and for each of its two
 * trees a root inside the file whose page header agrees with the record (page number,
 * kind for the depth, a key count that fits the page and the record's counts).  The env
 * opens from the newest meta that passes.  When the other one fails, its slot is marked
 * bad (env->meta_bad_slot, with a copy of its bytes as judged): meta_newest() skips it for
 * as long as it holds those bytes, and the next commit, whose txnid always lands in that
 * slot, writes the whole page and heals the file.  Without a checksum in the format, a
 * damaged meta whose bytes are still plausible passes (docs/durability.md).
 *
 * Commit point: txn T writes only the tail of the meta (mapsize onwards) into page T & 1,
 * through the O_DSYNC descriptor unless NOSYNC/NOMETASYNC.  The other meta still
 * describes T-1, whose pages T never overwrote, so a torn or failed write leaves the
 * previous snapshot intact.  A failed write puts back the bytes the slot held, saved
 * before the write (the map shares the page cache with the file, so after a partial
 * write it already shows new bytes), and marks the environment fatal (MDB_PANIC).
 */
#include <stdlib.h>

#include "core.h"
#include <sys/mman.h>

#include "mdbcore.h"
#include "os.h"

#define META_HEAD (PAGEHDRSZ + sizeof(meta_record)) /* the bytes of a meta page in use */
/* No map on x86-64 is larger than the 128 TiB of a process's address space: a meta that
 * asks for more (map size, or pages up to last_pg) cannot be one that was in use. */
#define MAP_LIMIT ((uint64_t)1 << 47)

static int psize_valid(unsigned psize)
{
    return psize >= MIN_PAGESIZE && psize <= 0x10000 && !(psize & (psize - 1));
}

/* Where meta_judge reads the header of a tree's root page: the data file, with pread
 * (the file is not mapped yet when the metas are judged). */
typedef struct root_reader {
    int fd;
    uint64_t file_pages;
} root_reader;

static int read_root_header(const root_reader *rr, pgno_t pg, unsigned psize, page_header *h)
{
    size_t got = 0;
    int rc = os_current->pread(rr->fd, h, sizeof *h, (off_t)(pg * psize), &got);
    if (rc)
        return rc;
    return got == sizeof *h ? 0 : MDB_CORRUPTED;
}

/* Does db record `d` of a meta hold up against its root page?  0, MDB_CORRUPTED (with
 * *why set), or an I/O error. */
static int judge_tree(const root_reader *rr, const db_record *d, pgno_t last_pg, unsigned psize,
                      const char **why)
{
    int dupsort = (d->flags & MDB_DUPSORT) != 0;
    if (d->root == P_INVALID) {
        if (d->depth != 0 || d->entries != 0) {
            *why = "an empty tree with a depth or entries";
            return MDB_CORRUPTED;
        }
        if (!dupsort && (d->branch_pages | d->leaf_pages | d->overflow_pages)) {
            *why = "an empty tree with pages";
            return MDB_CORRUPTED;
        }
        return 0;
    }
    if (d->depth == 0 || d->depth > CURSOR_STACK) {
        *why = "a tree depth out of range";
        return MDB_CORRUPTED;
    }
    if (d->root < CORE_DBS || d->root > last_pg) {
        *why = "a root page past the last page";
        return MDB_CORRUPTED;
    }
    if (d->root >= rr->file_pages) {
        *why = "a root page past the end of the file";
        return MDB_CORRUPTED;
    }
    page_header h;
    int rc = read_root_header(rr, d->root, psize, &h);
    if (rc) {
        *why = "a root page that cannot be read";
        return rc;
    }
    if (h.pgno != d->root) {
        *why = "a root page whose header has another page number";
        return MDB_CORRUPTED;
    }
    unsigned kind = h.flags & P_DISK_FLAGS;
    if (kind != (d->depth == 1 ? P_LEAF : P_BRANCH)) {
        *why = "a root page of the wrong kind for the tree's depth";
        return MDB_CORRUPTED;
    }
    unsigned lower = h.u.bounds.lower, upper = h.u.bounds.upper;
    uint64_t nkeys = lower >= PAGEHDRSZ ? (lower - PAGEHDRSZ) / 2 : 0;
    if (lower < PAGEHDRSZ || (lower & 1) || lower > upper || upper > psize || nkeys == 0 ||
        nkeys * (sizeof(indx_t) + NODESIZE) > psize - PAGEHDRSZ) {
        *why = "a root page whose key count does not fit";
        return MDB_CORRUPTED;
    }
    /* The record's counts against the root (the structural checker demands them exactly
     * of a plain tree; a DUPSORT record counts at least the tree's own pages). */
    int ok;
    if (dupsort) /* lower bounds only */
        ok = d->depth == 1 ? d->leaf_pages >= 1 && d->entries >= nkeys
                           : d->branch_pages >= (uint64_t)d->depth - 1 && d->leaf_pages >= nkeys;
    else if (d->depth == 1)
        ok = d->branch_pages == 0 && d->leaf_pages == 1 && d->entries == nkeys;
    else
        ok = d->branch_pages >= (uint64_t)d->depth - 1 && d->leaf_pages >= nkeys &&
             d->entries >= d->leaf_pages &&
             (d->depth > 2 || (d->branch_pages == 1 && d->leaf_pages == nkeys));
    /* a plain tree's record counts its own pages exactly: no more than the file has */
    if (ok && !dupsort)
        ok = d->branch_pages <= last_pg && d->leaf_pages <= last_pg &&
             d->overflow_pages <= last_pg &&
             d->branch_pages + d->leaf_pages + d->overflow_pages <= last_pg - 1;
    if (!ok) {
        *why = "page or entry counts that do not fit its root page";
        return MDB_CORRUPTED;
    }
    return 0;
}

/* Judge the meta page of `slot` from its first META_HEAD bytes (`got` of them read).
 * psize: the page size the other meta established, or 0.  0, MDB_INVALID (not a meta
 * page), MDB_VERSION_MISMATCH, MDB_CORRUPTED (a meta whose contents do not hold up), or an
 * I/O error; *why says what failed. */
static int meta_judge(const root_reader *rr, const uint8_t *head, size_t got, unsigned slot,
                      unsigned psize, const char **why)
{
    if (got < META_HEAD) {
        *why = "the page is missing or cut short";
        return MDB_INVALID;
    }
    page_header h;
    meta_record m;
    memcpy(&h, head, sizeof h);
    memcpy(&m, head + PAGEHDRSZ, sizeof m);
    if (m.magic != MDB_DATA_MAGIC) {
        *why = "bad magic";
        return MDB_INVALID;
    }
    if (h.flags != P_META || h.pgno != slot) {
        *why = "bad page header";
        return MDB_INVALID;
    }
    if (m.version != MDB_DATA_VERSION) {
        *why = "another format version";
        return MDB_VERSION_MISMATCH;
    }
    unsigned ps = m.dbs[FREE_DBI].pad;
    if (!psize_valid(ps) || (psize && ps != psize)) {
        *why = "a page size out of range or unlike the other meta's";
        return MDB_INVALID;
    }
    /* every commit writes txnid T into page T & 1; a new file has 0 in both */
    if (m.txnid == (txnid_t)-1 || (m.txnid != 0 && (m.txnid & 1) != slot)) {
        *why = "a txnid that does not belong in this page";
        return MDB_CORRUPTED;
    }
    if (m.last_pg < CORE_DBS - 1 || m.last_pg >= MAP_LIMIT / ps) {
        *why = "a last page out of range";
        return MDB_CORRUPTED;
    }
    if (m.mapsize > MAP_LIMIT) {
        *why = "a map size larger than any address space";
        return MDB_CORRUPTED;
    }
    if (m.dbs[FREE_DBI].flags & MDB_DUPSORT) {
        *why = "a free DB with duplicates";
        return MDB_CORRUPTED;
    }
    /* the only flags mdb_dbi_open lets a database keep */
    if (m.dbs[MAIN_DBI].flags & ~(unsigned)(MDB_REVERSEKEY | MDB_DUPSORT | MDB_INTEGERKEY |
                                             MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)) {
        *why = "unknown main DB flags";
        return MDB_CORRUPTED;
    }
    /* txnid 0 is a new file's meta (or the empty one of a compacted copy): nothing in it */
    if (m.txnid == 0 && (m.last_pg != CORE_DBS - 1 || m.dbs[FREE_DBI].root != P_INVALID ||
                         m.dbs[MAIN_DBI].root != P_INVALID)) {
        *why = "txnid 0 with pages in use";
        return MDB_CORRUPTED;
    }
    for (int i = 0; i < CORE_DBS; i++) {
        int rc = judge_tree(rr, &m.dbs[i], m.last_pg, ps, why);
        if (rc)
            return rc;
    }
    return 0;
}

/* The pages txn `key` freed, as the free DB of record `fdb` lists them: does the list
 * hold page `a` or page `b`?  1 yes, 0 no or cannot tell (a page that does not hold up
 * ends the search: this is a cross-check, the metas were judged already). */
static int freed_by(int fd, const db_record *fdb, txnid_t key, unsigned psize, uint64_t file_pages,
                    pgno_t a, pgno_t b)
{
    uint8_t *pg = malloc(psize);
    if (!pg)
        return 0;
    int found = 0;
    pgno_t at = fdb->root;
    for (unsigned level = 0; level < fdb->depth && at < file_pages; level++) {
        size_t got = 0;
        if (os_current->pread(fd, pg, psize, (off_t)(at * psize), &got) || got != psize)
            break;
        const page_header *h = (const page_header *)pg;
        unsigned nk = h->u.bounds.lower >= PAGEHDRSZ ? (h->u.bounds.lower - PAGEHDRSZ) / 2u : 0;
        if (h->pgno != at || nk == 0 || h->u.bounds.lower > psize)
            break;
        int leaf = level + 1 == fdb->depth;
        if (!(h->flags & (leaf ? P_LEAF : P_BRANCH)))
            break;
        /* the last node whose key is <= key (a branch's first key is empty) */
        const node_header *hit = NULL;
        for (unsigned i = 0; i < nk; i++) {
            unsigned off = h->slots[i];
            if (off < h->u.bounds.upper || off + NODESIZE > psize)
                goto done;
            const node_header *n = (const node_header *)(pg + off);
            txnid_t k = 0;
            if (n->ksize == sizeof k && off + NODESIZE + sizeof k <= psize)
                memcpy(&k, n->key, sizeof k);
            else if (leaf || i > 0)
                goto done;
            if (i > 0 && k > key)
                break;
            if (!leaf || k == key)
                hit = n;
        }
        if (!hit)
            break;
        if (!leaf) {
            at = node_child(hit);
            continue;
        }
        /* the record: a count, then the page numbers; in the node or an overflow run */
        size_t dsize = node_dsize(hit), off = (size_t)((const uint8_t *)hit - pg) + NODESIZE + hit->ksize;
        off_t from;
        if (hit->flags & F_BIGDATA) {
            pgno_t ov;
            if (off + sizeof ov > psize)
                break;
            memcpy(&ov, pg + off, sizeof ov);
            if (ov >= file_pages)
                break;
            from = (off_t)(ov * psize + PAGEHDRSZ);
        } else {
            if (off + dsize > psize)
                break;
            from = (off_t)(at * psize + off);
        }
        pgno_t count = 0;
        size_t got2 = 0;
        if (os_current->pread(fd, &count, sizeof count, from, &got2) || got2 != sizeof count ||
            count > dsize / sizeof(pgno_t))
            break;
        for (pgno_t i = 0; i < count && !found; i += psize / sizeof(pgno_t)) {
            size_t n = count - i < psize / sizeof(pgno_t) ? (size_t)(count - i) : psize / sizeof(pgno_t);
            if (os_current->pread(fd, pg, n * sizeof(pgno_t),
                                  from + (off_t)((1 + i) * sizeof(pgno_t)), &got2) ||
                got2 != n * sizeof(pgno_t))
                break;
            for (size_t j = 0; j < n; j++) {
                pgno_t p;
                memcpy(&p, pg + j * sizeof p, sizeof p);
                if (p == a || p == b)
                    found = 1;
            }
        }
        break;
    }
done:
    free(pg);
    return found;
}

static int adjacent(txnid_t a, txnid_t b)
{
    return a == b ? a == 0 : (a > b ? a - b : b - a) == 1;
}

static int io_error(int rc)
{
    return rc && rc != MDB_INVALID && rc != MDB_VERSION_MISMATCH && rc != MDB_CORRUPTED;
}

/* Could the META_HEAD bytes at `head` be meta 1 of a file of page size ps? */
static int looks_like_meta1(const uint8_t *head, size_t got, unsigned ps)
{
    page_header h;
    meta_record m;
    if (got < META_HEAD)
        return 0;
    memcpy(&h, head, sizeof h);
    memcpy(&m, head + PAGEHDRSZ, sizeof m);
    return m.magic == MDB_DATA_MAGIC && h.pgno == 1 && m.dbs[FREE_DBI].pad == ps;
}

int meta_read(MDB_env *env, meta_record *newest, unsigned *psize_out)
{
    uint8_t buf[2][META_HEAD];
    size_t got[2] = {0, 0};
    memset(buf, 0, sizeof buf);
    int rc = os_current->pread(env->data_fd, buf[0], sizeof(buf[0]), 0, &got[0]);
    if (rc)
        return rc;
    if (got[0] == 0)
        return ENOENT;
    off_t fsz = 0;
    if ((rc = os_current->fsize(env->data_fd, &fsz)) != 0)
        return rc;
    meta_record m[2];
    memcpy(&m[0], buf[0] + PAGEHDRSZ, sizeof m[0]);
    const char *why[2] = {"", ""};
    int res[2];
    unsigned ps0 = m[0].dbs[FREE_DBI].pad, psize = 0;
    root_reader rr = {env->data_fd, psize_valid(ps0) ? (uint64_t)fsz / ps0 : 0};
    res[0] = meta_judge(&rr, buf[0], got[0], 0, 0, &why[0]);
    if (io_error(res[0]))
        return res[0];
    if (!res[0]) {
        psize = ps0;
        if ((rc = os_current->pread(env->data_fd, buf[1], sizeof(buf[1]), ps0, &got[1])) != 0)
            return rc;
        res[1] = meta_judge(&rr, buf[1], got[1], 1, ps0, &why[1]);
    } else {
        /* meta 0 does not tell where meta 1 is: look at every page size it may have */
        res[1] = MDB_INVALID;
        why[1] = "no meta page found";
        for (unsigned ps = MIN_PAGESIZE; ps <= 0x10000; ps <<= 1) {
            if ((rc = os_current->pread(env->data_fd, buf[1], sizeof(buf[1]), ps, &got[1])) != 0)
                return rc;
            if (!looks_like_meta1(buf[1], got[1], ps))
                continue;
            rr.file_pages = (uint64_t)fsz / ps;
            res[1] = meta_judge(&rr, buf[1], got[1], 1, ps, &why[1]);
            psize = ps;
            break;
        }
        if (res[1] == MDB_INVALID)
            got[1] = 0;
    }
    if (io_error(res[1]))
        return res[1];
    if (res[0] && res[1]) {
        /* neither holds up: the most telling of the two answers */
        if (res[0] == MDB_VERSION_MISMATCH || res[1] == MDB_VERSION_MISMATCH)
            return MDB_VERSION_MISMATCH;
        if (res[0] == MDB_CORRUPTED || res[1] == MDB_CORRUPTED)
            return CORRUPT_AT(0);
        return MDB_INVALID;
    }
    memcpy(&m[1], buf[1] + PAGEHDRSZ, sizeof m[1]);
    unsigned use;
    env->meta_state = 0;
    env->meta_bad_slot = -1;
    if (!res[0] && !res[1] && !adjacent(m[0].txnid, m[1].txnid)) {
        /* Every commit writes txnid T next to the other page's T-1 (a new file has 0 and 0,
         * a compacted copy 0 and 1): a pair further apart has a damaged txnid, most likely
         * raised by the damage, so the higher one is not trusted. */
        unsigned hi = m[1].txnid > m[0].txnid ? 1 : 0;
        res[hi] = MDB_CORRUPTED;
        why[hi] = "a txnid far from the other meta's";
    }
    if (!res[0] && !res[1] && m[0].txnid != m[1].txnid) {
        /* Txn T never takes a page that T-1 freed (T-2's meta, still on disk, may reach
         * it): a newer meta whose root T-1 freed is a torn mix with T-2's records. */
        unsigned hi = m[1].txnid > m[0].txnid ? 1 : 0;
        const db_record *f = &m[!hi].dbs[FREE_DBI];
        if (f->root != P_INVALID &&
            freed_by(env->data_fd, f, m[!hi].txnid, psize, (uint64_t)fsz / psize,
                     m[hi].dbs[FREE_DBI].root, m[hi].dbs[MAIN_DBI].root)) {
            res[hi] = MDB_CORRUPTED;
            why[hi] = "a root page that the older meta's txn freed";
        }
    }
    if (!res[0] && !res[1]) {
        use = m[1].txnid > m[0].txnid ? 1 : 0;
    } else {
        use = res[0] ? 1 : 0;
        unsigned bad = !use;
        env->meta_bad_slot = (int)bad;
        env->meta_bad_rc = res[bad];
        env->meta_bad_why = why[bad];
        memcpy(env->meta_bad_copy, buf[bad], META_HEAD);
        /* a page cut off by the end of the file must not be read through the map */
        env->meta_bad_short = (uint64_t)fsz < (uint64_t)(bad + 1) * psize;
        env->meta_state = MDBCORE_META_DAMAGED;
        /* a page that is not a meta at all may have been the newer one */
        if (res[bad] == MDB_INVALID || m[bad].txnid > m[use].txnid)
            env->meta_state |= MDBCORE_META_FALLBACK;
    }
    *newest = m[use];
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

/* The damaged slot, or -1: the slot marked at open, as long as it still holds the bytes
 * judged then.  Once a commit (ours or another process's) has rewritten it, the slot is
 * an ordinary meta again. */
static int bad_slot(MDB_env *env)
{
    int s = __atomic_load_n(&env->meta_bad_slot, __ATOMIC_ACQUIRE);
    if (s < 0)
        return -1;
    if (env->meta_bad_short)
        return s; /* past the end of the file: only our own commit rewrites it */
    const uint8_t *page = env_map(env) + (size_t)s * env->psize;
    return memcmp(page, env->meta_bad_copy, META_HEAD) == 0 ? s : -1;
}

int meta_is_damaged(MDB_env *env, const meta_record *m)
{
    if (__atomic_load_n(&env->meta_bad_slot, __ATOMIC_RELAXED) < 0)
        return 0;
    int bad = bad_slot(env);
    return bad >= 0 && m == env->metas[bad];
}

meta_record *meta_newest(MDB_env *env)
{
    /* another thread may be moving the map (datafile.c): either map holds the metas */
    meta_record *a = __atomic_load_n(&env->metas[0], __ATOMIC_RELAXED);
    meta_record *b = __atomic_load_n(&env->metas[1], __ATOMIC_RELAXED);
    int bad = bad_slot(env);
    if (bad >= 0)
        return bad ? a : b;
    return b->txnid > a->txnid ? b : a;
}

void meta_refresh(MDB_env *env)
{
    /* under the writer lock: another process's commit may have healed the slot */
    if (__atomic_load_n(&env->meta_bad_slot, __ATOMIC_ACQUIRE) >= 0 && bad_slot(env) < 0) {
        __atomic_store_n(&env->meta_bad_slot, -1, __ATOMIC_RELEASE);
        env->meta_state = (env->meta_state & ~(MDBCORE_META_DAMAGED | MDBCORE_META_FALLBACK)) |
                          MDBCORE_META_HEALED;
    }
}

/* Write meta `m` into page `slot`: its tail from mapsize on, or (whole) the page as
 * meta_create lays it out, so that a damaged header or magic is rewritten too.  On failure
 * the bytes the slot held are put back. */
static int meta_put(MDB_env *env, unsigned slot, const meta_record *m, int whole)
{
    size_t len, at;
    uint8_t tailbuf[2][sizeof(meta_record)];
    uint8_t *src, *old, *pagebuf = NULL;
    if (whole) {
        len = env->psize;
        at = 0;
        if (!(pagebuf = calloc(2, len)))
            return ENOMEM;
        page_header *ph = (page_header *)pagebuf;
        ph->pgno = slot;
        ph->flags = P_META;
        memcpy(pagebuf + PAGEHDRSZ, m, sizeof *m);
        src = pagebuf;
        old = pagebuf + len;
    } else {
        len = sizeof(meta_record) - META_TAIL_OFFSET;
        at = PAGEHDRSZ + META_TAIL_OFFSET;
        src = tailbuf[0];
        memcpy(src, (const uint8_t *)m + META_TAIL_OFFSET, len);
        old = tailbuf[1];
    }
    off_t off = (off_t)slot * env->psize + (off_t)at;
    /* Saved before the write (after it, the map may show the new bytes).  A slot inside
     * the file is read from the map, as LMDB does: no system call per commit (a syncrepl
     * consumer commits once per entry).  A damaged file may end before the slot, where
     * the map must not be read: pread says what is there. */
    size_t got = 0;
    int rc = 0;
    if ((pgno_t)slot < env->file_pages) {
        memcpy(old, env_map(env) + off, len);
        got = len;
    } else if ((rc = os_current->pread(env->data_fd, old, len, off, &got)) != 0) {
        free(pagebuf);
        return rc;
    }
    memset(old + got, 0, len - got);
    if (env->flags & MDB_WRITEMAP) {
        /* data was msynced first (commit.c); now the meta page, in place */
        uint8_t *mp = env_map(env) + off;
        memcpy(mp, src, len);
        if (!(env->flags & (MDB_NOSYNC | MDB_NOMETASYNC))) {
            size_t pg = (size_t)slot * env->psize;
            int how = (env->flags & MDB_MAPASYNC) ? MS_ASYNC : MS_SYNC;
            rc = os_current->msync(env_map(env) + pg, env->psize, how);
            if (rc) {
                /* the page cache holds the new bytes: put the old ones back */
                memcpy(mp, old, len);
                os_current->msync(env_map(env) + pg, env->psize, how);
            }
        }
    } else {
        int fd = (env->flags & (MDB_NOSYNC | MDB_NOMETASYNC)) ? env->data_fd : env->meta_fd;
        rc = os_current->pwrite(fd, src, len, off);
        if (rc)
            /* so that no reader trusts a half-written meta */
            os_current->pwrite(fd, old, len, off);
    }
    free(pagebuf);
    return rc;
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
    unsigned slot = (unsigned)(txn->txnid & 1);
    int bad = bad_slot(env), rc = 0;
    /* The damaged slot is the one txn T lands in, but for a file whose only good meta is
     * the txnid-0 one of a new file in page 1: page 0 then gets a copy of it first. */
    if (bad >= 0 && bad != (int)slot)
        rc = meta_put(env, (unsigned)bad, cur, 1);
    if (!rc)
        rc = meta_put(env, slot, &m, bad >= 0);
    if (rc) {
        env->flags |= ENV_FATAL;
        return rc;
    }
    if (bad >= 0) {
        env->meta_bad_short = 0;
        __atomic_store_n(&env->meta_bad_slot, -1, __ATOMIC_RELEASE);
        env->meta_state = (env->meta_state & ~(MDBCORE_META_DAMAGED | MDBCORE_META_FALLBACK)) |
                          MDBCORE_META_HEALED;
    }
    return 0;
}

int mdbcore_env_meta_status(MDB_env *env, mdbcore_meta_status *out)
{
    if (!env || !out)
        return EINVAL;
    memset(out, 0, sizeof *out);
    out->damaged_page = -1;
    if (!env->map)
        return EINVAL;
    unsigned state = env->meta_state;
    int bad = bad_slot(env);
    if (bad < 0 && __atomic_load_n(&env->meta_bad_slot, __ATOMIC_ACQUIRE) >= 0)
        state = (state & ~(MDBCORE_META_DAMAGED | MDBCORE_META_FALLBACK)) | MDBCORE_META_HEALED;
    out->flags = state;
    meta_record *use = meta_newest(env);
    out->used_page = use == env->metas[1];
    out->used_txnid = use->txnid;
    out->damaged_page = bad;
    if (bad >= 0) {
        meta_record m;
        memcpy(&m, env->meta_bad_copy + PAGEHDRSZ, sizeof m);
        out->damaged_txnid = m.txnid;
        out->damaged_error = env->meta_bad_rc;
        out->damaged_reason = env->meta_bad_why;
    }
    return 0;
}
