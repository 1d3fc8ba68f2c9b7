// Every replaceable operator new / operator delete form, called as C++
// programs call them, and the standard's failure behaviour for sizes no
// allocator can serve. Passes on the system allocator (libstdc++'s
// operators) and under keel-malloc, where it also proves that keel defines
// every operator the program calls ("operators: <object>", checked by the
// harness) and, through keel's statistics, that keel served the blocks.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            std::exit(1);                                                             \
        }                                                                             \
    } while (0)

// Keeps the compiler from eliding a new/delete pair.
static void keep(void *p) { asm volatile("" : : "r"(p) : "memory"); }

static const char *object_of(void *fn) {
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "unknown";
}

using InUse = unsigned long long (*)();
static InUse in_use = nullptr;  // keel's statistics, when keel is the allocator
// Linked in from keel's static library, or absent (then looked up).
extern "C" unsigned long long keel_malloc_in_use() __attribute__((weak));

// The operators by their exact signatures: the addresses the program's own
// calls bind to.
#define OP(T, f) reinterpret_cast<void *>(static_cast<T>(f))
struct Form {
    const char *name;
    void *fn;
};
static const Form forms[] = {
    {"new", OP(void *(*)(std::size_t), &::operator new)},
    {"new[]", OP(void *(*)(std::size_t), &::operator new[])},
    {"new nothrow", OP(void *(*)(std::size_t, const std::nothrow_t &) noexcept, &::operator new)},
    {"new[] nothrow", OP(void *(*)(std::size_t, const std::nothrow_t &) noexcept, &::operator new[])},
    {"new aligned", OP(void *(*)(std::size_t, std::align_val_t), &::operator new)},
    {"new[] aligned", OP(void *(*)(std::size_t, std::align_val_t), &::operator new[])},
    {"new aligned nothrow",
     OP(void *(*)(std::size_t, std::align_val_t, const std::nothrow_t &) noexcept, &::operator new)},
    {"new[] aligned nothrow",
     OP(void *(*)(std::size_t, std::align_val_t, const std::nothrow_t &) noexcept, &::operator new[])},
    {"delete", OP(void (*)(void *) noexcept, &::operator delete)},
    {"delete[]", OP(void (*)(void *) noexcept, &::operator delete[])},
    {"delete sized", OP(void (*)(void *, std::size_t) noexcept, &::operator delete)},
    {"delete[] sized", OP(void (*)(void *, std::size_t) noexcept, &::operator delete[])},
    {"delete nothrow", OP(void (*)(void *, const std::nothrow_t &) noexcept, &::operator delete)},
    {"delete[] nothrow", OP(void (*)(void *, const std::nothrow_t &) noexcept, &::operator delete[])},
    {"delete aligned", OP(void (*)(void *, std::align_val_t) noexcept, &::operator delete)},
    {"delete[] aligned", OP(void (*)(void *, std::align_val_t) noexcept, &::operator delete[])},
    {"delete sized aligned",
     OP(void (*)(void *, std::size_t, std::align_val_t) noexcept, &::operator delete)},
    {"delete[] sized aligned",
     OP(void (*)(void *, std::size_t, std::align_val_t) noexcept, &::operator delete[])},
    {"delete aligned nothrow",
     OP(void (*)(void *, std::align_val_t, const std::nothrow_t &) noexcept, &::operator delete)},
    {"delete[] aligned nothrow",
     OP(void (*)(void *, std::align_val_t, const std::nothrow_t &) noexcept, &::operator delete[])},
};

// One allocation of `size` bytes by `alloc`, written, released by `release`:
// with keel's statistics, in use grows by at least `size` and falls back.
template <class A, class R>
static void round_trip(const char *what, std::size_t size, std::size_t align, A alloc, R release) {
    unsigned long long before = in_use ? in_use() : 0;
    void *p = alloc();
    keep(p);
    CHECK(p != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % align == 0);
    std::memset(p, 0x5a, size);
    if (in_use) {
        unsigned long long during = in_use();
        if (during < before + size) {
            std::fprintf(stderr, "%s of %zu: keel's in use %llu -> %llu\n", what, size, before,
                         during);
            std::exit(1);
        }
    }
    release(p);
    if (in_use) CHECK(in_use() < before + size);
}

struct alignas(256) Wide {
    unsigned char bytes[256];
};

static int handler_calls = 0;
static void give_up_third_time() {
    if (++handler_calls == 3) std::set_new_handler(nullptr);
}
static void throw_bad_alloc() {
    handler_calls++;
    throw std::bad_alloc();
}

int main() {
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    std::printf("allocator: %s\n", object_of(sym));
    // The object defining every operator the program calls: one line if all
    // agree, else one line per disagreeing form.
    const char *first = object_of(forms[0].fn);
    bool same = true;
    for (const Form &f : forms) {
        if (std::strcmp(object_of(f.fn), first) != 0) {
            std::printf("operator %s: %s\n", f.name, object_of(f.fn));
            same = false;
        }
    }
    std::printf("operators: %s\n", same ? first : "mixed");
    in_use = keel_malloc_in_use ? keel_malloc_in_use
                                : reinterpret_cast<InUse>(dlsym(RTLD_DEFAULT, "keel_malloc_in_use"));
    std::printf("keel statistics: %s\n", in_use ? "found" : "absent");

    // Sizes of each of keel's ranges: small, buddy-backed, direct map.
    const std::size_t sizes[] = {1, 100, 5000, 200000, 3 << 20};
    for (std::size_t n : sizes) {
        const std::align_val_t al{256};
        const std::size_t a = 256;
        round_trip("new", n, 8, [&] { return ::operator new(n); }, [](void *p) { ::operator delete(p); });
        round_trip("new[]", n, 8, [&] { return ::operator new[](n); },
                   [](void *p) { ::operator delete[](p); });
        round_trip("sized delete", n, 8, [&] { return ::operator new(n); },
                   [&](void *p) { ::operator delete(p, n); });
        round_trip("sized delete[]", n, 8, [&] { return ::operator new[](n); },
                   [&](void *p) { ::operator delete[](p, n); });
        round_trip("new nothrow", n, 8, [&] { return ::operator new(n, std::nothrow); },
                   [](void *p) { ::operator delete(p, std::nothrow); });
        round_trip("new[] nothrow", n, 8, [&] { return ::operator new[](n, std::nothrow); },
                   [](void *p) { ::operator delete[](p, std::nothrow); });
        round_trip("new aligned", n, a, [&] { return ::operator new(n, al); },
                   [&](void *p) { ::operator delete(p, al); });
        round_trip("new[] aligned", n, a, [&] { return ::operator new[](n, al); },
                   [&](void *p) { ::operator delete[](p, al); });
        round_trip("sized aligned delete", n, a, [&] { return ::operator new(n, al); },
                   [&](void *p) { ::operator delete(p, n, al); });
        round_trip("sized aligned delete[]", n, a, [&] { return ::operator new[](n, al); },
                   [&](void *p) { ::operator delete[](p, n, al); });
        round_trip("new aligned nothrow", n, a, [&] { return ::operator new(n, al, std::nothrow); },
                   [&](void *p) { ::operator delete(p, al, std::nothrow); });
        round_trip("new[] aligned nothrow", n, a,
                   [&] { return ::operator new[](n, al, std::nothrow); },
                   [&](void *p) { ::operator delete[](p, al, std::nothrow); });
    }
    // Alignments up to a page, through new-expressions of over-aligned types.
    for (std::size_t align = 16; align <= 4096; align *= 2) {
        void *p = ::operator new(24, std::align_val_t{align});
        keep(p);
        CHECK(reinterpret_cast<std::uintptr_t>(p) % align == 0);
        ::operator delete(p, 24, std::align_val_t{align});
    }
    Wide *w = new Wide;
    Wide *ws = new Wide[7];
    keep(w);
    keep(ws);
    CHECK(reinterpret_cast<std::uintptr_t>(w) % 256 == 0);
    CHECK(reinterpret_cast<std::uintptr_t>(ws) % 256 == 0);
    delete w;
    delete[] ws;
    // Zero bytes: a unique, non-null block each time.
    void *z1 = ::operator new(0), *z2 = ::operator new(0);
    keep(z1);
    keep(z2);
    CHECK(z1 && z2 && z1 != z2);
    ::operator delete(z1);
    ::operator delete(z2, std::size_t{0});

    // Blocks deleted on another thread (keel: a foreign free, sized).
    std::vector<std::vector<int> *> made;
    for (int i = 0; i < 2000; i++) made.push_back(new std::vector<int>(i % 100, i));
    std::thread([&] {
        for (auto *v : made) delete v;
    }).join();

    // Sizes no allocator can serve. Plain new throws std::bad_alloc ...
    volatile std::size_t huge = SIZE_MAX / 2;
    bool threw = false;
    try {
        keep(::operator new(huge));
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);
    threw = false;
    try {
        keep(::operator new[](huge, std::align_val_t{64}));
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);
    // ... the nothrow forms return null ...
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    CHECK(::operator new[](huge, std::nothrow) == nullptr);
    CHECK(::operator new(huge, std::align_val_t{64}, std::nothrow) == nullptr);
    CHECK(new (std::nothrow) char[huge] == nullptr);
    // ... also a size so near SIZE_MAX that rounding it up to the alignment
    // wraps it to a small request (libstdc++'s aligned forms round before
    // they allocate, and on their own return a small block: keel's only) ...
    for (std::size_t a : {std::size_t{16}, std::size_t{64}, std::size_t{4096}}) {
        if (!in_use) break;
        for (std::size_t s : {SIZE_MAX, SIZE_MAX - 15, SIZE_MAX - a + 1}) {
            volatile std::size_t n = s;
            threw = false;
            try {
                keep(::operator new(n, std::align_val_t{a}));
            } catch (const std::bad_alloc &) {
                threw = true;
            }
            CHECK(threw);
            threw = false;
            try {
                keep(::operator new[](n, std::align_val_t{a}));
            } catch (const std::bad_alloc &) {
                threw = true;
            }
            CHECK(threw);
            CHECK(::operator new(n, std::align_val_t{a}, std::nothrow) == nullptr);
            CHECK(::operator new[](n, std::align_val_t{a}, std::nothrow) == nullptr);
        }
    }
    // ... and both call the new_handler between attempts: until it removes
    // itself (then new throws) or throws bad_alloc (then nothrow is null).
    std::set_new_handler(give_up_third_time);
    threw = false;
    try {
        keep(::operator new(huge));
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw && handler_calls == 3);
    handler_calls = 0;
    std::set_new_handler(throw_bad_alloc);
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    CHECK(handler_calls == 1);
    CHECK(::operator new[](huge, std::align_val_t{4096}, std::nothrow) == nullptr);
    CHECK(handler_calls == 2);
    std::set_new_handler(nullptr);
    // Allocation still works after all the failures.
    int *after = new int(7);
    keep(after);
    CHECK(*after == 7);
    delete after;
    std::printf("new_delete: ok\n");
    return 0;
}
