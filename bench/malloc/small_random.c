/* Many small objects with random lifetimes: each thread keeps a large table
 * of live objects (sizes skewed small, 8..1024 bytes) and replaces a random
 * entry per operation, so objects die at random ages and the heap stays
 * fragmented.
 * Usage: small_random [threads=2] [ops per thread=2000000] [live=200000] */
#include "bench.h"

static long ops, live;

static size_t skewed(uint64_t r) {
    /* 1/2 in 8..64, 1/4 in 64..256, 1/4 in 256..1024 */
    switch (r & 3) {
    case 0:
    case 1: return 8 + (r >> 8) % 57;
    case 2: return 64 + (r >> 8) % 193;
    default: return 256 + (r >> 8) % 769;
    }
}

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(intptr_t)arg;
    void **t = calloc((size_t)live, sizeof *t);
    DIE_IF(t == NULL);
    for (long i = 0; i < ops; i++) {
        uint64_t r = rng_next(&rng);
        long k = (long)((r >> 32) % (uint64_t)live);
        free(t[k]);
        size_t sz = skewed(r);
        char *p = malloc(sz);
        DIE_IF(p == NULL);
        p[0] = (char)i;
        t[k] = p;
    }
    for (long k = 0; k < live; k++)
        free(t[k]);
    free(t);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = (int)arg_or(argc, argv, 1, 2);
    ops = arg_or(argc, argv, 2, 2000000);
    live = arg_or(argc, argv, 3, 200000);
    DIE_IF(threads < 1 || live < 1);
    pthread_t th[threads];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        DIE_IF(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(i + 7)) != 0);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    printf("result seconds %.4f\n", now_s() - t0);
    return 0;
}
