// C++ thread_local objects with constructors and destructors that allocate:
// their registration goes through __cxa_thread_atexit, which itself
// allocates during thread start-up, and the destructors run at thread exit.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

static std::atomic<int> destroyed{0};

struct Holder {
    std::vector<std::string> names;
    std::map<int, std::unique_ptr<int[]>> blocks;
    Holder() {
        for (int i = 0; i < 50; i++) names.push_back(std::string(40 + i, 'x'));
    }
    ~Holder() {
        // Allocate during destruction too.
        std::string tmp(5000, 'y');
        if (tmp.size() != 5000) std::abort();
        destroyed.fetch_add(1);
    }
};

static thread_local Holder holder;

static void work(int id) {
    for (int i = 0; i < 100; i++) holder.blocks[i] = std::make_unique<int[]>(id + i + 1);
    holder.names.emplace_back(std::to_string(id));
}

int main() {
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    std::printf("allocator: %s\n",
                sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "unknown");
    for (int round = 0; round < 5; round++) {
        std::vector<std::thread> ts;
        for (int i = 0; i < 16; i++) ts.emplace_back(work, i);
        for (auto &t : ts) t.join();
    }
    if (destroyed.load() != 80) {
        std::fprintf(stderr, "tls_cxx: %d destructors ran, expected 80\n", destroyed.load());
        return 1;
    }
    std::printf("tls_cxx: ok\n");
    return 0;
}
