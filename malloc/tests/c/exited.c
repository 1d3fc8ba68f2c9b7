/* Memory of exited threads: many short-lived threads each allocate a batch
 * of blocks (small, medium and one large) and exit; another thread frees
 * every batch only after its thread has exited. Nothing is leaked, so the
 * allocator must reuse or release what the exited threads' heaps got back:
 * prints the peak and final resident set (VmHWM, VmRSS) for the caller to
 * compare with the system allocator's.
 * Usage: exited [threads=100000] [at once=4] */
#include "keel_test.h"

#include <pthread.h>

#define BLOCKS 24

struct batch {
    void *p[BLOCKS];
    size_t n[BLOCKS];
    uint64_t seed;
};

static void *worker(void *arg) {
    struct batch *b = arg;
    uint64_t r = b->seed;
    for (int i = 0; i < BLOCKS; i++) {
        uint64_t x = rng_next(&r);
        size_t n = i == 0 ? 300000 : i < 4 ? 8192 + x % 60000 : 16 + x % 2000;
        char *p = malloc(n);
        CHECK(p != NULL);
        memset(p, (int)(b->seed & 0xff), n);
        b->p[i] = p;
        b->n[i] = n;
    }
    return NULL;
}

/* The freer: frees batches handed over through a small ring. */
#define RING 8
static struct batch *ring[RING];
static long head, tail;
static int done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *freer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (head == tail && !done)
            pthread_cond_wait(&cv, &lock);
        if (head == tail && done) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        struct batch *b = ring[tail % RING];
        tail++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < BLOCKS; i++) {
            unsigned char *p = b->p[i];
            CHECK(p[0] == (unsigned char)(b->seed & 0xff) &&
                  p[b->n[i] - 1] == (unsigned char)(b->seed & 0xff));
            free(p);
        }
        free(b);
    }
}

static void hand_over(struct batch *b) {
    pthread_mutex_lock(&lock);
    while (head - tail == RING)
        pthread_cond_wait(&cv, &lock);
    ring[head % RING] = b;
    head++;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
}

static long status_kib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    long v = -1;
    size_t k = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, k) == 0)
            v = atol(line + k);
    fclose(f);
    return v;
}

int main(int argc, char **argv) {
    long threads = argc > 1 ? atol(argv[1]) : 100000;
    int at_once = argc > 2 ? atoi(argv[2]) : 4;
    CHECK(threads > 0 && at_once > 0 && at_once <= 64);
    print_allocator();
    pthread_t f;
    CHECK(pthread_create(&f, NULL, freer, NULL) == 0);
    for (long t = 0; t < threads; t += at_once) {
        pthread_t th[64];
        struct batch *b[64];
        int n = (int)(threads - t < at_once ? threads - t : at_once);
        for (int i = 0; i < n; i++) {
            b[i] = calloc(1, sizeof *b[i]);
            CHECK(b[i] != NULL);
            b[i]->seed = (uint64_t)(t + i) * 7919 + 1;
            CHECK(pthread_create(&th[i], NULL, worker, b[i]) == 0);
        }
        for (int i = 0; i < n; i++) {
            CHECK(pthread_join(th[i], NULL) == 0);
            hand_over(b[i]); /* freed only now that its thread has exited */
        }
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
    CHECK(pthread_join(f, NULL) == 0);
    printf("exited: %ld threads, peak %ld KiB, final %ld KiB\n", threads,
           status_kib("VmHWM:"), status_kib("VmRSS:"));
    printf("exited: ok\n");
    return 0;
}
