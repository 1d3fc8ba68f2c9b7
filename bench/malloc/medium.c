/* Medium blocks: each thread keeps `live` blocks of 16 .. 256 KiB (the
 * buffers of a parser or a hash table's overflow pages), replacing a random
 * one per operation and writing its first byte. With thousands live, the
 * block a free gets is long untouched: what is measured is the allocator's
 * medium path and how much of a cold block it reads, not bandwidth.
 * Usage: medium [threads=2] [ops per thread=1000000] [live=2000] */
#include "bench.h"

static long ops, live;

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(intptr_t)arg;
    char **b = calloc((size_t)live, sizeof(char *));
    DIE_IF(b == NULL);
    for (long i = 0; i < ops; i++) {
        uint64_t r = rng_next(&rng);
        long k = (long)(r % (uint64_t)live);
        free(b[k]);
        size_t sz = ((size_t)16 << 10) + (r >> 20) % ((size_t)240 << 10);
        char *p = malloc(sz);
        DIE_IF(p == NULL);
        p[0] = 1;
        b[k] = p;
    }
    for (long k = 0; k < live; k++)
        free(b[k]);
    free(b);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = (int)arg_or(argc, argv, 1, 2);
    ops = arg_or(argc, argv, 2, 1000000);
    live = arg_or(argc, argv, 3, 2000);
    DIE_IF(threads < 1 || ops < 0 || live < 1);
    pthread_t th[threads];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        DIE_IF(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(i + 5)) != 0);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    printf("result seconds %.4f\n", now_s() - t0);
    return 0;
}
