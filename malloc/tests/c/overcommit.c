/* Requests that can never be backed: under the kernel's default overcommit
 * heuristic (mode 0), with less memory and swap than the request, malloc,
 * calloc and realloc must return NULL with ENOMEM (the block passed to
 * realloc intact), as glibc's do, instead of a pointer that the first
 * touches of its pages would turn into the OOM killer. Prints "skipped" and
 * why where the kernel would allow the request. */
#include "keel_test.h"

#include <sys/sysinfo.h>

static volatile size_t tib = (size_t)1 << 40;

int main(void) {
    print_allocator();
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    int mode = -1;
    if (f != NULL) {
        CHECK(fscanf(f, "%d", &mode) == 1);
        fclose(f);
    }
    struct sysinfo si;
    CHECK(sysinfo(&si) == 0);
    double total = ((double)si.totalram + (double)si.totalswap) * si.mem_unit;
    if (mode != 0 || total >= (double)tib / 2) {
        printf("overcommit: skipped (mode %d, %.0f bytes of memory and swap)\n", mode, total);
        return 0;
    }
    errno = 0;
    CHECK(malloc(tib) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(1, tib) == NULL && errno == ENOMEM);
    char *p = malloc(100);
    CHECK(p != NULL);
    fill(p, 100, 9);
    errno = 0;
    CHECK(realloc(p, 32 * tib) == NULL && errno == ENOMEM);
    CHECK(filled(p, 100, 9));
    free(p);
    printf("overcommit: ok\n");
    return 0;
}
