/* Requests no mapping can serve, with free memory cached: each must fail
 * with ENOMEM (EINVAL/ENOMEM return codes for posix_memalign) and leave the
 * cached memory alone. The Rust side reads keel-malloc's statistics at exit
 * and checks that no release pass ran: the out-of-memory retry used to
 * release every free page before failing these. */
#include "keel_test.h"

#include <malloc.h>

static volatile size_t v_q = (size_t)1 << 62; /* a quarter of the address space */
static volatile size_t v_big = SIZE_MAX / 2 - 4096;

int main(void) {
    print_allocator();
    /* 19 MiB of medium blocks, touched and freed: cached for reuse. */
    void *b[64];
    for (int i = 0; i < 64; i++) {
        b[i] = malloc(300 << 10);
        CHECK(b[i] != NULL);
        memset(b[i], 1, 300 << 10);
    }
    for (int i = 0; i < 64; i++)
        free(b[i]);
    for (int round = 0; round < 3; round++) {
        errno = 0;
        CHECK(malloc(v_q) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(malloc(v_big) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(calloc(1, v_q) == NULL && errno == ENOMEM);
        void *out = &out;
        CHECK(posix_memalign(&out, v_q, 16) == ENOMEM && out == &out);
        errno = 0;
        CHECK(memalign(v_q, 16) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(aligned_alloc(v_q, 16) == NULL && errno == ENOMEM);
        char *p = malloc(100);
        CHECK(p != NULL);
        fill(p, 100, 4);
        errno = 0;
        CHECK(realloc(p, v_q) == NULL && errno == ENOMEM);
        CHECK(filled(p, 100, 4));
        free(p);
    }
    printf("impossible: ok\n");
    return 0;
}
