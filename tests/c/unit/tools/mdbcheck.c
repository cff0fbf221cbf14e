/*
 * mdbcheck.c -- check a data.mdb file from its bytes alone, with the structural checker
 * (mdbcore_check_snapshot).  No lock file, no engine: the file is mapped read-only and the
 * newest valid meta (or the one chosen with -m) gives the snapshot.  Works on files written
 * by real LMDB as well as by mdb.
 *
 *   mdbcheck [-m 0|1] [-k] [-q] [-x] PATH     PATH = an environment directory or a data file
 *     -m N   use meta N instead of the newest
 *     -k     skip key-order checks
 *     -x     DUPSORT DBs: record pages must equal own + dup sub-DB pages exactly
 *     -q     print only the problems and the verdict
 * Exit status: 0 clean, 1 problems found, 2 could not check.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mdbcore.h"

static int quiet;

static int out(const char *msg, void *ctx)
{
    (void)ctx;
    if (quiet && strncmp(msg, "  problem", 9) && strncmp(msg, "problems:", 9) &&
        strncmp(msg, "  ...", 5))
        return 0;
    fputs(msg, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    int which = -1, opt;
    unsigned flags = 0;
    while ((opt = getopt(argc, argv, "m:kqx")) != -1) {
        switch (opt) {
        case 'm':
            which = atoi(optarg);
            break;
        case 'k':
            flags |= MDBCORE_CHECK_NO_KEYS;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'x':
            flags |= MDBCORE_CHECK_DUP_PAGES_EXACT;
            break;
        default:
            fprintf(stderr, "usage: mdbcheck [-m 0|1] [-k] [-q] [-x] PATH\n");
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: mdbcheck [-m 0|1] [-k] [-q] [-x] PATH\n");
        return 2;
    }
    const char *path = argv[optind];
    char buf[4096];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(buf, sizeof buf, "%s/data.mdb", path);
        path = buf;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "mdbcheck: %s: %s\n", path, strerror(errno));
        return 2;
    }
    if (st.st_size == 0) {
        fprintf(stderr, "mdbcheck: %s: empty file\n", path);
        return 2;
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        fprintf(stderr, "mdbcheck: mmap %s: %s\n", path, strerror(errno));
        return 2;
    }
    mdbcore_snapshot in;
    memset(&in, 0, sizeof in);
    in.map = map;
    in.map_len = (size_t)st.st_size;
    in.file_size = (uint64_t)st.st_size;
    in.flags = flags;
    int rc = mdbcore_snapshot_from_metas(&in, which);
    if (rc) {
        printf("%s: no usable meta page (%s)\n", path,
               rc == MDB_VERSION_MISMATCH ? "version mismatch" : "not an LMDB file");
        return 1;
    }
    mdbcore_check_report rep;
    rc = mdbcore_check_snapshot(&in, &rep);
    mdbcore_check_report_print(&rep, out, NULL);
    int status = rc == 0 ? 0 : rc == MDB_CORRUPTED ? 1 : 2;
    if (rc == EINVAL)
        status = 1; /* the meta itself is unusable */
    printf("%s: %s\n", path, status == 0 ? "OK" : status == 1 ? "CORRUPT" : "ERROR");
    mdbcore_check_report_free(&rep);
    munmap(map, (size_t)st.st_size);
    close(fd);
    return status;
}
