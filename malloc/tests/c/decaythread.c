/* Frees a 64 MiB block (a direct map, pooled by keel-malloc), then prints
 * how many of the process's threads are named `keel-decay`: keel-heap's
 * decay thread starts with the first map pooled, unless
 * KEEL_HEAP_DECAY_THREAD=0 (glibc starts none). */
#include "keel_test.h"

#include <dirent.h>

int main(void) {
    print_allocator();
    void *p = malloc(64u << 20);
    CHECK(p != NULL);
    free(p);
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int named = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[64], comm[32] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) != NULL && strcmp(comm, "keel-decay\n") == 0)
            named++;
        fclose(f);
    }
    closedir(d);
    printf("decay threads: %d\n", named);
    return 0;
}
