/* Shared helpers for the allocator stress programs: a seeded generator, a
 * monotonic clock, and the one result line run.sh reads:
 *   result <metric> <value>
 * where <metric> is `seconds` (lower is better) or `ops_per_sec` (higher is
 * better). The programs use only the C allocation API, so any allocator can
 * be preloaded under them. */
#ifndef KEEL_BENCH_H
#define KEEL_BENCH_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIE_IF(cond)                                                       \
    do {                                                                   \
        if (cond) {                                                        \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);     \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

static inline uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline long arg_or(int argc, char **argv, int i, long dflt) {
    return argc > i ? atol(argv[i]) : dflt;
}

/* Writes one byte in every 4 KiB page, as a program that uses its memory. */
static inline void touch_pages(void *p, size_t len) {
    volatile char *c = p;
    for (size_t i = 0; i < len; i += 4096)
        c[i] = (char)i;
    if (len > 0)
        c[len - 1] = 1;
}

#endif
