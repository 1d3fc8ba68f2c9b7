/* cache-scratch (from the Hoard suite): the main thread allocates one small
 * object per thread, back to back; each thread frees its object, then
 * repeatedly allocates an object of the same size, writes it many times and
 * frees it. An allocator that hands a thread memory sharing a cache line with
 * another thread's (passive false sharing) makes the writes crawl.
 * Usage: cache_scratch [threads=2] [iterations=1500] [objsize=8] [writes=5000] */
#include "bench.h"

static long iterations, objsize, writes;

static void *worker(void *arg) {
    free(arg);
    for (long i = 0; i < iterations; i++) {
        volatile char *p = malloc((size_t)objsize);
        DIE_IF(p == NULL);
        for (long w = 0; w < writes; w++)
            for (long k = 0; k < objsize; k++)
                p[k] = (char)(p[k] + w);
        free((void *)p);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int threads = (int)arg_or(argc, argv, 1, 2);
    iterations = arg_or(argc, argv, 2, 1500);
    objsize = arg_or(argc, argv, 3, 8);
    writes = arg_or(argc, argv, 4, 5000);
    DIE_IF(threads < 1 || objsize < 1);
    pthread_t th[threads];
    void *objs[threads];
    for (int i = 0; i < threads; i++) {
        objs[i] = malloc((size_t)objsize);
        DIE_IF(objs[i] == NULL);
    }
    double t0 = now_s();
    for (int i = 0; i < threads; i++)
        DIE_IF(pthread_create(&th[i], NULL, worker, objs[i]) != 0);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    printf("result seconds %.4f\n", now_s() - t0);
    return 0;
}
