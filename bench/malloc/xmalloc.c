/* xmalloc-style producer/consumer (after Lever & Boreham's xmalloc-test):
 * producer threads allocate small objects in batches and hand each batch to
 * consumer threads through a bounded queue; consumers free every object, so
 * every free crosses threads.
 * Usage: xmalloc [producers=1] [consumers=1] [objects=6000000] [batch=256] */
#include "bench.h"

#define QCAP 64

static void **queue[QCAP];
static int qhead, qlen, producers_left;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qnot_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t qnot_full = PTHREAD_COND_INITIALIZER;
static long per_producer, batch;

static void push(void **b) {
    pthread_mutex_lock(&qlock);
    while (qlen == QCAP)
        pthread_cond_wait(&qnot_full, &qlock);
    queue[(qhead + qlen++) % QCAP] = b;
    pthread_cond_signal(&qnot_empty);
    pthread_mutex_unlock(&qlock);
}

static void **pop(void) {
    pthread_mutex_lock(&qlock);
    while (qlen == 0 && producers_left > 0)
        pthread_cond_wait(&qnot_empty, &qlock);
    void **b = NULL;
    if (qlen > 0) {
        b = queue[qhead];
        qhead = (qhead + 1) % QCAP;
        qlen--;
        pthread_cond_signal(&qnot_full);
    }
    pthread_mutex_unlock(&qlock);
    return b;
}

static void *producer(void *arg) {
    uint64_t rng = (uint64_t)(intptr_t)arg;
    for (long done = 0; done < per_producer; done += batch) {
        void **b = malloc((size_t)batch * sizeof *b);
        DIE_IF(b == NULL);
        for (long i = 0; i < batch; i++) {
            size_t sz = 16 + rng_next(&rng) % 113;
            char *p = malloc(sz);
            DIE_IF(p == NULL);
            p[0] = 1;
            b[i] = p;
        }
        push(b);
    }
    pthread_mutex_lock(&qlock);
    producers_left--;
    pthread_cond_broadcast(&qnot_empty);
    pthread_mutex_unlock(&qlock);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    void **b;
    while ((b = pop()) != NULL) {
        for (long i = 0; i < batch; i++)
            free(b[i]);
        free(b);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int np = (int)arg_or(argc, argv, 1, 1), nc = (int)arg_or(argc, argv, 2, 1);
    long objects = arg_or(argc, argv, 3, 6000000);
    batch = arg_or(argc, argv, 4, 256);
    DIE_IF(np < 1 || nc < 1 || batch < 1);
    per_producer = objects / np;
    producers_left = np;
    pthread_t p[np], c[nc];
    double t0 = now_s();
    for (int i = 0; i < nc; i++)
        DIE_IF(pthread_create(&c[i], NULL, consumer, NULL) != 0);
    for (int i = 0; i < np; i++)
        DIE_IF(pthread_create(&p[i], NULL, producer, (void *)(intptr_t)(i + 1)) != 0);
    for (int i = 0; i < np; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < nc; i++)
        pthread_join(c[i], NULL);
    double dt = now_s() - t0;
    long produced = (per_producer + batch - 1) / batch * batch * np;
    printf("result ops_per_sec %.0f\n", (double)produced / dt);
    return 0;
}
