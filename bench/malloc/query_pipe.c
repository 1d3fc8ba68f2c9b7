/* The repeated query of query.c as a two-stage pipeline: the producer (the
 * main thread) allocates query k+1 while the consumer thread reads and frees
 * query k, through a queue of depth 2 (at most two queries live: the one
 * being built and the one being freed), so every block is freed on the
 * other thread and the allocator sees allocation and free at once.
 *
 * After the loop the program idles for `idle_ms`, as a service between
 * queries does: the main thread wakes every 10 ms and allocates and frees
 * one small message (idle=1), or sleeps through it (idle=0). It prints the
 * loop's time, the peak of the bytes it held (requested: the floor of any
 * allocator's peak RSS for the interleaving the run had), its peak RSS
 * (VmHWM), the RSS when the loop ends and the RSS after the idle time, read
 * from /proc/self/status.
 *
 * Usage: query_pipe [iterations=200] [columns=2] [small objects=20000]
 *                   [idle_ms=1000] [idle=1] */
#include "bench.h"

#include <sys/resource.h>
#include <unistd.h>

struct query {
    void **ptrs;
    long n;
    long bytes; /* requested */
    int full;   /* built, waiting for the consumer */
};

static struct query slot[2];
static long columns, smalls;
static int quit;
static volatile long sink;
/* Bytes the program holds (requested), and their peak: the floor of any
 * allocator's peak RSS for the interleaving this run had. */
static long live, live_peak;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *consumer(void *arg) {
    (void)arg;
    for (long k = 0;; k++) {
        struct query *q = &slot[k & 1];
        pthread_mutex_lock(&lock);
        while (!q->full && !quit)
            pthread_cond_wait(&cv, &lock);
        if (!q->full) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        pthread_mutex_unlock(&lock);
        /* Read one byte of every block, as a consumer of the results. */
        long s = 0;
        for (long i = 0; i < q->n; i++)
            s += *(volatile char *)q->ptrs[i];
        sink += s;
        for (long i = 0; i < q->n; i++)
            free(q->ptrs[i]);
        __atomic_fetch_sub(&live, q->bytes, __ATOMIC_RELAXED);
        pthread_mutex_lock(&lock);
        q->full = 0;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&lock);
    }
}

/* A line of /proc/self/status in KiB (VmRSS, VmHWM). */
static void note_alloc(struct query *q, size_t sz) {
    q->bytes += (long)sz;
    long now = __atomic_add_fetch(&live, (long)sz, __ATOMIC_RELAXED);
    if (now > live_peak)
        live_peak = now;
}

static long status_kib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    DIE_IF(f == NULL);
    char line[256];
    long v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, n) == 0 && line[n] == ':') {
            v = atol(line + n + 1);
            break;
        }
    fclose(f);
    DIE_IF(v < 0);
    return v;
}

int main(int argc, char **argv) {
    long iters = arg_or(argc, argv, 1, 200);
    columns = arg_or(argc, argv, 2, 2);
    smalls = arg_or(argc, argv, 3, 20000);
    long idle_ms = arg_or(argc, argv, 4, 1000);
    int idle_alloc = (int)arg_or(argc, argv, 5, 1);
    DIE_IF(iters < 1 || columns < 1 || smalls < 0 || idle_ms < 0);
    for (int i = 0; i < 2; i++) {
        slot[i].ptrs = malloc((size_t)(columns + smalls) * sizeof(void *));
        DIE_IF(slot[i].ptrs == NULL);
    }
    pthread_t th;
    DIE_IF(pthread_create(&th, NULL, consumer, NULL) != 0);
    uint64_t rng = 2024;
    double t0 = now_s();
    for (long k = 0; k < iters; k++) {
        struct query *q = &slot[k & 1];
        pthread_mutex_lock(&lock);
        while (q->full) /* query k-2 still being freed */
            pthread_cond_wait(&cv, &lock);
        pthread_mutex_unlock(&lock);
        q->n = 0;
        q->bytes = 0;
        for (long c = 0; c < columns; c++) {
            size_t mib = 8 + rng_next(&rng) % 57; /* 8 .. 64 MiB */
            size_t sz = (mib << 20) - (rng_next(&rng) % 4096);
            char *p = malloc(sz);
            DIE_IF(p == NULL);
            note_alloc(q, sz);
            touch_pages(p, sz);
            q->ptrs[q->n++] = p;
        }
        for (long s = 0; s < smalls; s++) {
            size_t sz = 16 + rng_next(&rng) % 241;
            char *p = malloc(sz);
            DIE_IF(p == NULL);
            note_alloc(q, sz);
            memset(p, (int)s, sz);
            q->ptrs[q->n++] = p;
        }
        pthread_mutex_lock(&lock);
        q->full = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    while (slot[0].full || slot[1].full)
        pthread_cond_wait(&cv, &lock);
    quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
    pthread_join(th, NULL);
    double t_end = now_s();
    long hwm = status_kib("VmHWM"), rss_end = status_kib("VmRSS");
    fprintf(stderr, "loop end: %.3f ms/iteration\n", (t_end - t0) * 1e3 / (double)iters);
    for (long t = 0; t < idle_ms; t += 10) {
        usleep(10000);
        if (idle_alloc) {
            char *m = malloc(64);
            DIE_IF(m == NULL);
            memset(m, (int)t, 64);
            sink += m[7];
            free(m);
        }
    }
    long rss_idle = status_kib("VmRSS");
    printf("peak_live_kib %ld\npeak_rss_kib %ld\nend_rss_kib %ld\nidle_rss_kib %ld\n",
           live_peak >> 10, hwm, rss_end, rss_idle);
    printf("result seconds %.4f\n", t_end - t0);
    return 0;
}
