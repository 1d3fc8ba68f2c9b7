"""Writes a C file of N generated functions (loops, branches, a switch) and a
table of them, for `gcc -O2 -c`: a compiler's allocation pattern (many
short-lived trees, a few large arenas). Usage: gen_c.py N > big.c"""
import sys

n = int(sys.argv[1])
out = ["#include <stdint.h>"]
for i in range(n):
    out.append(f"""uint64_t f{i}(uint64_t x, const uint64_t *v, int n) {{
    uint64_t s = {i}u;
    for (int j = 0; j < n; j++) {{
        s = s * 6364136223846793005u + (v[j] ^ (x >> (j & 31)));
        if ((s & {i % 7 + 1}) == 0) s ^= x * {i + 3}u; else s += v[(j + {i}) % n];
    }}
    switch (x % 5) {{ case 0: s += {i}; break; case 1: s ^= {i * 7}; break; case 2: s -= x; break; default: s *= 3; }}
    return s + (x << {i % 13});
}}""")
out.append("uint64_t (*const table[])(uint64_t, const uint64_t *, int) = {"
           + ", ".join(f"f{i}" for i in range(n)) + "};")
print("\n".join(out))
