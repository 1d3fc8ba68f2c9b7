/* The repeated-query workload of an analytical engine: every iteration
 * allocates a few column buffers of 8..64 MiB and many small objects, writes
 * every page of the columns and each small object, then frees everything, and
 * the next iteration does it again. An allocator that returns the column
 * pages to the OS on free (or re-maps them) pays a page fault per page per
 * iteration; one that keeps them pays none. With `cross` the frees are done
 * by a second thread (the allocating thread hands everything over and waits),
 * as when worker threads free a query's results.
 * Usage: query [iterations=200] [columns=2] [small objects=20000] [cross=0] */
#include "bench.h"

#include <sys/resource.h>

static void **ptrs;
static long nptrs;
static int have_work, quit;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void free_all(void) {
    for (long i = 0; i < nptrs; i++)
        free(ptrs[i]);
}

static void *freer(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!have_work && !quit)
            pthread_cond_wait(&cv, &lock);
        if (quit)
            break;
        free_all();
        have_work = 0;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static long minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

int main(int argc, char **argv) {
    long iters = arg_or(argc, argv, 1, 200);
    long columns = arg_or(argc, argv, 2, 2);
    long smalls = arg_or(argc, argv, 3, 20000);
    int cross = (int)arg_or(argc, argv, 4, 0);
    DIE_IF(iters < 1 || columns < 1 || smalls < 0);
    ptrs = malloc((size_t)(columns + smalls) * sizeof *ptrs);
    DIE_IF(ptrs == NULL);
    pthread_t th;
    if (cross)
        DIE_IF(pthread_create(&th, NULL, freer, NULL) != 0);
    uint64_t rng = 2024;
    long warm = iters / 10, faults_warm = 0;
    double t0 = now_s(), t_warm = t0;
    for (long it = 0; it < iters; it++) {
        if (it == warm) {
            faults_warm = minflt();
            t_warm = now_s();
        }
        nptrs = 0;
        for (long c = 0; c < columns; c++) {
            size_t mib = 8 + rng_next(&rng) % 57; /* 8 .. 64 MiB */
            size_t sz = (mib << 20) - (rng_next(&rng) % 4096);
            char *p = malloc(sz);
            DIE_IF(p == NULL);
            touch_pages(p, sz);
            ptrs[nptrs++] = p;
        }
        for (long s = 0; s < smalls; s++) {
            size_t sz = 16 + rng_next(&rng) % 241;
            char *p = malloc(sz);
            DIE_IF(p == NULL);
            memset(p, (int)s, sz);
            ptrs[nptrs++] = p;
        }
        if (cross) {
            pthread_mutex_lock(&lock);
            have_work = 1;
            pthread_cond_broadcast(&cv);
            while (have_work)
                pthread_cond_wait(&cv, &lock);
            pthread_mutex_unlock(&lock);
        } else {
            free_all();
        }
    }
    double t_end = now_s();
    long faults_end = minflt();
    if (cross) {
        pthread_mutex_lock(&lock);
        quit = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&lock);
        pthread_join(th, NULL);
    }
    free(ptrs);
    long steady = iters - warm;
    fprintf(stderr, "steady state: %.3f ms/iteration, %.0f minor faults/iteration\n",
            (t_end - t_warm) * 1e3 / (double)steady,
            (double)(faults_end - faults_warm) / (double)steady);
    printf("result seconds %.4f\n", t_end - t0);
    return 0;
}
