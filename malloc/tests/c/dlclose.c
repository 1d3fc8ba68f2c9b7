/* keel-malloc loaded with dlopen, then closed while keel-heap's decay thread
 * runs. A worker thread (the main thread never calls the library, so no
 * thread-exit hook of it keeps the library loaded) frees a large block,
 * which goes to the direct-map pool and starts the decay thread to release
 * it by age. The library is linked `-z nodelete`: after dlclose it must
 * still be mapped, and the thread, waking at the map's deadline, runs on.
 * (Unmapped, the thread would wake into unmapped code: SIGSEGV.)
 * Usage: dlclose <path to libkeel_malloc.so> */
#include "keel_test.h"

#include <pthread.h>
#include <unistd.h>

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

static malloc_fn k_malloc;
static free_fn k_free;

/* Whether a mapping of this process is of a file whose path ends in `name`. */
static int mapped(const char *name) {
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[4096];
    size_t n = strlen(name);
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL) {
        size_t l = strlen(line);
        while (l > 0 && line[l - 1] == '\n')
            line[--l] = '\0';
        found = l >= n && strcmp(line + l - n, name) == 0;
    }
    fclose(f);
    return found;
}

static void *worker(void *arg) {
    (void)arg;
    void *big = k_malloc(64u << 20);
    CHECK(big != NULL);
    memset(big, 1, 1u << 20);
    k_free(big);
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    /* The pooled map's deadline comes 50 ms after its free. */
    CHECK(setenv("KEEL_HEAP_DECAY_MS", "50", 1) == 0);
    const char *base = strrchr(argv[1], '/');
    base = base ? base + 1 : argv[1];
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen failed: %s\n", dlerror());
        return 1;
    }
    k_malloc = (malloc_fn)dlsym(lib, "malloc");
    k_free = (free_fn)dlsym(lib, "free");
    CHECK(k_malloc != NULL && k_free != NULL);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    for (int i = 0; i < 1000 && decay_threads() == 0; i++)
        usleep(1000);
    CHECK(decay_threads() > 0);
    CHECK(mapped(base));
    CHECK(dlclose(lib) == 0);
    CHECK(mapped(base)); /* -z nodelete */
    usleep(300 * 1000);  /* past the map's deadline: the thread woke */
    CHECK(decay_threads() > 0);
    printf("dlclose: ok\n");
    return 0;
}
