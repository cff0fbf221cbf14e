/*
 * os.h -- the engine's only door to the operating system for file I/O and mapping
 * (layer L0).  Every read, write, sync, truncate and map call of the engine goes through
 * the table `os_current`, so a test build can fail the Nth call, record writes and syncs,
 * or drop unsynced writes (os_fault.c) without any #ifdef in engine code.
 *
 * Conventions: every function returns 0 on success or a positive errno value.
 * pwrite/pwritev write everything or fail (short writes are retried inside).
 * pread reports the byte count actually read in *got (a short read is not an error).
 */
#ifndef MDBCORE_OS_H
#define MDBCORE_OS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct os_ops {
    int (*open)(const char *path, int flags, mode_t mode, int *fd_out);
    int (*close)(int fd);
    int (*pread)(int fd, void *buf, size_t len, off_t off, size_t *got);
    int (*pwrite)(int fd, const void *buf, size_t len, off_t off);
    int (*pwritev)(int fd, const struct iovec *iov, int iovcnt, off_t off);
    int (*fsync)(int fd);
    int (*fdatasync)(int fd);
    int (*ftruncate)(int fd, off_t len);
    int (*fsize)(int fd, off_t *size_out);
    int (*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out);
    int (*munmap)(void *addr, size_t len);
    int (*msync)(void *addr, size_t len, int flags);
    int (*madvise)(void *addr, size_t len, int advice);
} os_ops;

/* The table in force; os_posix.c defines the default. */
extern const os_ops *os_current;
extern const os_ops os_posix_ops;

/* Non-I/O services that need no fault seam. */
unsigned os_page_size(void);
int os_fcntl_lock(int fd, int cmd, short type, off_t off, off_t len); /* 0 or errno */
int os_fcntl_getlk_pid(int fd, off_t off, off_t len, int *locked);   /* *locked=1 if another process holds it */

#endif
