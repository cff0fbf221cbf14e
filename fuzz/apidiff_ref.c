/*
 * apidiff_ref.c -- the reference side of fuzz_apidiff: the lmdbdiff workload (the same
 * source, tests/c/diff/tools/lmdbdiff.c, with decisions read from input bytes) built
 * against upstream LMDB 0.9.36 (tests/c/ref/lmdb0936.sh; never committed), as a server.
 *
 * Protocol on stdin/stdout, one request at a time:
 *   request:  u32 length, then that many input bytes
 *   reply:    i32 status (0: ran to its end; 3: a fatal error; 128+N: killed by signal N),
 *             u32 length, then the transcript
 * Each request runs in a forked child in a fresh directory, so a crash of LMDB (0.9.36
 * crashes on some cursor sequences) costs one reply, not the server.
 *   apidiff_ref WORKDIR
 */
#define LMDBDIFF_EMBED 1
#include "../tests/c/diff/tools/lmdbdiff.c"
#undef main
#undef printf
#undef putchar

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz_common.h"

static int read_full(int fd, void *buf, size_t n)
{
    return fuzz_io_full(fd, buf, n, 0);
}

static int write_full(int fd, const void *buf, size_t n)
{
    return fuzz_io_full(fd, (void *)buf, n, 1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: apidiff_ref WORKDIR\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/ref", argv[1]);
    mkdir(argv[1], 0755);
    mkdir(dir, 0755);
    for (;;) {
        uint32_t len;
        if (read_full(0, &len, 4) != 0)
            return 0;
        unsigned char *in = malloc(len ? len : 1);
        if (!in || read_full(0, in, len) != 0)
            return 1;
        snprintf(path, sizeof path, "%s/data.mdb", dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/lock.mdb", dir);
        unlink(path);
        snprintf(path, sizeof path, "%s/db", dir); /* MDB_NOSUBDIR */
        unlink(path);
        snprintf(path, sizeof path, "%s/db-lock", dir);
        unlink(path);
        int pfd[2];
        if (pipe(pfd) != 0)
            return 1;
        pid_t pid = fork();
        if (pid == 0) {
            close(pfd[0]);
            feed = in;
            feed_len = len;
            feed_pos = 0;
            tout = fdopen(pfd[1], "w");
            char *args[] = {"lmdbdiff", dir, NULL};
            if (setjmp(fatal_jmp)) {
                fflush(tout);
                _exit(3);
            }
            lmdbdiff_main(2, args);
            fflush(tout);
            _exit(0);
        }
        close(pfd[1]);
        size_t cap = 1 << 16, n = 0;
        char *out = malloc(cap);
        for (;;) {
            if (n == cap)
                out = realloc(out, cap *= 2);
            ssize_t r = read(pfd[0], out + n, cap - n);
            if (r <= 0)
                break;
            n += (size_t)r;
        }
        close(pfd[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        int32_t status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        uint32_t olen = (uint32_t)n;
        if (write_full(1, &status, 4) || write_full(1, &olen, 4) || write_full(1, out, n))
            return 0;
        free(out);
        free(in);
    }
}
