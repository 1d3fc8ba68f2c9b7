/* Loads keel-malloc with dlopen (no preload: the program's own malloc stays
 * glibc's) and drives its exported functions through dlsym from the main
 * thread, which existed before the load, and from threads started after it.
 * keel-heap keeps each thread's heap pointer in an initial-exec TLS slot, so
 * the library must still load this way (glibc gives it static TLS from its
 * reserve) and every thread must get its own heap. Blocks are freed across
 * threads too. Usage: dlopen <path to libkeel_malloc.so> */
#include "keel_test.h"

#include <pthread.h>

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef size_t (*usable_fn)(void *);

static malloc_fn k_malloc;
static free_fn k_free;
static usable_fn k_usable;

#define N 2000

/* Allocates N blocks of varied small sizes, fills each, checks the fill. */
static void fill_blocks(void **b, unsigned seed) {
    for (int i = 0; i < N; i++) {
        size_t n = 1 + (size_t)((i * 37u + seed) % 700u);
        b[i] = k_malloc(n);
        CHECK(b[i] != NULL);
        CHECK((uintptr_t)b[i] % 16 == 0);
        CHECK(k_usable(b[i]) >= n);
        memset(b[i], (int)(seed + (unsigned)i), n);
    }
    for (int i = 0; i < N; i++) {
        size_t n = 1 + (size_t)((i * 37u + seed) % 700u);
        unsigned char *p = b[i];
        CHECK(p[0] == (unsigned char)(seed + (unsigned)i));
        CHECK(p[n - 1] == (unsigned char)(seed + (unsigned)i));
    }
}

struct job {
    unsigned seed;
    void **to_free; /* blocks another thread allocated, freed here */
    void *b[N];
};

static void *worker(void *arg) {
    struct job *j = arg;
    for (int i = 0; i < N; i++)
        k_free(j->to_free[i]);
    fill_blocks(j->b, j->seed);
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen failed: %s\n", dlerror());
        return 1;
    }
    k_malloc = (malloc_fn)dlsym(lib, "malloc");
    k_free = (free_fn)dlsym(lib, "free");
    k_usable = (usable_fn)dlsym(lib, "malloc_usable_size");
    CHECK(k_malloc != NULL && k_free != NULL && k_usable != NULL);
    /* The program's own malloc is still glibc's. */
    CHECK(dlsym(RTLD_DEFAULT, "malloc") != (void *)k_malloc);

    static void *mine[N];
    fill_blocks(mine, 1);
    static struct job jobs[2];
    pthread_t t[2];
    for (int k = 0; k < 2; k++) {
        jobs[k].seed = 10u + (unsigned)k;
        jobs[k].to_free = k == 0 ? mine : jobs[0].b;
        if (k == 1)
            CHECK(pthread_join(t[0], NULL) == 0); /* job 0's blocks exist */
        CHECK(pthread_create(&t[k], NULL, worker, &jobs[k]) == 0);
    }
    CHECK(pthread_join(t[1], NULL) == 0);
    /* Live blocks are distinct (fill_blocks also checked that no later
     * block's fill overwrote an earlier block's first or last byte). */
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 4; k++)
            CHECK(jobs[1].b[i] != jobs[1].b[(i + 1 + k) % N]);
    for (int i = 0; i < N; i++)
        k_free(jobs[1].b[i]);
    fill_blocks(mine, 3); /* the main thread again, after the frees came back */
    for (int i = 0; i < N; i++)
        k_free(mine[i]);
    printf("dlopen: ok\n");
    return 0;
}
