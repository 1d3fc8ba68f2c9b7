/* Threads allocate and free across each other: a ring where every thread
 * frees what its neighbour allocated (checking contents first), blocks freed
 * after their owner thread exited, and thread churn (many short threads, so a
 * heap allocator abandons and adopts per-thread heaps). */
#include "keel_test.h"

#include <malloc.h>
#include <pthread.h>

#define THREADS 4
#define ROUNDS 600
#define BATCH 32

struct block {
    size_t len;
    uint64_t tag;
    unsigned char data[];
};

/* One mailbox per thread: a mutex-protected stack of batches. */
struct mailbox {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct block **items;
    size_t len, cap;
};

static struct mailbox boxes[THREADS];

static void post(int to, struct block *b) {
    struct mailbox *m = &boxes[to];
    pthread_mutex_lock(&m->lock);
    if (m->len == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->items = realloc(m->items, m->cap * sizeof *m->items);
        CHECK(m->items != NULL);
    }
    m->items[m->len++] = b;
    pthread_cond_signal(&m->ready);
    pthread_mutex_unlock(&m->lock);
}

static struct block *take(int me) {
    struct mailbox *m = &boxes[me];
    pthread_mutex_lock(&m->lock);
    while (m->len == 0)
        pthread_cond_wait(&m->ready, &m->lock);
    struct block *b = m->items[--m->len];
    pthread_mutex_unlock(&m->lock);
    return b;
}

static size_t pick_size(uint64_t *rng) {
    uint64_t r = rng_next(rng);
    switch (r % 16) {
    case 15:
        return 4096 + (r >> 8) % (1 << 20); /* medium and large */
    case 14:
    case 13:
        return 512 + (r >> 8) % 4096;
    default:
        return (r >> 8) % 512;
    }
}

static void *ring_worker(void *arg) {
    int me = (int)(intptr_t)arg;
    int next = (me + 1) % THREADS;
    uint64_t rng = 0x1234 + (uint64_t)me;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BATCH / 4; i++) {
            size_t len = pick_size(&rng);
            struct block *b = malloc(sizeof *b + len);
            CHECK(b != NULL);
            b->len = len;
            b->tag = rng_next(&rng);
            fill(b->data, len, b->tag);
            post(next, b);
        }
        for (int i = 0; i < BATCH / 4; i++) {
            struct block *b = take(me);
            CHECK(malloc_usable_size(b) >= sizeof *b + b->len);
            CHECK(filled(b->data, b->len, b->tag));
            if (i % 3 == 0) { /* realloc a foreign block, then free it */
                b = realloc(b, sizeof *b + b->len + 100);
                CHECK(b != NULL && filled(b->data, b->len, b->tag));
            }
            free(b);
        }
    }
    return NULL;
}

/* Allocates blocks and exits; main frees them after the join. */
static void *leaver(void *arg) {
    void **out = arg;
    for (int i = 0; i < 1000; i++) {
        size_t len = (size_t)(i % 50) * 37 + (i % 100 == 0 ? 300000 : 1);
        out[i] = malloc(len);
        CHECK(out[i] != NULL);
        memset(out[i], i & 0xff, len);
    }
    return NULL;
}

/* A short-lived thread: allocates a little, frees most, leaves one block. */
static void *short_lived(void *arg) {
    void **slot = arg;
    void *tmp[16];
    for (int i = 0; i < 16; i++) {
        tmp[i] = malloc((size_t)(i + 1) * 24);
        CHECK(tmp[i] != NULL);
    }
    for (int i = 1; i < 16; i++)
        free(tmp[i]);
    *slot = tmp[0];
    return NULL;
}

int main(void) {
    print_allocator();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        pthread_mutex_init(&boxes[i].lock, NULL);
        pthread_cond_init(&boxes[i].ready, NULL);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, ring_worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    for (int i = 0; i < THREADS; i++) {
        CHECK(boxes[i].len == 0);
        free(boxes[i].items);
    }

    /* Free after the owner exited, twice, so a second thread may reuse the
     * exited thread's memory before the frees arrive. */
    static void *left[2][1000];
    for (int k = 0; k < 2; k++) {
        pthread_t l;
        CHECK(pthread_create(&l, NULL, leaver, left[k]) == 0);
        CHECK(pthread_join(l, NULL) == 0);
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 1000; i++) {
            size_t len = (size_t)(i % 50) * 37 + (i % 100 == 0 ? 300000 : 1);
            unsigned char *p = left[k][i];
            CHECK(p[0] == (unsigned char)(i & 0xff) && p[len - 1] == p[0]);
            free(p);
        }

    /* Thread churn: 300 threads, at most 8 alive at once. */
    static void *kept[300];
    for (int base = 0; base < 300; base += 8) {
        pthread_t c[8];
        int n = 0;
        for (; n < 8 && base + n < 300; n++)
            CHECK(pthread_create(&c[n], NULL, short_lived, &kept[base + n]) == 0);
        for (int i = 0; i < n; i++)
            CHECK(pthread_join(c[i], NULL) == 0);
    }
    for (int i = 0; i < 300; i++) {
        CHECK(kept[i] != NULL);
        free(kept[i]);
    }
    printf("threads: ok\n");
    return 0;
}
