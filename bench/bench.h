/*
 * bench.h -- what the C benchmarks of bench/ share: die(), CHECK(call) and now().
 *
 * Define BENCH_NAME (the program's name, which starts every error message) and, when a
 * failing call should not exit 1, BENCH_EXIT before including it, after lmdb.h.
 */
#ifndef MDB_BENCH_H
#define MDB_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef BENCH_EXIT
#define BENCH_EXIT 1
#endif

/* "NAME: what: the engine's message" (rc 0: "failed"), then exit BENCH_EXIT. */
static void die(const char *what, int rc)
{
    fprintf(stderr, "%s: %s: %s\n", BENCH_NAME, what, rc ? mdb_strerror(rc) : "failed");
    exit(BENCH_EXIT);
}

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int rc_ = (call);                                                                  \
        if (rc_)                                                                           \
            die(#call, rc_);                                                               \
    } while (0)

/* seconds, CLOCK_MONOTONIC */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
