/*
 * env.c -- the environment lifecycle (layer L6): create with defaults, open (lock file,
 * data file, metas, map), close, map resizing, stats and info; the writer mutex
 * (env_writer_lock, used by txn.c and copy.c).
 * Invariants: after a successful open, psize/node_max/maxpg describe the file and the map,
 * metas[] point at the two meta pages inside the map, and the reader TLS key exists
 * unless NOTLS.  A failed open leaves a handle that mdb_env_close can release.
 */
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core.h"
#include "lockfile.h"
#include "os.h"
#include "readers.h"

/* The writer mutex (no-op under NOLOCK); repairs shared state after a dead owner. */
int env_writer_lock(MDB_env *env)
{
    if (!env->lock)
        return 0;
    int died = 0;
    int rc = lockfile_writer_lock(env->lock, &died);
    if (rc)
        return rc;
    if (died) {
        /* the previous writer died mid-txn: its work is simply gone; repair shared state */
        env->lock->head->txnid = meta_newest(env)->txnid;
        readers_check(env->lock, env->pid, NULL);
    }
    return 0;
}

void env_writer_unlock(MDB_env *env)
{
    if (env->lock)
        lockfile_writer_unlock(env->lock);
}

static void slot_destructor(void *slot)
{
    if (slot)
        readers_release((reader_slot *)slot);
}

static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, b, lb + 1);
    }
    return s;
}

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

int env_open(MDB_env *env, const char *path, unsigned flags, mode_t mode)
{
    int rc;
    env->flags |= flags;
    env->pid = getpid();
    env->os_psize = os_page_size();
    if (!(env->path = strdup(path)))
        return ENOMEM;
    if (flags & MDB_NOSUBDIR) {
        env->data_path = strdup(path);
        env->lock_path = path_join(path, "-lock");
    } else {
        env->data_path = path_join(path, "/data.mdb");
        env->lock_path = path_join(path, "/lock.mdb");
    }
    if (!env->data_path || !env->lock_path)
        return ENOMEM;

    env->dbinfo = calloc(env->maxdbs, sizeof(db_info));
    env->dbflags = calloc(env->maxdbs, sizeof(uint16_t));
    env->dbseq = calloc(env->maxdbs, sizeof(unsigned));
    if (!env->dbinfo || !env->dbflags || !env->dbseq)
        return ENOMEM;
    env->numdbs = CORE_DBS;

    int rdonly = (flags & MDB_RDONLY) != 0;
    int first = 0;
    if (!(flags & MDB_NOLOCK)) {
        unsigned nr = env->maxreaders;
        rc = lockfile_open(&env->lock, env->lock_path, mode, rdonly, &nr, &first);
        if (rc)
            return rc;
        if (env->lock) {
            env->maxreaders = nr;
            env->lock_fd = env->lock->fd;
        }
    }

    int oflags = rdonly ? O_RDONLY : (O_RDWR | O_CREAT);
    if ((rc = os_current->open(env->data_path, oflags | O_CLOEXEC, mode, &env->data_fd)) != 0)
        return rc;

    meta_record meta;
    unsigned psize = 0;
    rc = meta_read(env, &meta, &psize);
    int fresh = 0;
    if (rc == ENOENT && !rdonly) {
        fresh = 1;
        psize = env->os_psize;
        if (psize > MAX_PAGESIZE)
            psize = MAX_PAGESIZE;
        env->psize = psize;
        if (!env->mapsize)
            env->mapsize = DEFAULT_MAPSIZE;
        env->mapsize = round_up(env->mapsize, env->os_psize);
        if ((rc = meta_create(env)) != 0)
            return rc;
        if ((rc = meta_read(env, &meta, &psize)) != 0)
            return rc;
    } else if (rc) {
        return rc;
    }
    env->psize = psize;
    env->node_max = NODE_MAX(psize);
    env->maxkeysize = MDB_MAXKEYSIZE_DEFAULT;
    if (env->node_max < 2 * (MDB_MAXKEYSIZE_DEFAULT + NODESIZE + 2u))
        env->maxkeysize = (env->node_max / 2) - NODESIZE - 2; /* tiny pages: keep splits sound */
    env->maxfree_1pg = psize / sizeof(pgno_t) - 2;
    if (!fresh && !env->mapsize)
        env->mapsize = meta.mapsize;
    /* A map smaller than the pages already used (a new file's two metas included) is
     * raised silently, as LMDB does: txns then start and a put needing room gets MAP_FULL. */
    size_t minsize = (size_t)(meta.last_pg + 1) * psize;
    if (env->mapsize < minsize)
        env->mapsize = minsize;
    env->mapsize = round_up(env->mapsize, env->os_psize);
    if ((flags & MDB_WRITEMAP) && !rdonly) {
        off_t sz;
        if ((rc = os_current->fsize(env->data_fd, &sz)) != 0)
            return rc;
        if ((size_t)sz < env->mapsize &&
            (rc = os_current->ftruncate(env->data_fd, (off_t)env->mapsize)) != 0)
            return rc;
    }
    void *addr = NULL;
    if ((flags & MDB_FIXEDMAP) && meta.address)
        addr = (void *)(uintptr_t)meta.address;
    if ((rc = datafile_map(env, addr)) != 0)
        return rc;
    if (fresh && (flags & MDB_FIXEDMAP)) {
        /* the address is known only now; later opens map there and env_info reports it */
        uint64_t a = (uint64_t)(uintptr_t)env->map;
        for (int i = 0; i < 2 && !rc; i++)
            rc = os_current->pwrite(env->data_fd, &a, sizeof(a),
                                    (off_t)i * psize + PAGEHDRSZ + offsetof(meta_record, address));
        if (rc)
            return rc;
    }

    if (!rdonly) {
        rc = os_current->open(env->data_path, O_RDWR | O_DSYNC | O_CLOEXEC, mode, &env->meta_fd);
        if (rc)
            return rc;
    }
    if (env->lock && first) {
        if ((rc = lockfile_share(env->lock, meta_newest(env)->txnid)) != 0)
            return rc;
    }
    if (!(flags & MDB_NOTLS)) {
        if ((rc = pthread_key_create(&env->reader_key, slot_destructor)) != 0)
            return MDB_TLS_FULL;
        env->txkey_made = 1;
    }
    env->dbinfo[FREE_DBI].cmp = cmp_int;
    env->dbinfo[MAIN_DBI].cmp = cmp_for_keys(meta.dbs[MAIN_DBI].flags);
    env->dbinfo[MAIN_DBI].dcmp = cmp_for_dups(meta.dbs[MAIN_DBI].flags);
    env->dbflags[MAIN_DBI] = meta.dbs[MAIN_DBI].flags;
    env->flags |= ENV_ACTIVE;
    return 0;
}

void env_close(MDB_env *env)
{
    if (env->txkey_made) {
        /* our thread's slot: clear it now, the destructor will not run for it */
        reader_slot *s = pthread_getspecific(env->reader_key);
        pthread_setspecific(env->reader_key, NULL);
        if (s && s->pid == (uint32_t)env->pid)
            readers_release(s);
        pthread_key_delete(env->reader_key);
    }
    if (env->dbinfo) {
        for (MDB_dbi i = CORE_DBS; i < env->maxdbs; i++)
            free(env->dbinfo[i].name.mv_data);
    }
    txn_cache_free(env);
    cursor_pool_free(env);
    page_cache_free(env);
    free(env->name_index);
    free(env->dbinfo);
    free(env->dbflags);
    free(env->dbseq);
    datafile_unmap(env);
    if (env->meta_fd >= 0 && env->meta_fd != env->data_fd)
        os_current->close(env->meta_fd);
    if (env->data_fd >= 0)
        os_current->close(env->data_fd);
    if (env->lock)
        lockfile_close(env->lock, env->pid);
    free(env->path);
    free(env->data_path);
    free(env->lock_path);
    pthread_mutex_destroy(&env->dbi_mutex);
    pthread_mutex_destroy(&env->map_mutex);
    free(env);
}

int env_set_mapsize(MDB_env *env, size_t size)
{
    if (!env->map) {
        env->mapsize = size;
        return 0;
    }
    if (env->write_txn)
        return EINVAL;
    meta_record *m = meta_newest(env);
    if (size == 0)
        size = m->mapsize;
    size_t minsize = (size_t)(m->last_pg + 1) * env->psize;
    if (size < minsize)
        size = minsize;
    size = round_up(size, env->os_psize);
    if (size <= env->map_span || !(env->flags & MDB_FIXEDMAP))
        return datafile_resize(env, size); /* in place within the reservation, else moved */
    /* FIXEDMAP past its reservation: map again, at the same address if it is free */
    void *old = env->map;
    datafile_unmap(env);
    env->mapsize = size;
    if ((env->flags & MDB_WRITEMAP) && !(env->flags & MDB_RDONLY)) {
        off_t sz;
        int rc = os_current->fsize(env->data_fd, &sz);
        if (!rc && (size_t)sz < size)
            rc = os_current->ftruncate(env->data_fd, (off_t)size);
        if (rc)
            return rc;
    }
    int rc = datafile_map(env, old);
    if (rc == EBUSY)
        rc = datafile_map(env, NULL);
    return rc;
}

int env_reader_check(MDB_env *env, int *dead)
{
    if (!env->lock) {
        if (dead)
            *dead = 0;
        return 0;
    }
    return readers_check(env->lock, env->pid, dead);
}
