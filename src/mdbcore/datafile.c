/*
 * datafile.c -- the data file's memory map (layer L1): map and unmap (read-only, or
 * writable under WRITEMAP), growing the map in place, the cached file length used to
 * reject pages past EOF, and syncing.  The engine never writes through a read-only map;
 * pages reach the file with pwrite(v) through os_current.
 *
 * A growing map (env->maxsize above mapsize) reserves the address space of the upper bound
 * at map time (an inaccessible anonymous mapping) and maps the file over its start.
 * Growing maps the next part of the file over the reservation right after the mapped
 * part: pages already mapped keep their address, so pointers held by readers stay valid.
 * Invariant: map_span >= mapsize; [map, map + mapsize) is the file, the rest of the span
 * inaccessible.
 */
#include <sys/mman.h>

#include "core.h"
#include "os.h"

static int map_prot(const MDB_env *env)
{
    int prot = PROT_READ;
    if ((env->flags & (MDB_WRITEMAP | MDB_RDONLY)) == MDB_WRITEMAP)
        prot |= PROT_WRITE;
    return prot;
}

int datafile_map(MDB_env *env, void *addr)
{
    int prot = map_prot(env);
    size_t span = env->mapsize;
    if (env->maxsize > span)
        span = (env->maxsize + env->os_psize - 1) / env->os_psize * env->os_psize;
    void *p;
    int rc;
    if (span > env->mapsize) {
        /* reserve the upper bound, then put the file over its start */
        rc = os_current->mmap(addr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                              -1, 0, &p);
        if (rc)
            return rc;
        if (addr && p != addr) {
            os_current->munmap(p, span);
            return EBUSY;
        }
        void *f;
        rc = os_current->mmap(p, env->mapsize, prot, MAP_SHARED | MAP_FIXED, env->data_fd, 0, &f);
        if (rc) {
            os_current->munmap(p, span);
            return rc;
        }
    } else {
        rc = os_current->mmap(addr, env->mapsize, prot, MAP_SHARED, env->data_fd, 0, &p);
        if (rc)
            return rc;
        if (addr && p != addr) {
            os_current->munmap(p, env->mapsize);
            return EBUSY; /* FIXEDMAP could not get its address */
        }
    }
    env->map_span = span;
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
        os_current->munmap(env->map, env->map_span > env->mapsize ? env->map_span : env->mapsize);
        env->map = NULL;
        env->map_span = 0;
    }
}

int datafile_grow(MDB_env *env, size_t size)
{
    pthread_mutex_lock(&env->map_mutex);
    int rc = 0;
    size = (size + env->os_psize - 1) / env->os_psize * env->os_psize;
    if (size > env->map_span)
        size = env->map_span;
    size_t old = env->mapsize;
    if (size <= old)
        goto done; /* another thread got there first, or no room left */
    if ((env->flags & (MDB_WRITEMAP | MDB_RDONLY)) == MDB_WRITEMAP) {
        /* the file must cover what a writable map may touch */
        off_t sz;
        if ((rc = os_current->fsize(env->data_fd, &sz)) != 0)
            goto done;
        if ((size_t)sz < size && (rc = os_current->ftruncate(env->data_fd, (off_t)size)) != 0)
            goto done;
    }
    void *p;
    rc = os_current->mmap(env->map + old, size - old, map_prot(env), MAP_SHARED | MAP_FIXED,
                          env->data_fd, (off_t)old, &p);
    if (rc)
        goto done;
    if (env->flags & MDB_NORDAHEAD)
        os_current->madvise(p, size - old, MADV_RANDOM);
    env->maxpg = size / env->psize;
    env->mapsize = size;
    rc = datafile_refresh_size(env);
done:
    pthread_mutex_unlock(&env->map_mutex);
    return rc;
}

int datafile_grow_for(MDB_env *env, pgno_t pages)
{
    size_t want = (size_t)pages * env->psize;
    if (env->map_span <= env->mapsize || want > env->map_span)
        return MDB_MAP_FULL;
    /* double, so that n growths cover 2^n times the first map; never past the bound */
    size_t size = env->mapsize * 2;
    if (size < want)
        size = want;
    int rc = datafile_grow(env, size);
    if (rc)
        return rc;
    return env->mapsize >= want ? 0 : MDB_MAP_FULL;
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
