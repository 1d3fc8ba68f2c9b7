/* Closes stdout and stderr from an exit handler, as GNU tools (`ls`,
 * `cat`) do: handlers registered after keel-malloc's run before it, so the
 * library's exit statistics must not depend on fd 2 still being open. */
#include "keel_test.h"

#include <unistd.h>

static void close_std(void) {
    close(1);
    close(2);
}

int main(void) {
    print_allocator();
    void *p = malloc(1000);
    CHECK(p != NULL);
    free(p);
    CHECK(atexit(close_std) == 0);
    printf("closestd: ok\n");
    fflush(stdout);
    return 0;
}
