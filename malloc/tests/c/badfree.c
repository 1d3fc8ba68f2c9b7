/* Double and interior frees, one case per run (argv[1]): under keel-malloc
 * each must end the process at once with one line on stderr and SIGABRT,
 * before any block can be handed out twice. The program prints "survived"
 * if the allocator let it go on.
 * Cases: double-32 double-40k double-8m double-aligned interior-64
 *        interior-40k interior-8m interior-aligned realloc-interior
 *        realloc-freed thread-double owner-after-thread thread-after-owner
 *        owner-after-thread-busy owner-after-thread-reuse
 *        thread-interior-40k thread-double-40k owner-after-thread-40k
 *        (a medium block freed by another thread: inside it, twice, and
 *        by its owner after that thread)
 *        pqp (p, q, p freed in turn, a third block live: no immediate
 *        repeat) written (a write into a freed block's free mark: its
 *        first word, the encoded free-list link) */
#include "keel_test.h"

#include <pthread.h>

static void *block;

static void *free_block(void *arg) {
    (void)arg;
    free(block);
    return NULL;
}

static void *alloc_sized(const char *what) {
    void *p = NULL;
    if (strcmp(what, "32") == 0)
        p = malloc(32);
    else if (strcmp(what, "64") == 0)
        p = malloc(64);
    else if (strcmp(what, "40k") == 0)
        p = malloc(40000);
    else if (strcmp(what, "8m") == 0)
        p = malloc(8u << 20);
    else if (strcmp(what, "aligned") == 0)
        CHECK(posix_memalign(&p, 1u << 20, 3u << 20) == 0);
    CHECK(p != NULL);
    return p;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    const char *c = argv[1];
    void *keep = malloc(100); /* a live neighbour */
    CHECK(keep != NULL);
    if (strncmp(c, "double-", 7) == 0) {
        void *p = alloc_sized(c + 7);
        free(p);
        free(p);
    } else if (strcmp(c, "pqp") == 0) {
        void *p = malloc(32), *q = malloc(32), *r = malloc(32);
        CHECK(p != NULL && q != NULL && r != NULL);
        printf("block %p\n", p);
        fflush(stdout);
        free(p);
        free(q);
        free(p);
    } else if (strcmp(c, "written") == 0) {
        void *p = malloc(32);
        CHECK(p != NULL);
        printf("block %p\n", p);
        fflush(stdout);
        free(p);
        ((volatile unsigned long long *)p)[0] = 0x5a5a;
    } else if (strncmp(c, "interior-", 9) == 0) {
        char *p = alloc_sized(c + 9);
        free(p + 16);
    } else if (strcmp(c, "realloc-interior") == 0) {
        char *p = malloc(64);
        CHECK(p != NULL);
        p = realloc(p + 16, 200);
        printf("realloc returned %p\n", (void *)p);
    } else if (strcmp(c, "realloc-freed") == 0) {
        char *p = malloc(64);
        CHECK(p != NULL);
        free(p);
        p = realloc(p, 32);
        printf("realloc returned %p\n", (void *)p);
    } else if (strcmp(c, "thread-after-owner") == 0) {
        /* The owner frees it, then another thread frees it again. */
        block = malloc(48);
        CHECK(block != NULL);
        printf("block %p\n", block);
        fflush(stdout);
        free(block);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, free_block, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
    } else if (strcmp(c, "owner-after-thread-busy") == 0 ||
               strcmp(c, "owner-after-thread-reuse") == 0) {
        /* As owner-after-thread with a live block beside it in its slab,
         * so the owner's free links a block that waits on the foreign
         * list (the slab still counts a live block). With -reuse the owner
         * then allocates that size before anything drains the foreign
         * list: the block must not go out (the drain would free it again
         * while it is live). */
        void *busy = malloc(48);
        block = malloc(48);
        CHECK(busy != NULL && block != NULL);
        printf("block %p\n", block);
        fflush(stdout);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, free_block, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        free(block);
        if (strcmp(c, "owner-after-thread-reuse") == 0) {
            void *again = malloc(48);
            printf("got %p\n", again);
            fflush(stdout);
        }
    } else if (strcmp(c, "thread-interior-40k") == 0) {
        /* Refused at the free itself: a foreign free writes into the block
         * (the foreign list's link), so one taken unchecked would have
         * written into live memory before its owner found it. */
        char *p = alloc_sized("40k");
        block = p + 16;
        pthread_t t;
        CHECK(pthread_create(&t, NULL, free_block, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        printf("survived the free\n");
        fflush(stdout);
    } else if (strcmp(c, "thread-double-40k") == 0 ||
               strcmp(c, "owner-after-thread-40k") == 0) {
        block = alloc_sized("40k");
        printf("block %p\n", block);
        fflush(stdout);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, free_block, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        if (strcmp(c, "thread-double-40k") == 0) {
            CHECK(pthread_create(&t, NULL, free_block, NULL) == 0);
            CHECK(pthread_join(t, NULL) == 0);
        } else {
            free(block);
        }
        printf("survived the free\n");
        fflush(stdout);
    } else if (strcmp(c, "thread-double") == 0 || strcmp(c, "owner-after-thread") == 0) {
        block = malloc(48);
        CHECK(block != NULL);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, free_block, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        if (strcmp(c, "thread-double") == 0) {
            CHECK(pthread_create(&t, NULL, free_block, NULL) == 0);
            CHECK(pthread_join(t, NULL) == 0);
        } else {
            free(block);
        }
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    /* Had the free been taken, these could hand the block out twice:
     * each is printed as it comes, so the test sees none came twice. */
    for (int i = 0; i < 3; i++) {
        void *a = malloc(32);
        printf("got %p\n", a);
        fflush(stdout);
    }
    printf("survived %s\n", c);
    free(keep);
    return 0;
}
