/*
 * fuzz_common.h -- what the libFuzzer harnesses of fuzz/ share: where a process keeps its
 * files, and reading or writing all of a buffer.
 */
#ifndef MDB_FUZZ_COMMON_H
#define MDB_FUZZ_COMMON_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The folder for a fuzzer process's files: $MDB_FUZZ_TMP, else /dev/shm when writable,
 * else /tmp; with "%s/mdbfuzz-NAME-PID" + suffix written to out. */
static inline void fuzz_work_path(char *out, size_t outlen, const char *name, const char *suffix)
{
    const char *base = getenv("MDB_FUZZ_TMP");
    if (!base)
        base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(out, outlen, "%s/mdbfuzz-%s-%ld%s", base, name, (long)getpid(), suffix);
}

/* All n bytes read from fd into buf (writing 0) or written from it (writing 1); -1 on an
 * error or an early end. */
static inline int fuzz_io_full(int fd, void *buf, size_t n, int writing)
{
    char *p = buf;
    while (n) {
        ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* path := the len bytes at buf (created 0600, truncated); 0, or -1 on any error. */
static inline int fuzz_write_file(const char *path, const void *buf, size_t len)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    int rc = fuzz_io_full(fd, (void *)buf, len, 1);
    close(fd);
    return rc;
}

#endif
