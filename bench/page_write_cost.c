/*
 * page_write_cost.c -- what one pwrite of a database page costs in the kernel, depending on
 * how the file's page cache was filled (docs/performance.md, "Page cache folios").  No
 * engine is involved: it isolates the cost every engine of this design pays at commit.
 *
 *   page_write_cost FILE [MIB] [WRITES]
 *
 * For each fill size (4 KiB, 64 KiB, 1 MiB) the file (MIB MiB, 256 by default) is
 * removed, written once from start to end in pieces of that size, and then WRITES
 * (20,000 by default) random page-aligned pieces of 4 KiB and of 64 KiB are written
 * again.  Prints microseconds per rewrite and per 4 KiB.  On Linux 6.x ext4 a large
 * write leaves large folios in the page cache, and each later write into a folio walks
 * all of the folio's buffers: the 4 KiB rewrite costs follow the fill size.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int write_all(int fd, const char *buf, size_t len, off_t off)
{
    while (len) {
        ssize_t n = pwrite(fd, buf, len, off);
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: page_write_cost FILE [MIB] [WRITES]\n");
        return 2;
    }
    const char *path = argv[1];
    size_t size = (size_t)(argc > 2 ? atol(argv[2]) : 256) << 20;
    long writes = argc > 3 ? atol(argv[3]) : 20000;
    const size_t fills[] = {4096, 65536, 1 << 20}, rewrites[] = {4096, 65536};
    char *buf = aligned_alloc(4096, 1 << 20);
    if (!buf || size < (1 << 20) || writes < 1) {
        fprintf(stderr, "page_write_cost: bad arguments\n");
        return 2;
    }
    memset(buf, 'x', 1 << 20);
    printf("%-10s %-10s %14s %14s\n", "filled by", "rewrite", "us/rewrite", "us per 4 KiB");
    for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++)
        for (size_t w = 0; w < sizeof rewrites / sizeof rewrites[0]; w++) {
            unlink(path);
            int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) {
                perror(path);
                return 1;
            }
            for (size_t off = 0; off < size; off += fills[f])
                if (write_all(fd, buf, fills[f], (off_t)off)) {
                    perror("pwrite");
                    return 1;
                }
            unsigned long long x = 88172645463325252ULL;
            size_t slots = size / rewrites[w];
            double t0 = now();
            for (long i = 0; i < writes; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                if (write_all(fd, buf, rewrites[w], (off_t)((x % slots) * rewrites[w]))) {
                    perror("pwrite");
                    return 1;
                }
            }
            double us = (now() - t0) / (double)writes * 1e6;
            printf("%-10zu %-10zu %14.2f %14.2f\n", fills[f], rewrites[w], us,
                   us / (double)(rewrites[w] / 4096));
            close(fd);
            unlink(path);
        }
    free(buf);
    return 0;
}
