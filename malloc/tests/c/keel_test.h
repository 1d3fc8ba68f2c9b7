/* Shared helpers for keel-malloc's C test programs. Each program runs both
 * under plain glibc and under LD_PRELOAD=libkeel_malloc.so; it must pass in
 * both, so it asserts only what the C standard, POSIX and glibc promise. */
#ifndef KEEL_TEST_H
#define KEEL_TEST_H

#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failed check prints where and what, then exits with status 1 (never
 * abort(): the harness reads the message from stderr). */
#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* Prints which shared object defines `malloc` for this process, so the
 * harness can prove the preload was in effect (or absent). */
static inline void print_allocator(void) {
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    if (sym != NULL && dladdr(sym, &info) != 0 && info.dli_fname != NULL)
        printf("allocator: %s\n", info.dli_fname);
    else
        printf("allocator: unknown\n");
}

/* splitmix64: a small seeded generator, so every run is reproducible. */
static inline uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fills `len` bytes with a pattern derived from `tag`, and checks it back. */
static inline void fill(void *p, size_t len, uint64_t tag) {
    unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        b[i] = (unsigned char)(tag + i * 131u);
}

static inline int filled(const void *p, size_t len, uint64_t tag) {
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        if (b[i] != (unsigned char)(tag + i * 131u))
            return 0;
    return 1;
}

/* How many threads of this process are named keel-decay (keel-heap's decay
 * thread). */
static inline int decay_threads(void) {
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int named = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], comm[32] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue; /* the thread exited */
        if (fgets(comm, sizeof comm, f) != NULL && strcmp(comm, "keel-decay\n") == 0)
            named++;
        fclose(f);
    }
    closedir(d);
    return named;
}

static inline int aligned(const void *p, size_t align) {
    return ((uintptr_t)p & (align - 1)) == 0;
}

#endif
