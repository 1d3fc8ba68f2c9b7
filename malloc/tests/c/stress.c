/* A seeded multi-threaded stress program, in the spirit of mimalloc's
 * test-stress: threads allocate with every entry point (malloc, calloc,
 * realloc, posix_memalign, aligned_alloc), pass blocks to each other through
 * mailboxes, check every block's contents before freeing it, and now and then
 * ask the allocator to collect (keel_malloc_gc, when the preloaded allocator
 * exports it). Usage: stress [seed] [threads] [ops per thread]. */
#include "keel_test.h"

#include <malloc.h>
#include <pthread.h>

#define SLOTS 512

struct block {
    uint64_t tag;
    size_t len;
    unsigned char data[];
};

struct mailbox {
    pthread_mutex_t lock;
    struct block **items;
    size_t len, cap;
};

static int nthreads;
static long ops_per_thread;
static uint64_t seed;
static struct mailbox *boxes;
static void (*keel_gc)(void);

static struct block *make(uint64_t *rng) {
    uint64_t r = rng_next(rng);
    size_t len;
    switch (r % 100) {
    case 0: len = (r >> 8) % (2u << 20); break;          /* large */
    case 1 ... 3: len = (r >> 8) % (128u << 10); break;  /* medium */
    case 4 ... 30: len = (r >> 8) % 4096; break;
    default: len = (r >> 8) % 256; break;                /* small */
    }
    size_t total = sizeof(struct block) + len;
    struct block *b = NULL;
    switch ((r >> 40) % 8) {
    case 0: {
        b = calloc(1, total);
        CHECK(b != NULL);
        for (size_t i = 0; i < len; i++)
            CHECK(b->data[i] == 0);
        break;
    }
    case 1: {
        size_t align = (size_t)16 << ((r >> 48) % 10);
        void *p = NULL;
        CHECK(posix_memalign(&p, align, total) == 0);
        CHECK(aligned(p, align));
        b = p;
        break;
    }
    case 2: {
        size_t align = (size_t)64 << ((r >> 48) % 6);
        b = aligned_alloc(align, (total + align - 1) & ~(align - 1));
        CHECK(b != NULL && aligned(b, align));
        break;
    }
    default:
        b = malloc(total);
        CHECK(b != NULL && aligned(b, 16));
        break;
    }
    CHECK(malloc_usable_size(b) >= total);
    b->len = len;
    b->tag = rng_next(rng);
    fill(b->data, len, b->tag);
    return b;
}

static void check_and_free(struct block *b) {
    if (b == NULL)
        return;
    CHECK(filled(b->data, b->len, b->tag));
    free(b);
}

static void post(int to, struct block *b) {
    struct mailbox *m = &boxes[to];
    pthread_mutex_lock(&m->lock);
    if (m->len == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        struct block **items = realloc(m->items, cap * sizeof *items);
        CHECK(items != NULL);
        m->items = items;
        m->cap = cap;
    }
    m->items[m->len++] = b;
    pthread_mutex_unlock(&m->lock);
}

static struct block *take(int me) {
    struct mailbox *m = &boxes[me];
    struct block *b = NULL;
    pthread_mutex_lock(&m->lock);
    if (m->len > 0)
        b = m->items[--m->len];
    pthread_mutex_unlock(&m->lock);
    return b;
}

static void *worker(void *arg) {
    int me = (int)(intptr_t)arg;
    uint64_t rng = seed * 1000003u + (uint64_t)me;
    struct block **slots = calloc(SLOTS, sizeof *slots);
    CHECK(slots != NULL);
    for (long op = 0; op < ops_per_thread; op++) {
        uint64_t r = rng_next(&rng);
        size_t i = r % SLOTS;
        switch ((r >> 32) % 10) {
        case 0: /* hand a block to another thread */
            if (slots[i] != NULL) {
                post((int)((r >> 40) % (uint64_t)nthreads), slots[i]);
                slots[i] = NULL;
            }
            break;
        case 1: { /* adopt one from the mailbox */
            struct block *b = take(me);
            if (b != NULL) {
                check_and_free(slots[i]);
                slots[i] = b;
            }
            break;
        }
        case 2: /* realloc, keeping the prefix */
            if (slots[i] != NULL) {
                struct block *b = slots[i];
                CHECK(filled(b->data, b->len, b->tag));
                size_t len = (r >> 40) % (b->len * 2 + 64);
                b = realloc(b, sizeof *b + len);
                CHECK(b != NULL);
                size_t keep = len < b->len ? len : b->len;
                CHECK(filled(b->data, keep, b->tag));
                b->len = len;
                fill(b->data, len, b->tag);
                slots[i] = b;
            }
            break;
        default: /* replace */
            check_and_free(slots[i]);
            slots[i] = make(&rng);
            break;
        }
        if (keel_gc != NULL && op % 1000 == 999)
            keel_gc();
    }
    for (size_t i = 0; i < SLOTS; i++)
        check_and_free(slots[i]);
    free(slots);
    return NULL;
}

int main(int argc, char **argv) {
    print_allocator();
    seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
    nthreads = argc > 2 ? atoi(argv[2]) : 4;
    ops_per_thread = argc > 3 ? atol(argv[3]) : 20000;
    CHECK(nthreads > 0 && ops_per_thread > 0);
    *(void **)&keel_gc = dlsym(RTLD_DEFAULT, "keel_malloc_gc");
    boxes = calloc((size_t)nthreads, sizeof *boxes);
    CHECK(boxes != NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_mutex_init(&boxes[i].lock, NULL);
    /* Two generations of threads: the second frees what the first posted
     * after the first has exited. */
    for (int gen = 0; gen < 2; gen++) {
        pthread_t *t = malloc((size_t)nthreads * sizeof *t);
        CHECK(t != NULL);
        for (int i = 0; i < nthreads; i++)
            CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
        for (int i = 0; i < nthreads; i++)
            CHECK(pthread_join(t[i], NULL) == 0);
        free(t);
    }
    for (int i = 0; i < nthreads; i++) {
        for (size_t k = 0; k < boxes[i].len; k++)
            check_and_free(boxes[i].items[k]);
        free(boxes[i].items);
    }
    free(boxes);
    printf("stress: ok (seed %llu, %d threads, %ld ops each, gc %s)\n",
           (unsigned long long)seed, nthreads, ops_per_thread,
           keel_gc ? "on" : "absent");
    return 0;
}
