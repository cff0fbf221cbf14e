/*
 * pages_write.c -- writing a list of dirty pages to their places in the data file (layer
 * L4): all of them at commit (commit.c), some early when the list fills up (spill.c).
 *
 * Invariants: pages go out in the order of the list (ascending pgno): copied into the
 * write map where the file has their blocks (datafile_write_map), else adjacent ones
 * gathered into one pwritev of at most WRITE_IOV pieces; loose pages are skipped (they
 * were never part of any tree); every page written loses P_DIRTY (on disk a page never
 * carries the in-memory flag); under WRITEMAP nothing is written (the pages are the map)
 * and datafile_sync covers them; env->file_pages grows to cover what was written.
 */
#include <sys/uio.h>

#include "core.h"
#include "os.h"

#define WRITE_IOV 64

int pages_write(MDB_env *env, dirty_entry *list, size_t n)
{
    size_t psize = env->psize;
    struct iovec iov[WRITE_IOV];
    int niov = 0;
    off_t start = 0, next = -1;
    pgno_t end_pg = 0;
    /* pages below `backed` are copied into the write map; the ones written with pwrite
     * from `backed` on without a gap extend it (cover) */
    uint8_t *wmap = datafile_write_map(env);
    pgno_t backed = wmap ? env->wmap_backed : 0, cover = backed;
    for (size_t i = 0; i < n; i++) {
        page *p = list[i].pg;
        if (p->flags & P_LOOSE)
            continue;
        size_t np = (p->flags & P_OVERFLOW) ? p->u.overflow_pages : 1;
        p->flags &= ~P_DIRTY; /* on disk a page never carries the in-memory flag */
        if (env->flags & MDB_WRITEMAP)
            continue;         /* already in place; datafile_sync msyncs it */
        off_t off = (off_t)list[i].pgno * (off_t)psize;
        if (list[i].pgno + np <= backed) {
            int rc = os_current->map_write(env->data_fd, wmap, p, np * psize, off);
            if (rc)
                return rc;
            env->wmap_copied += np;
            continue;
        }
        if (wmap && list[i].pgno == cover)
            cover = list[i].pgno + (pgno_t)np;
        if (niov == WRITE_IOV || (niov && off != next)) {
            int rc = os_current->pwritev(env->data_fd, iov, niov, start);
            if (rc)
                return rc;
            niov = 0;
        }
        if (niov == 0)
            start = off;
        iov[niov].iov_base = p;
        iov[niov].iov_len = np * psize;
        niov++;
        next = off + (off_t)(np * psize);
        if (list[i].pgno + np > end_pg)
            end_pg = list[i].pgno + np;
    }
    if (niov) {
        int rc = os_current->pwritev(env->data_fd, iov, niov, start);
        if (rc)
            return rc;
    }
    if (end_pg > env->file_pages)
        env->file_pages = end_pg;
    if (cover > backed)
        datafile_write_map_extend(env, cover);
    return 0;
}
