/*
 * datafile.c -- the data file's memory map (layer L1): map and unmap (read-only, or
 * writable under WRITEMAP), the cached file length used to reject pages past EOF, and
 * syncing.  The engine never writes through a read-only map; pages reach the file with
 * pwrite(v) through os_current.
 */
#include <sys/mman.h>

#include "core.h"
#include "os.h"

int datafile_map(MDB_env *env, void *addr)
{
    int prot = PROT_READ;
    if ((env->flags & (MDB_WRITEMAP | MDB_RDONLY)) == MDB_WRITEMAP)
        prot |= PROT_WRITE;
    void *p;
    int rc = os_current->mmap(addr, env->mapsize, prot, MAP_SHARED, env->data_fd, 0, &p);
    if (rc)
        return rc;
    if (addr && p != addr) {
        os_current->munmap(p, env->mapsize);
        return EBUSY; /* FIXEDMAP could not get its address */
    }
    env->map = p;
    env->maxpg = env->mapsize / env->psize;
    env->metas[0] = (meta_record *)(env->map + PAGEHDRSZ);
    env->metas[1] = (meta_record *)(env->map + env->psize + PAGEHDRSZ);
    if (env->flags & MDB_NORDAHEAD)
        os_current->madvise(p, env->mapsize, MADV_RANDOM);
    return datafile_refresh_size(env);
}

void datafile_unmap(MDB_env *env)
{
    if (env->map) {
        os_current->munmap(env->map, env->mapsize);
        env->map = NULL;
    }
}

int datafile_refresh_size(MDB_env *env)
{
    off_t sz;
    int rc = os_current->fsize(env->data_fd, &sz);
    if (rc)
        return rc;
    env->file_pages = (pgno_t)sz / env->psize;
    return 0;
}

int datafile_sync(MDB_env *env, int force)
{
    if (env->flags & MDB_RDONLY)
        return EACCES;
    if (!force && (env->flags & MDB_NOSYNC))
        return 0;
    if ((env->flags & MDB_WRITEMAP) && env->map) {
        int how = (!force && (env->flags & MDB_MAPASYNC)) ? MS_ASYNC : MS_SYNC;
        int rc = os_current->msync(env->map, env->mapsize, how);
        if (rc)
            return rc;
        if (how == MS_ASYNC)
            return 0;
    }
    return os_current->fdatasync(env->data_fd);
}
