/* Large blocks: each thread keeps up to 4 live blocks of 256 KiB .. 32 MiB
 * (log-uniform sizes), replacing a random one per operation and writing one
 * byte per page of its first 1 MiB and its last byte (the part a program
 * typically fills first), so the cost measured is the allocator's mapping,
 * reuse and zeroing policy rather than memory bandwidth.
 * Usage: large [threads=2] [ops per thread=3000] */
#include "bench.h"

static long ops;

static void *worker(void *arg) {
    uint64_t rng = (uint64_t)(intptr_t)arg;
    void *live[4] = {0};
    for (long i = 0; i < ops; i++) {
        uint64_t r = rng_next(&rng);
        int k = (int)(r & 3);
        free(live[k]);
        size_t sz = (size_t)256 << 10 << ((r >> 8) % 8); /* 256 KiB .. 32 MiB */
        sz += (r >> 16) % sz;
        sz /= 2;
        char *p = malloc(sz);
        DIE_IF(p == NULL);
        touch_pages(p, sz < (1u << 20) ? sz : (1u << 20));
        p[sz - 1] = 1;
        live[k] = p;
    }
    for (int k = 0; k < 4; k++)
        free(live[k]);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = (int)arg_or(argc, argv, 1, 2);
    ops = arg_or(argc, argv, 2, 3000);
    DIE_IF(threads < 1);
    pthread_t th[threads];
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        DIE_IF(pthread_create(&th[i], NULL, worker, (void *)(intptr_t)(i + 3)) != 0);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    printf("result seconds %.4f\n", now_s() - t0);
    return 0;
}
