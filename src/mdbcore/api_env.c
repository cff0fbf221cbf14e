/*
 * api_env.c -- exported environment functions (layer L7): argument and state checks only;
 * the work happens in env.c, datafile.c, copy.c.
 */
#include <pthread.h>
#include <stdlib.h>

#include "core.h"
#include "lockfile.h"

int mdb_env_create(MDB_env **out)
{
    if (!out)
        return EINVAL;
    MDB_env *env = calloc(1, sizeof(*env));
    if (!env)
        return ENOMEM;
    env->data_fd = env->meta_fd = env->lock_fd = -1;
    env->meta_bad_slot = -1;
    env->maxreaders = DEFAULT_READERS;
    env->max_dirty = MAX_DIRTY;
    env->maxdbs = CORE_DBS;
    env->numdbs = CORE_DBS;
    env->maxkeysize = MDB_MAXKEYSIZE_DEFAULT;
    pthread_mutex_init(&env->dbi_mutex, NULL);
    pthread_mutex_init(&env->map_mutex, NULL);
    *out = env;
    return 0;
}

int mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode)
{
    if (!env || !path)
        return EINVAL;
    if (flags & ~(ENV_CHANGEABLE | ENV_CHANGELESS))
        return EINVAL;
    if (env->flags & ENV_ACTIVE || env->path)
        return EINVAL;
    return env_open(env, path, flags, mode);
}

void mdb_env_close(MDB_env *env)
{
    if (env)
        env_close(env);
}

int mdb_env_copy(MDB_env *env, const char *path)
{
    if (!env || !path || !env->map)
        return EINVAL;
    return env_copy_path(env, path, 0);
}

int mdb_env_copy2(MDB_env *env, const char *path, unsigned int flags)
{
    if (!env || !path || !env->map)
        return EINVAL;
    return env_copy_path(env, path, flags);
}

int mdb_env_copyfd(MDB_env *env, mdb_filehandle_t fd)
{
    if (!env || !env->map)
        return EINVAL;
    return env_copyfd(env, fd, 0);
}

int mdb_env_copyfd2(MDB_env *env, mdb_filehandle_t fd, unsigned int flags)
{
    if (!env || !env->map)
        return EINVAL;
    return env_copyfd(env, fd, flags);
}

static void fill_stat(MDB_env *env, const db_record *d, MDB_stat *st)
{
    st->ms_psize = env->psize;
    st->ms_depth = d->depth;
    st->ms_branch_pages = d->branch_pages;
    st->ms_leaf_pages = d->leaf_pages;
    st->ms_overflow_pages = d->overflow_pages;
    st->ms_entries = d->entries;
}

int mdb_env_stat(MDB_env *env, MDB_stat *st)
{
    if (!env || !st || !env->map)
        return EINVAL;
    fill_stat(env, &meta_newest(env)->dbs[MAIN_DBI], st);
    return 0;
}

int mdb_env_info(MDB_env *env, MDB_envinfo *info)
{
    if (!env || !info)
        return EINVAL;
    memset(info, 0, sizeof(*info));
    info->me_mapsize = env->mapsize;
    info->me_maxreaders = env->maxreaders;
    if (env->map) {
        meta_record *m = meta_newest(env);
        /* as LMDB: the address recorded in the file, which only FIXEDMAP sets */
        info->me_mapaddr = (void *)(uintptr_t)m->address;
        info->me_last_pgno = m->last_pg;
        info->me_last_txnid = m->txnid;
    }
    if (env->lock) {
        info->me_last_txnid = env->lock->head->txnid;
        info->me_numreaders = env->lock->head->numreaders;
    }
    return 0;
}

int mdb_env_sync(MDB_env *env, int force)
{
    if (!env || !env->map)
        return EINVAL;
    if (env->flags & ENV_FATAL)
        return MDB_PANIC;
    return datafile_sync(env, force);
}

int mdb_env_set_flags(MDB_env *env, unsigned int flags, int onoff)
{
    if (!env || (flags & ~ENV_CHANGEABLE))
        return EINVAL;
    if (onoff)
        env->flags |= flags;
    else
        env->flags &= ~flags;
    return 0;
}

int mdb_env_get_flags(MDB_env *env, unsigned int *flags)
{
    if (!env || !flags)
        return EINVAL;
    *flags = env->flags & (ENV_CHANGEABLE | ENV_CHANGELESS);
    return 0;
}

int mdb_env_get_path(MDB_env *env, const char **path)
{
    if (!env || !path)
        return EINVAL;
    *path = env->path;
    return 0;
}

int mdb_env_get_fd(MDB_env *env, mdb_filehandle_t *fd)
{
    if (!env || !fd)
        return EINVAL;
    *fd = env->data_fd;
    return 0;
}

int mdb_env_set_mapsize(MDB_env *env, size_t size)
{
    if (!env)
        return EINVAL;
    return env_set_mapsize(env, size);
}

/* mdbcore.h: the upper bound of a map that grows by itself (datafile.c). */
int mdbcore_env_set_maxsize(MDB_env *env, size_t bytes)
{
    if (!env || env->map)
        return EINVAL;
    if (bytes > ((size_t)1 << 46)) /* 64 TiB: within a 47-bit address space, with room */
        return EINVAL;
    env->maxsize = bytes;
    return 0;
}

size_t mdbcore_env_get_maxsize(MDB_env *env)
{
    return env ? env->maxsize : 0;
}

void *mdbcore_env_get_mapaddr(MDB_env *env)
{
    return env ? env->map : NULL;
}

size_t mdbcore_env_get_mapspan(MDB_env *env)
{
    return env && env->map ? env->map_span : 0;
}

int mdbcore_env_write_map(MDB_env *env, size_t *backed, size_t *copied)
{
    if (backed)
        *backed = env && env->wmap ? env->wmap_backed : 0;
    if (copied)
        *copied = env ? env->wmap_copied : 0;
    return env && env->wmap && env->wmap_state > 0;
}

int mdbcore_env_set_reserve(MDB_env *env, size_t bytes)
{
    if (!env || env->map)
        return EINVAL;
    env->reserve = bytes;
    return 0;
}

int mdb_env_set_maxreaders(MDB_env *env, unsigned int readers)
{
    if (!env || readers == 0 || env->map)
        return EINVAL;
    env->maxreaders = readers;
    return 0;
}

int mdb_env_get_maxreaders(MDB_env *env, unsigned int *readers)
{
    if (!env || !readers)
        return EINVAL;
    *readers = env->maxreaders;
    return 0;
}

int mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs)
{
    if (!env || env->map || dbs > 0x7fff0000u)
        return EINVAL;
    env->maxdbs = dbs + CORE_DBS;
    return 0;
}

int mdb_env_get_maxkeysize(MDB_env *env)
{
    return env ? (int)env->maxkeysize : (int)MDB_MAXKEYSIZE_DEFAULT;
}

int mdb_env_set_userctx(MDB_env *env, void *ctx)
{
    if (!env)
        return EINVAL;
    env->userctx = ctx;
    return 0;
}

void *mdb_env_get_userctx(MDB_env *env)
{
    return env ? env->userctx : NULL;
}

int mdb_env_set_assert(MDB_env *env, MDB_assert_func *func)
{
    if (!env)
        return EINVAL;
    env->assert_fn = func;
    return 0;
}
