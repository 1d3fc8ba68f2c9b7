/* Thread start-up and exit paths that allocate: pthread_key destructors that
 * free, allocate again and re-arm the key (run again by glibc, up to
 * PTHREAD_DESTRUCTOR_ITERATIONS rounds), __thread pointers to heap memory,
 * and a destructor that frees a block another thread allocated. */
#include "keel_test.h"

#include <pthread.h>
#include <stdatomic.h>

#define THREADS 64

static pthread_key_t key_plain, key_rearm;
static atomic_int destructed, rearmed;
static __thread char *tls_buf;
static __thread size_t tls_len;
static void *shared_from_main[THREADS];

struct rearm {
    int rounds;
    char *payload;
};

static void plain_destructor(void *v) {
    CHECK(filled(v, 100, 9));
    free(v);
    atomic_fetch_add(&destructed, 1);
}

/* Frees its value, then allocates a fresh one and sets the key again, a few
 * times, so allocation happens during the thread's own teardown. */
static void rearm_destructor(void *v) {
    struct rearm *r = v;
    CHECK(filled(r->payload, 64, (uint64_t)r->rounds));
    free(r->payload);
    if (r->rounds < 3) {
        struct rearm *n = malloc(sizeof *n);
        CHECK(n != NULL);
        n->rounds = r->rounds + 1;
        n->payload = malloc(64);
        CHECK(n->payload != NULL);
        fill(n->payload, 64, (uint64_t)n->rounds);
        CHECK(pthread_setspecific(key_rearm, n) == 0);
    } else {
        atomic_fetch_add(&rearmed, 1);
    }
    free(r);
}

static void *worker(void *arg) {
    int id = (int)(intptr_t)arg;
    tls_len = 1000 + (size_t)id * 10;
    tls_buf = malloc(tls_len);
    CHECK(tls_buf != NULL);
    memset(tls_buf, id, tls_len);

    void *v = malloc(100);
    CHECK(v != NULL);
    fill(v, 100, 9);
    CHECK(pthread_setspecific(key_plain, v) == 0);

    struct rearm *r = malloc(sizeof *r);
    CHECK(r != NULL);
    r->rounds = 0;
    r->payload = malloc(64);
    CHECK(r->payload != NULL);
    fill(r->payload, 64, 0);
    CHECK(pthread_setspecific(key_rearm, r) == 0);

    /* Free, from this thread, a block the main thread allocated. */
    free(shared_from_main[id]);

    tls_buf = realloc(tls_buf, tls_len * 3);
    CHECK(tls_buf != NULL);
    for (size_t i = 0; i < tls_len; i++)
        CHECK(tls_buf[i] == (char)id);
    free(tls_buf);
    return NULL;
}

int main(void) {
    print_allocator();
    CHECK(pthread_key_create(&key_plain, plain_destructor) == 0);
    CHECK(pthread_key_create(&key_rearm, rearm_destructor) == 0);
    for (int round = 0; round < 4; round++) {
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            shared_from_main[i] = malloc((size_t)(i + 1) * 100);
            CHECK(shared_from_main[i] != NULL);
        }
        for (int i = 0; i < THREADS; i++)
            CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
        for (int i = 0; i < THREADS; i++)
            CHECK(pthread_join(t[i], NULL) == 0);
    }
    CHECK(atomic_load(&destructed) == 4 * THREADS);
    CHECK(atomic_load(&rearmed) == 4 * THREADS);
    printf("tls: ok\n");
    return 0;
}
