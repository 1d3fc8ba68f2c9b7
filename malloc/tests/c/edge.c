/* The C API's edge cases, named: size 0, free(NULL), overflow in calloc and
 * reallocarray, huge sizes, invalid alignments, valloc/pvalloc page rounding,
 * realloc across sizes, calloc zeroing after reuse, the glibc __libc_* aliases
 * mixing with the plain names. Compiled with -fno-builtin so the compiler
 * cannot fold any of these calls away. */
#include "keel_test.h"

#include <malloc.h>
#include <unistd.h>

/* glibc exports these; a preloaded allocator must cover them too. */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

/* Sizes go through a volatile so no call is evaluated at compile time. */
static volatile size_t v_huge = SIZE_MAX;
static volatile size_t v_half = SIZE_MAX / 2 + 2;

static void size_zero(void) {
    void *a = malloc(0), *b = malloc(0);
    CHECK(a != NULL && b != NULL && a != b);
    free(a);
    free(b);
    void *c = calloc(0, 16), *d = calloc(16, 0);
    CHECK(c != NULL && d != NULL && c != d);
    free(c);
    free(d);
    void *e = realloc(NULL, 0);
    CHECK(e != NULL);
    free(e);
}

static void free_null(void) {
    free(NULL);
    __libc_free(NULL);
    CHECK(malloc_usable_size(NULL) == 0);
}

static void overflow(void) {
    errno = 0;
    CHECK(calloc(v_half, 2) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(2, v_half) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(v_huge, v_huge) == NULL && errno == ENOMEM);

    char *p = malloc(32);
    CHECK(p != NULL);
    fill(p, 32, 7);
    errno = 0;
    CHECK(reallocarray(p, v_half, 2) == NULL && errno == ENOMEM);
    CHECK(filled(p, 32, 7)); /* the original survives a failed reallocarray */
    char *q = reallocarray(p, 16, 8);
    CHECK(q != NULL && filled(q, 32, 7));
    free(q);
}

static void huge(void) {
    errno = 0;
    CHECK(malloc(v_huge) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc(v_huge - 4096) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(malloc(v_half) == NULL && errno == ENOMEM);
    char *p = malloc(100);
    CHECK(p != NULL);
    fill(p, 100, 3);
    errno = 0;
    CHECK(realloc(p, v_huge) == NULL && errno == ENOMEM);
    CHECK(filled(p, 100, 3)); /* failed realloc leaves the block valid */
    free(p);
    errno = 0;
    CHECK(pvalloc(v_huge) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(valloc(v_huge) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(memalign(64, v_huge) == NULL && errno == ENOMEM);
    void *out = &out;
    CHECK(posix_memalign(&out, 64, v_huge) == ENOMEM);
}

static void alignment(void) {
    void *out = NULL;
    /* posix_memalign: a power of two multiple of sizeof(void *). */
    size_t bad[] = {0, 1, 2, 4, 3, 24, 48, 4097, SIZE_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *sentinel = &out;
        out = sentinel;
        CHECK(posix_memalign(&out, bad[i], 16) == EINVAL);
        CHECK(out == sentinel); /* untouched on failure */
    }
    for (size_t a = sizeof(void *); a <= ((size_t)1 << 22); a <<= 1) {
        for (size_t sz = 0; sz <= 3 * a; sz += a / 2 + 1) {
            CHECK(posix_memalign(&out, a, sz) == 0);
            CHECK(out != NULL && aligned(out, a));
            CHECK(malloc_usable_size(out) >= sz);
            memset(out, 0x5a, sz);
            free(out);
        }
    }
    /* aligned_alloc: a power of two (glibc >= 2.38 and C17 reject others). */
    errno = 0;
    void *p = aligned_alloc(3, 9);
    if (p == NULL)
        CHECK(errno == EINVAL);
    free(p);
    for (size_t a = 1; a <= 65536; a <<= 1) {
        p = aligned_alloc(a, 4 * a);
        CHECK(p != NULL && aligned(p, a));
        memset(p, 1, 4 * a);
        free(p);
    }
    /* memalign rounds small and odd alignments up, as glibc does. */
    for (size_t a = 1; a <= 8192; a = a * 2 + 1) {
        p = memalign(a, 100);
        CHECK(p != NULL);
        size_t pow2 = 1;
        while (pow2 < a)
            pow2 <<= 1;
        CHECK(aligned(p, pow2));
        free(p);
    }
}

static void page_rounding(void) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = valloc(1);
    CHECK(p != NULL && aligned(p, page));
    free(p);
    p = pvalloc(1);
    CHECK(p != NULL && aligned(p, page) && malloc_usable_size(p) >= page);
    memset(p, 2, page);
    free(p);
    p = pvalloc(page + 1);
    CHECK(p != NULL && aligned(p, page) && malloc_usable_size(p) >= 2 * page);
    memset(p, 3, 2 * page);
    free(p);
    p = pvalloc(0);
    CHECK(p != NULL && aligned(p, page));
    free(p);
    p = __libc_valloc(10);
    CHECK(p != NULL && aligned(p, page));
    free(p);
    p = __libc_pvalloc(10);
    CHECK(p != NULL && aligned(p, page) && malloc_usable_size(p) >= page);
    free(p);
}

static void realloc_across_sizes(void) {
    /* Grow one block through every order of magnitude, then shrink it,
     * checking the preserved prefix each time. */
    size_t sizes[] = {1, 7, 8, 16, 24, 100, 255, 256, 1000, 4095, 4096, 4097,
                      20000, 65536, 100000, 1 << 20, 3 << 20, 9 << 20,
                      1 << 20, 5000, 64, 3, 1};
    size_t n = sizeof sizes / sizeof sizes[0];
    char *p = NULL;
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        char *q = realloc(p, sizes[i]);
        CHECK(q != NULL);
        size_t keep = have < sizes[i] ? have : sizes[i];
        CHECK(filled(q, keep, 11));
        CHECK(malloc_usable_size(q) >= sizes[i]);
        fill(q, sizes[i], 11);
        p = q;
        have = sizes[i];
    }
    free(p);
    /* realloc to 0 frees and returns NULL in glibc, and keel-malloc keeps
     * that choice (C allows a freeable pointer too; both allocators this
     * program runs on make this one). */
    p = malloc(10);
    CHECK(p != NULL);
    p = realloc(p, 0);
    CHECK(p == NULL);
    free(p);
    /* realloc keeps alignment of an over-aligned block's contents. */
    void *a = NULL;
    CHECK(posix_memalign(&a, 4096, 100) == 0);
    fill(a, 100, 5);
    a = realloc(a, 200000);
    CHECK(a != NULL && filled(a, 100, 5));
    free(a);
}

static void calloc_zero_after_reuse(void) {
    for (size_t sz = 8; sz <= ((size_t)8 << 20); sz *= 3) {
        for (int round = 0; round < 4; round++) {
            unsigned char *p = malloc(sz);
            CHECK(p != NULL);
            memset(p, 0xff, sz);
            free(p);
            unsigned char *z = calloc(1, sz);
            CHECK(z != NULL);
            for (size_t i = 0; i < sz; i++)
                CHECK(z[i] == 0);
            memset(z, 0xee, sz);
            free(z);
        }
    }
}

static void aliases_mix(void) {
    void *a = __libc_malloc(40);
    CHECK(a != NULL);
    fill(a, 40, 1);
    a = realloc(a, 4000);
    CHECK(a != NULL && filled(a, 40, 1));
    free(a);
    void *b = malloc(50);
    CHECK(b != NULL);
    b = __libc_realloc(b, 5000);
    CHECK(b != NULL);
    __libc_free(b);
    unsigned char *c = __libc_calloc(10, 10);
    CHECK(c != NULL);
    for (int i = 0; i < 100; i++)
        CHECK(c[i] == 0);
    free(c);
    void *d = __libc_memalign(256, 10);
    CHECK(d != NULL && aligned(d, 256));
    __libc_free(d);
}

static void usable_size(void) {
    for (size_t sz = 1; sz < 300000; sz = sz * 5 / 4 + 1) {
        unsigned char *p = malloc(sz);
        CHECK(p != NULL);
        size_t u = malloc_usable_size(p);
        CHECK(u >= sz);
        memset(p, 0x77, u); /* every usable byte is writable */
        free(p);
    }
}

int main(void) {
    print_allocator();
    size_zero();
    free_null();
    overflow();
    huge();
    alignment();
    page_rounding();
    realloc_across_sizes();
    calloc_zero_after_reuse();
    aliases_mix();
    usable_size();
    printf("edge: ok\n");
    return 0;
}
