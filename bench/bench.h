/*
 * bench.h -- what the C benchmarks written against lmdb.h alone share (catalogue.c,
 * core_ops.c).  Define BENCH_NAME (the program's name, for messages) before including it.
 *   die(what, rc)   print "BENCH_NAME: what: mdb_strerror(rc)" ("failed" for rc 0), exit 2
 *   CHECK(call)     the call must return 0, else die with its text and code
 *   now()           CLOCK_MONOTONIC in seconds
 * Exit status 2 on any error: the figures a benchmark prints are of real work only.
 */
#ifndef MDB_BENCH_H
#define MDB_BENCH_H

#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef BENCH_NAME
#error "define BENCH_NAME before including bench.h"
#endif

__attribute__((noreturn)) static inline void die(const char *what, int rc)
{
    fprintf(stderr, "%s: %s: %s\n", BENCH_NAME, what, rc ? mdb_strerror(rc) : "failed");
    exit(2);
}

#define CHECK(call)                 \
    do {                            \
        int rc_ = (call);           \
        if (rc_)                    \
            die(#call, rc_);        \
    } while (0)

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#endif
