//! x86-64 leaves: AVX2 (with BMI1/BMI2, POPCNT, FMA) and AVX-512
//! (F, BW, CD, DQ, VL, VPOPCNTDQ), matching [`crate::cpu::Level`].

pub(crate) mod avx2;
pub(crate) mod avx512;

/// On the CPUs `cpu::avx2_prefetch` names (Intel), the AVX2 leaves read
/// columns of at least this many bytes with a software prefetch
/// [`PREFETCH_AHEAD`] bytes ahead of the loads: they come from L3 or DRAM,
/// and there the 256-bit loads alone keep too few lines in flight (AVX2's
/// u16 compare read 0.71-0.76 of the read pass at 128 Mi rows, 0.93-1.01
/// with the prefetch: `bench/results/2026-12-03-kernels-filter-prefetch-intel.md`;
/// on Zen 4 the prefetch only cost). Smaller columns skip it, as its extra
/// instruction a line cost up to 8% in L1. Under Miri 0, so the tests'
/// short columns run the prefetching loop.
pub(crate) const PREFETCH_MIN_BYTES: usize = if cfg!(miri) { 0 } else { 1 << 20 };

/// How far ahead of the loads [`prefetch_lines`] reaches: 2 KiB measured
/// best of 1, 2 and 4 KiB.
pub(crate) const PREFETCH_AHEAD: usize = 2048;

/// Prefetches (into all cache levels) the `bytes` bytes from `PREFETCH_AHEAD`
/// past `p`, a line (64 bytes) at a time. The addresses may lie past the
/// column's end: a prefetch never faults, and none is dereferenced.
#[inline(always)]
pub(crate) fn prefetch_lines(p: *const u8, bytes: usize) {
    prefetch_from(p.wrapping_add(PREFETCH_AHEAD), bytes);
}

/// Prefetches (into all cache levels) the `bytes` bytes from `p` itself, a
/// line at a time; as [`prefetch_lines`], the addresses need not be valid.
#[inline(always)]
pub(crate) fn prefetch_from(p: *const u8, bytes: usize) {
    let mut off = 0;
    while off < bytes {
        let q = p.wrapping_add(off);
        #[cfg(not(miri))]
        // SAFETY: `prefetcht0` is SSE, which every x86-64 has; it is a hint
        // that reads nothing the program can observe and cannot fault.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(q.cast())
        };
        #[cfg(miri)]
        let _ = q;
        off += 64;
    }
}
