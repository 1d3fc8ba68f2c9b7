/* A program that never calls any gc: it fills 64 MiB, frees it, then keeps
 * doing small allocations for a while. With an idle decay configured
 * (KEEL_HEAP_DECAY_MS), the allocator's own slow paths must return the freed
 * pages: resident memory comes back near the baseline. Prints the RSS figures
 * and fails if they do not come back within 3 seconds. */
#include "keel_test.h"

#include <time.h>
#include <unistd.h>

#define BLOCKS 32
#define BLOCK (2u << 20)

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    CHECK(f != NULL);
    long size = 0, resident = 0;
    CHECK(fscanf(f, "%ld %ld", &size, &resident) == 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(void) {
    print_allocator();
    long base = rss_kib();
    void *b[BLOCKS];
    for (int i = 0; i < BLOCKS; i++) {
        b[i] = malloc(BLOCK);
        CHECK(b[i] != NULL);
        memset(b[i], i + 1, BLOCK);
    }
    long full = rss_kib();
    CHECK(full - base >= (long)(BLOCKS * (BLOCK / 1024)) * 9 / 10);
    for (int i = 0; i < BLOCKS; i++)
        free(b[i]);
    long limit = base + 8 * 1024; /* within 8 MiB of the baseline */
    long now = rss_kib();
    for (int round = 0; round < 300 && now > limit; round++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        for (int i = 0; i < 5000; i++) {
            void *p = malloc((size_t)(i % 100) + 1);
            CHECK(p != NULL);
            free(p);
        }
        now = rss_kib();
    }
    printf("idle: baseline %ld KiB, full %ld KiB, after %ld KiB\n", base, full, now);
    CHECK(now <= limit);
    printf("idle: ok\n");
    return 0;
}
