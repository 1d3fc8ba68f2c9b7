/* fork() from a threaded program while other threads allocate: the child
 * must be able to allocate (the allocator's locks are taken around fork with
 * pthread_atfork handlers), free blocks inherited from the parent, and start
 * threads of its own. Each child runs under alarm() so a deadlock fails the
 * test instead of hanging it. */
#include "keel_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUSY 3
#define FORKS 12

static atomic_int stop;

/* Allocates and frees continuously, including blocks other threads made. */
static void *busy(void *arg) {
    uint64_t rng = (uint64_t)(intptr_t)arg;
    void *slots[64] = {0};
    while (!atomic_load(&stop)) {
        uint64_t r = rng_next(&rng);
        size_t i = r % 64;
        free(slots[i]);
        size_t len = (r >> 8) % 16 == 0 ? (r >> 16) % (2 << 20) : (r >> 16) % 2000;
        slots[i] = malloc(len + 1);
        CHECK(slots[i] != NULL);
        memset(slots[i], (int)i, len + 1);
    }
    for (int i = 0; i < 64; i++)
        free(slots[i]);
    return NULL;
}

static void *child_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        void *p = malloc((size_t)(i % 300) + 1);
        CHECK(p != NULL);
        free(p);
    }
    return malloc(77);
}

static int child_main(char *inherited, size_t len) {
    alarm(20);
    /* The block allocated by the parent before fork is intact and freeable. */
    CHECK(filled(inherited, len, 42));
    free(inherited);
    void *keep[256];
    for (int i = 0; i < 256; i++) {
        size_t sz = i % 32 == 0 ? (size_t)(i + 1) << 14 : (size_t)(i * 13 + 1);
        keep[i] = malloc(sz);
        CHECK(keep[i] != NULL);
        memset(keep[i], i, sz);
    }
    pthread_t t;
    CHECK(pthread_create(&t, NULL, child_thread, NULL) == 0);
    void *from_thread = NULL;
    CHECK(pthread_join(t, &from_thread) == 0);
    CHECK(from_thread != NULL);
    free(from_thread);
    for (int i = 0; i < 256; i++)
        free(keep[i]);
    char *s = strdup("child allocates");
    CHECK(s != NULL && strcmp(s, "child allocates") == 0);
    free(s);
    return 0;
}

int main(void) {
    print_allocator();
    pthread_t t[BUSY];
    for (int i = 0; i < BUSY; i++)
        CHECK(pthread_create(&t[i], NULL, busy, (void *)(intptr_t)(i + 1)) == 0);
    for (int f = 0; f < FORKS; f++) {
        size_t len = 1000 + (size_t)f * 5000;
        char *inherited = malloc(len);
        CHECK(inherited != NULL);
        fill(inherited, len, 42);
        fflush(stdout);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            _exit(child_main(inherited, len));
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "fork %d: child failed (status %#x%s)\n", f, status,
                    WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM
                        ? ", deadlocked: killed by alarm"
                        : "");
            return 1;
        }
        free(inherited);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < BUSY; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    printf("fork: ok\n");
    return 0;
}
