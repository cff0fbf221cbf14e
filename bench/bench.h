/*
 * bench.h -- what the C benchmarks of bench/ share: die(), CHECK(call), now() and
 * splitmix() (the random order every benchmark draws from a seed).
 *
 * Define BENCH_NAME (the program's name, which starts every error message) and, when a
 * failing call should not exit 1, BENCH_EXIT before including it, after lmdb.h.
 */
#ifndef MDB_BENCH_H
#define MDB_BENCH_H

#include <stdint.h>
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

/* the next value of the splitmix64 sequence of state *s (inline: not every program uses it) */
static inline uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif
