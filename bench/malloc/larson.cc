// Larson & Krishnan's server benchmark ("Memory allocation for long-running
// server applications", ISMM 1998), in C++ with new[]/delete[] (the variant
// mimalloc-bench runs as larsonN): each thread keeps `chunks` live blocks
// of `min`..`max` bytes and replaces a random one `rounds * chunks` times;
// then it starts its successor on the same blocks and exits, so each
// generation frees what the one before allocated. The main thread
// allocates the first blocks (so the first frees cross threads too) and
// stops everyone after `seconds`.
//
// Usage: larson seconds min max chunks rounds seed threads [sized]
//        (mimalloc-bench's larsonN: larson 5 8 1000 5000 100 4141 <threads>);
//        `sized` (or LARSON_SIZED=1) frees with sized delete[], as its
//        larsonN-sized. Prints "result ops_per_sec N" and mimalloc-bench's
//        "relative time" (1e9 / ops per second).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <pthread.h>
#include <string>
#include <thread>
#include <vector>

namespace {

std::atomic<bool> stop{false};
bool sized = false;

struct Lineage {
    char **blocks;
    size_t *sizes;
    long chunks, replacements, min, max;
    uint64_t rng;
    std::atomic<long> ops{0};
    std::atomic<bool> finished{false};
};

uint64_t next(uint64_t &s) {
    // xorshift64*: a fixed sequence per lineage, the allocator's only input.
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
}

void release(char *p, size_t n) {
    if (sized)
        ::operator delete[](p, n);
    else
        delete[] p;
}

void *run(void *arg) {
    Lineage *l = static_cast<Lineage *>(arg);
    long done = 0;
    for (long i = 0; i < l->replacements && !stop.load(std::memory_order_relaxed); i++) {
        uint64_t r = next(l->rng);
        long k = (long)(r % (uint64_t)l->chunks);
        release(l->blocks[k], l->sizes[k]);
        size_t n = (size_t)l->min + (size_t)((r >> 32) % (uint64_t)(l->max - l->min));
        char *p = new char[n];
        p[0] = 'a'; // a server writes its header
        volatile char c = p[0];
        (void)c;
        p[n > 1 ? 1 : 0] = 'b';
        l->blocks[k] = p;
        l->sizes[k] = n;
        done++;
    }
    l->ops.fetch_add(done, std::memory_order_relaxed);
    if (!stop.load(std::memory_order_relaxed)) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, run, l) != 0) {
            std::fprintf(stderr, "larson: pthread_create failed\n");
            std::exit(1);
        }
        pthread_attr_destroy(&a);
    } else {
        l->finished.store(true);
    }
    return nullptr;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 8) {
        std::fprintf(stderr, "usage: larson seconds min max chunks rounds seed threads\n");
        return 2;
    }
    double seconds = std::atof(argv[1]);
    long min = std::atol(argv[2]), max = std::atol(argv[3]);
    long chunks = std::atol(argv[4]), rounds = std::atol(argv[5]);
    uint64_t seed = (uint64_t)std::atol(argv[6]);
    int threads = std::atoi(argv[7]);
    const char *s = std::getenv("LARSON_SIZED");
    sized = (s != nullptr && s[0] == '1') || (argc > 8 && std::string(argv[8]) == "sized");
    if (seconds <= 0 || min < 1 || max <= min || chunks < 1 || rounds < 1 || threads < 1) {
        std::fprintf(stderr, "larson: bad arguments\n");
        return 2;
    }
    std::vector<Lineage> ls(threads);
    uint64_t g = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int t = 0; t < threads; t++) {
        Lineage &l = ls[t];
        l.blocks = new char *[chunks];
        l.sizes = new size_t[chunks];
        l.chunks = chunks;
        l.replacements = rounds * chunks;
        l.min = min;
        l.max = max;
        l.rng = next(g) | 1;
        for (long k = 0; k < chunks; k++) {
            size_t n = (size_t)min + (size_t)(next(g) % (uint64_t)(max - min));
            l.blocks[k] = new char[n];
            l.sizes[k] = n;
        }
    }
    auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; t++) {
        pthread_t th;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &a, run, &ls[t]) != 0)
            return 1;
        pthread_attr_destroy(&a);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
    for (auto &l : ls)
        while (!l.finished.load())
            std::this_thread::yield();
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    long ops = 0;
    for (auto &l : ls) {
        ops += l.ops.load();
        for (long k = 0; k < l.chunks; k++)
            release(l.blocks[k], l.sizes[k]);
        delete[] l.blocks;
        delete[] l.sizes;
    }
    double rate = (double)ops / dt;
    std::printf("Throughput = %8.0f operations per second, relative time: %.3fs.\n", rate, 1e9 / rate);
    std::printf("result ops_per_sec %.0f\n", rate);
    return 0;
}
