/* Larson-style server churn (Larson & Krishnan, "Memory allocation for
 * long-running server applications"): each thread owns an array of live
 * blocks and repeatedly frees a random one and allocates a new random size in
 * its place; at the end of a round its array passes to a fresh thread, so the
 * next generation frees what an exited thread allocated.
 * Usage: larson [threads=2] [rounds=40] [ops per round=50000] [slots=2000]
 *               [min=16] [max=1000] */
#include "bench.h"

/* Each thread writes its lineage's rng at every operation, and reads its
 * slots pointer: lineages two lines apart (the adjacent-line prefetcher
 * fetches pairs), or the threads share a line of the program's own data and
 * the figure measures that line's traffic. Packed at 56 bytes, on a 2-core
 * Intel guest, keel's throughput was 0.73x mimalloc's; padded, 1.40x
 * (bench/results/2026-12-07-malloc-larson-padding-intel.md). */
struct lineage {
    void **slots;
    long slots_n, ops, min, max;
    uint64_t rng;
} __attribute__((aligned(128)));

static void *round_worker(void *arg) {
    struct lineage *l = arg;
    for (long i = 0; i < l->ops; i++) {
        uint64_t r = rng_next(&l->rng);
        long k = (long)(r % (uint64_t)l->slots_n);
        free(l->slots[k]);
        size_t sz = (size_t)l->min + (r >> 32) % (uint64_t)(l->max - l->min + 1);
        char *p = malloc(sz);
        DIE_IF(p == NULL);
        p[0] = (char)k; /* first and last byte, as a server fills a header */
        p[sz - 1] = (char)k;
        l->slots[k] = p;
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = (int)arg_or(argc, argv, 1, 2);
    long rounds = arg_or(argc, argv, 2, 40);
    long ops = arg_or(argc, argv, 3, 50000);
    long slots = arg_or(argc, argv, 4, 2000);
    long min = arg_or(argc, argv, 5, 16), max = arg_or(argc, argv, 6, 1000);
    DIE_IF(threads < 1 || min < 1 || max < min || slots < 1);
    struct lineage *ls = calloc((size_t)threads, sizeof *ls);
    DIE_IF(ls == NULL);
    for (int t = 0; t < threads; t++) {
        ls[t] = (struct lineage){calloc((size_t)slots, sizeof(void *)), slots, ops, min, max,
                                 4141u + (uint64_t)t};
        DIE_IF(ls[t].slots == NULL);
        for (long k = 0; k < slots; k++) {
            ls[t].slots[k] = malloc((size_t)min + (size_t)k % (size_t)(max - min + 1));
            DIE_IF(ls[t].slots[k] == NULL);
        }
    }
    double t0 = now_s();
    for (long r = 0; r < rounds; r++) {
        pthread_t th[threads];
        for (int t = 0; t < threads; t++)
            DIE_IF(pthread_create(&th[t], NULL, round_worker, &ls[t]) != 0);
        for (int t = 0; t < threads; t++)
            pthread_join(th[t], NULL);
    }
    double dt = now_s() - t0;
    for (int t = 0; t < threads; t++) {
        for (long k = 0; k < slots; k++)
            free(ls[t].slots[k]);
        free(ls[t].slots);
    }
    free(ls);
    printf("result ops_per_sec %.0f\n", (double)threads * (double)rounds * (double)ops / dt);
    return 0;
}
