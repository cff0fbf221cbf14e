/*
 * copy.c -- env_copy (layer L6): a consistent backup of the current snapshot.
 * Plain mode: under the writer mutex, begin a read txn and take the two meta pages from
 * the map (no commit can run, so they match the snapshot); then release the mutex and
 * stream pages 2..next_pgno-1 from the map while the read txn pins them.  Free pages are
 * copied as they are.  MDB_CP_COMPACT is not implemented yet (EINVAL).
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

int env_copyfd(MDB_env *env, int fd, unsigned flags)
{
    if (flags & MDB_CP_COMPACT)
        return EINVAL;
    if (flags)
        return EINVAL;
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
        memcpy(metas, env->map, psize * 2);
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
            rc = write_all(fd, env->map + off, chunk);
            off += chunk;
        }
    }
    txn_abort(txn);
    return rc;
}

int env_copy_path(MDB_env *env, const char *path, unsigned flags)
{
    if (flags)
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
