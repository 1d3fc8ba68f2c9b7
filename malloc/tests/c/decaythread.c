/* Frees a 64 MiB block (a direct map, pooled by keel-malloc), then prints
 * how many of the process's threads are named `keel-decay`: keel-heap's
 * decay thread starts with the first map pooled, unless
 * KEEL_HEAP_DECAY_THREAD=0 (glibc starts none). */
#include "keel_test.h"

int main(void) {
    print_allocator();
    void *p = malloc(64u << 20);
    CHECK(p != NULL);
    free(p);
    printf("decay threads: %d\n", decay_threads());
    return 0;
}
