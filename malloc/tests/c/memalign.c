/* posix_memalign and malloc_usable_size together: many over-aligned blocks
 * live at once, every usable byte written with the block's own pattern, then
 * all checked (so overlapping blocks or a usable size that overstates the
 * block would be caught), freed in a scrambled order, and done again so the
 * second pass reuses the first's memory. */
#include "keel_test.h"

#include <malloc.h>

#define LIVE 2000

struct slot {
    unsigned char *p;
    size_t usable;
    size_t align;
};

static struct slot slots[LIVE];

int main(void) {
    print_allocator();
    uint64_t rng = 99;
    for (int pass = 0; pass < 3; pass++) {
        for (int i = 0; i < LIVE; i++) {
            uint64_t r = rng_next(&rng);
            size_t align = sizeof(void *) << (r % 14); /* 8 .. 64 KiB */
            size_t size = (r >> 8) % (i % 50 == 0 ? (1 << 20) : 3000);
            void *p = NULL;
            CHECK(posix_memalign(&p, align, size) == 0);
            CHECK(p != NULL && aligned(p, align));
            size_t u = malloc_usable_size(p);
            CHECK(u >= size);
            slots[i] = (struct slot){p, u, align};
            fill(p, u, (uint64_t)i * 7 + (uint64_t)pass);
        }
        for (int i = 0; i < LIVE; i++)
            CHECK(filled(slots[i].p, slots[i].usable, (uint64_t)i * 7 + (uint64_t)pass));
        /* Grow a third of them with realloc: contents move with them. */
        for (int i = 0; i < LIVE; i += 3) {
            size_t keep = slots[i].usable;
            unsigned char *q = realloc(slots[i].p, keep * 2 + 1);
            CHECK(q != NULL && filled(q, keep, (uint64_t)i * 7 + (uint64_t)pass));
            slots[i].p = q;
            CHECK(malloc_usable_size(q) >= keep * 2 + 1);
        }
        for (int k = 0; k < LIVE; k++) {
            int i = (int)((uint64_t)k * 7919 % LIVE);
            free(slots[i].p);
        }
    }
    printf("memalign: ok\n");
    return 0;
}
