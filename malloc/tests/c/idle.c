/* A program that never calls any gc: it fills 64 MiB, frees it, then keeps
 * doing small allocations for a while: `busy` without pause (the heap is
 * never quiet), `sparse` one every millisecond. With an idle decay
 * configured (KEEL_HEAP_DECAY_MS), the allocator's own slow paths must
 * return the freed pages whatever else the thread allocates: resident
 * memory comes back near the baseline. Prints the RSS figures and fails if
 * they do not come back within 5 seconds.
 * Usage: idle [busy|sparse] */
#include "keel_test.h"

#include <time.h>
#include <unistd.h>

#define BLOCKS 32
#define BLOCK (2u << 20)

/* Resident KiB from the Rss: line of /proc/self/smaps_rollup, which walks
 * the page tables (since Linux 6.2 statm's figure comes from per-CPU
 * counters and can lag by megabytes on a machine with many CPUs); from
 * /proc/self/statm, with a note, where smaps_rollup is absent (before 4.14). */
static long rss_kib(void) {
    static int noted;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (f != NULL) {
        char line[256];
        long kib = -1;
        while (fgets(line, sizeof line, f) != NULL)
            if (sscanf(line, "Rss: %ld", &kib) == 1)
                break;
        fclose(f);
        CHECK(kib >= 0);
        return kib;
    }
    if (!noted) {
        noted = 1;
        printf("note: /proc/self/smaps_rollup is not readable here: RSS from /proc/self/statm\n");
    }
    f = fopen("/proc/self/statm", "r");
    CHECK(f != NULL);
    long size = 0, resident = 0;
    CHECK(fscanf(f, "%ld %ld", &size, &resident) == 2);
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int sparse = argc > 1 && strcmp(argv[1], "sparse") == 0;
    CHECK(argc < 2 || sparse || strcmp(argv[1], "busy") == 0);
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
    double t0 = now_s(), waited = 0;
    long calls = 0;
    while (now > limit && (waited = now_s() - t0) < 5.0) {
        for (int i = 0; i < 1000; i++) {
            if (sparse) {
                struct timespec ts = {0, 1000 * 1000};
                nanosleep(&ts, NULL);
            }
            void *p = malloc((size_t)(i % 100) + 1);
            CHECK(p != NULL);
            free(p);
            calls++;
            if (sparse && i % 20 == 19 && (now = rss_kib()) <= limit)
                break;
        }
        now = rss_kib();
    }
    waited = now_s() - t0;
    printf("idle (%s): baseline %ld KiB, full %ld KiB, after %ld KiB, %.2f s, %ld mallocs\n",
           sparse ? "sparse" : "busy", base, full, now, waited, calls);
    CHECK(now <= limit);
    printf("idle: ok\n");
    return 0;
}
