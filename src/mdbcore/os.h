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
    /* Copy len bytes of src to offset off of a writable MAP_SHARED map of fd (map maps
     * the file from offset 0): a write into the page cache without a system call.  The
     * caller has made sure the file's blocks there exist (no hole), so the copy neither
     * allocates nor faults past the end of the file; fd is for the fault seam's log. */
    int (*map_write)(int fd, void *map, const void *src, size_t len, off_t off);
} os_ops;

/* The table in force; os_posix.c defines the default. */
extern const os_ops *os_current;
extern const os_ops os_posix_ops;

/* Arm the fault seam from the MDBCORE_FAULT environment variable (os_fault.c).  Only test
 * builds call it (testlib/fault_env.c); the production library leaves the seam inert. */
void fault_arm_from_env(void);

/* Non-I/O services that need no fault seam. */
unsigned os_page_size(void);
int os_fcntl_lock(int fd, int cmd, short type, off_t off, off_t len); /* 0 or errno */
int os_fcntl_getlk_pid(int fd, off_t off, off_t len, int *locked);   /* *locked=1 if another process holds it */

/* ---- Added by the os/lockfile owner (additions only; the declarations above are unchanged).
 * Small named helpers so engine files need no <fcntl.h>/<sys/mman.h> of their own. ---- */
#include <stdint.h>

/* os_open_file `how` bits; the file is always opened close-on-exec, through os_current. */
#define OS_OPEN_RDONLY 0x0u
#define OS_OPEN_RDWR 0x1u
#define OS_OPEN_CREATE 0x2u  /* O_CREAT */
#define OS_OPEN_DSYNC 0x4u   /* O_DSYNC: each write is durable when it returns */
#define OS_OPEN_EXCL 0x8u    /* O_EXCL (with CREATE) */
#define OS_OPEN_DIRECT 0x10u /* O_DIRECT; callers must be ready for EINVAL */
int os_open_file(const char *path, unsigned how, mode_t mode, int *fd_out);

/* Map `len` bytes of `fd` from `off`, MAP_SHARED, read-only or read-write, through
 * os_current->mmap.  addr_hint is a hint only (NULL: anywhere). */
int os_map_file(int fd, size_t len, off_t off, int writable, void *addr_hint, void **out);

/* Advisory fcntl byte-range locks (owned by the process, dropped by any close of the file).
 * kind: OS_LOCK_UNLOCK / OS_LOCK_SHARED / OS_LOCK_EXCL; wait != 0 blocks (F_SETLKW).
 * Returns 0, EAGAIN when another process holds a conflicting lock (EACCES is folded into
 * EAGAIN), or another errno. */
#define OS_LOCK_UNLOCK 0
#define OS_LOCK_SHARED 1
#define OS_LOCK_EXCL 2
int os_lock(int fd, int kind, int wait, off_t off, off_t len);

/* Writing into a shared map of the file instead of with pwrite (datafile_write_map):
 * os_fs_overwrites_in_place says whether the file's filesystem rewrites a block where it
 * lies (ext4, tmpfs), so that storing into a map page that has its blocks allocates
 * nothing and cannot fail for want of space (a copy-on-write filesystem would, with a
 * SIGBUS); os_first_hole gives the offset of the first hole at or after `from` (the file
 * size when there is none), 0 or an errno; os_physical_memory is the machine's RAM in
 * bytes (0 if unknown). */
int os_fs_overwrites_in_place(int fd);
int os_first_hole(int fd, uint64_t from, uint64_t *hole);
uint64_t os_physical_memory(void);

/* Identity of an open file (st_dev, st_ino) and whether it was opened O_DSYNC/O_SYNC.
 * Any out pointer may be NULL.  Used by the fault seam's write log. */
int os_file_identity(int fd, uint64_t *dev, uint64_t *ino, int *dsync);

/* Whether a thread id names a live thread of some process (0 does not).  A thread we may
 * not signal still exists. */
int os_thread_exists(int tid);
/* The calling thread's id (gettid). */
int os_thread_self(void);

#endif
