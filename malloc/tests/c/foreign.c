/* Pointers keel-heap does not own (here, into a static buffer): free ignores
 * them, realloc refuses them with ENOMEM, malloc_usable_size answers 0, and
 * with KEEL_HEAP_CHECK=1 each is reported on stderr. glibc aborts on these,
 * so this program runs only under the preload. */
#include "keel_test.h"

#include <malloc.h>

static char not_heap[256];

int main(void) {
    print_allocator();
    free(not_heap + 16);
    errno = 0;
    CHECK(realloc(not_heap + 32, 100) == NULL && errno == ENOMEM);
    CHECK(malloc_usable_size(not_heap + 48) == 0);
    void *p = malloc(10); /* the heap is unharmed */
    CHECK(p != NULL);
    free(p);
    printf("foreign: ok\n");
    return 0;
}
