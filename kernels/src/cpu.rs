//! CPU feature detection and the cached dispatch level.
//!
//! The best level the CPU supports is detected once and cached in one atomic
//! byte, as memchr caches its choice in one `AtomicPtr`: every kernel call
//! then costs one relaxed load and a branch. [`set_max_level`] (and, with
//! `std`, the `KEEL_KERNELS` environment variable) caps the level so tests and
//! benchmarks can compare levels in one process. Without `std`, detection is
//! static, from the `target_feature`s the crate was compiled with.

use core::sync::atomic::{AtomicU8, Ordering};

/// A dispatch level: which instruction set the kernels use.
///
/// Levels are ordered: a higher level on x86-64 implies every lower one.
/// [`Level::Neon`] is aarch64's only SIMD level.
///
/// ```
/// use keel_kernels::cpu::{self, Level};
/// assert!(cpu::level() <= cpu::detected());
/// assert!(cpu::supported(Level::Scalar));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    /// Portable scalar code: the oracle every other level is tested against.
    Scalar = 1,
    /// x86-64 AVX2 (with BMI1/BMI2, POPCNT, FMA, LZCNT).
    Avx2 = 2,
    /// x86-64 AVX-512 F, BW, CD, DQ, VL and VPOPCNTDQ, with everything
    /// [`Level::Avx2`] needs (its helpers run at this level too).
    Avx512 = 3,
    /// aarch64 Advanced SIMD.
    Neon = 4,
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 4] = [Level::Scalar, Level::Avx2, Level::Avx512, Level::Neon];

    /// The level's name as `KEEL_KERNELS` spells it.
    ///
    /// ```
    /// use keel_kernels::cpu::Level;
    /// assert_eq!(Level::Avx512.name(), "avx512");
    /// for l in Level::ALL {
    ///     assert_eq!(l.name().parse::<Level>(), Ok(l));
    ///     assert_eq!(l.to_string(), l.name());
    /// }
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Level::Scalar => "scalar",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
            Level::Neon => "neon",
        }
    }

    const fn from_u8(v: u8) -> Option<Level> {
        match v {
            1 => Some(Level::Scalar),
            2 => Some(Level::Avx2),
            3 => Some(Level::Avx512),
            4 => Some(Level::Neon),
            _ => None,
        }
    }
}

/// Parses a level's name as `KEEL_KERNELS` spells it (case-insensitive,
/// surrounding blanks ignored).
///
/// ```
/// use keel_kernels::cpu::Level;
/// assert_eq!("AVX2".parse::<Level>(), Ok(Level::Avx2));
/// assert!("sse9".parse::<Level>().is_err());
/// ```
impl core::str::FromStr for Level {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Level, crate::Error> {
        Level::ALL
            .into_iter()
            .find(|l| s.trim().eq_ignore_ascii_case(l.name()))
            .ok_or(crate::Error::InvalidArgument {
                what: "level: expected one of scalar, avx2, avx512, neon",
            })
    }
}

impl core::fmt::Display for Level {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether the running CPU supports `level`.
///
/// ```
/// use keel_kernels::cpu::{self, Level};
/// assert!(cpu::supported(cpu::detected()));
/// ```
pub fn supported(level: Level) -> bool {
    match level {
        Level::Scalar => true,
        Level::Avx2 | Level::Avx512 => {
            cfg!(target_arch = "x86_64") && detected() >= level && detected() != Level::Neon
        }
        Level::Neon => detected() == Level::Neon,
    }
}

/// 0 = not yet detected.
static DETECTED: AtomicU8 = AtomicU8::new(0);
/// 0 = no cap read yet; otherwise the effective level.
static EFFECTIVE: AtomicU8 = AtomicU8::new(0);
/// Where [`EFFECTIVE`] came from: a [`Source`] as `u8` (0 until set).
static SOURCE: AtomicU8 = AtomicU8::new(0);

/// Where the level in force came from.
///
/// ```
/// use keel_kernels::cpu::{self, Source};
/// let c = cpu::config();
/// assert!(c.level <= c.detected);
/// assert_eq!(cpu::set_max_level(c.level), c.level);
/// assert_eq!(cpu::config().source, Source::SetMaxLevel);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Source {
    /// The best level the CPU supports ([`detected`]).
    Detected = 1,
    /// The `KEEL_KERNELS` environment variable (clamped to what the CPU
    /// supports).
    Env = 2,
    /// A call to [`set_max_level`].
    SetMaxLevel = 3,
}

/// The dispatch settings in force and where they came from, as the pool
/// reports its own (`keel_pool::Config`).
///
/// ```
/// use keel_kernels::cpu;
/// let c = cpu::config();
/// assert_eq!(c.level, cpu::level());
/// assert_eq!(c.detected, cpu::detected());
/// // Unset or valid KEEL_KERNELS leaves no note.
/// # #[cfg(feature = "std")]
/// if std::env::var_os("KEEL_KERNELS").is_none() {
///     assert!(c.notes.is_empty());
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Config {
    /// The level kernels dispatch to ([`level`]).
    pub level: Level,
    /// The best level the CPU supports ([`detected`]).
    pub detected: Level,
    /// Where `level` came from.
    pub source: Source,
    /// `KEEL_KERNELS` as read at start-up (`None` when unset).
    #[cfg(feature = "std")]
    pub env: Option<std::string::String>,
    /// Settings that were ignored or adjusted, and why: an unknown
    /// `KEEL_KERNELS` value, or one above what the CPU supports. Each is
    /// also printed once on stderr, prefixed `keel-kernels: `.
    #[cfg(feature = "std")]
    pub notes: std::vec::Vec<std::string::String>,
}

/// The settings in force; reads `KEEL_KERNELS` first if nothing has yet.
///
/// ```
/// use keel_kernels::cpu;
/// let c = cpu::config();
/// assert!(c.level <= c.detected);
/// assert!(cpu::supported(c.level));
/// assert_eq!(c.detected, cpu::detected());
/// ```
pub fn config() -> Config {
    let level = level();
    let source = match SOURCE.load(Ordering::Relaxed) {
        2 => Source::Env,
        3 => Source::SetMaxLevel,
        _ => Source::Detected,
    };
    #[cfg(feature = "std")]
    let env = env_reading();
    Config {
        level,
        detected: detected(),
        source,
        #[cfg(feature = "std")]
        env: env.raw.clone(),
        #[cfg(feature = "std")]
        notes: env.notes.clone(),
    }
}

/// The best level the running CPU supports, detected once and cached.
///
/// ```
/// use keel_kernels::{cpu, Kernels};
/// let best = cpu::detected();
/// assert!(cpu::supported(best));
/// assert!(cpu::level() <= best);
/// assert_eq!(Kernels::at(best).map(Kernels::level), Some(best));
/// ```
pub fn detected() -> Level {
    match Level::from_u8(DETECTED.load(Ordering::Relaxed)) {
        Some(l) => l,
        None => {
            let l = detect();
            DETECTED.store(l as u8, Ordering::Relaxed);
            l
        }
    }
}

/// The level kernels dispatch to: [`detected`], capped by [`set_max_level`]
/// or by `KEEL_KERNELS` (read once, with `std`).
#[inline]
pub fn level() -> Level {
    match Level::from_u8(EFFECTIVE.load(Ordering::Relaxed)) {
        Some(l) => l,
        None => init_effective(),
    }
}

#[cold]
fn init_effective() -> Level {
    let mut l = detected();
    let mut source = Source::Detected;
    if let Some(cap) = env_cap() {
        l = clamp(cap, l);
        source = Source::Env;
    }
    // A racing set_max_level wins: only store if still uninitialized.
    match EFFECTIVE.compare_exchange(0, l as u8, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => {
            // Only the winner of the store names its source; a racing
            // set_max_level stored its own.
            let _ = SOURCE.compare_exchange(0, source as u8, Ordering::Relaxed, Ordering::Relaxed);
            l
        }
        Err(v) => Level::from_u8(v).unwrap_or(Level::Scalar),
    }
}

/// Caps the dispatch level at `max` (clamped to what the CPU supports) and
/// returns the level now in force. `set_max_level(detected())` lifts the cap.
///
/// ```
/// use keel_kernels::cpu::{self, Level};
/// let before = cpu::level();
/// assert_eq!(cpu::set_max_level(Level::Scalar), Level::Scalar);
/// cpu::set_max_level(before);
/// ```
pub fn set_max_level(max: Level) -> Level {
    let l = clamp(max, detected());
    EFFECTIVE.store(l as u8, Ordering::Relaxed);
    SOURCE.store(Source::SetMaxLevel as u8, Ordering::Relaxed);
    l
}

/// The highest supported level not above `want` (Neon only maps to itself).
///
/// ```
/// use keel_kernels::cpu::{clamp, Level};
/// assert_eq!(clamp(Level::Avx512, Level::Avx2), Level::Avx2);
/// assert_eq!(clamp(Level::Avx2, Level::Avx512), Level::Avx2);
/// assert_eq!(clamp(Level::Neon, Level::Neon), Level::Neon);
/// assert_eq!(clamp(Level::Neon, Level::Avx512), Level::Scalar);
/// assert_eq!(clamp(Level::Avx2, Level::Neon), Level::Scalar);
/// ```
pub fn clamp(want: Level, best: Level) -> Level {
    match (want, best) {
        (Level::Neon, Level::Neon) => Level::Neon,
        (Level::Neon, _) | (_, Level::Neon) => Level::Scalar,
        _ => want.min(best),
    }
}

/// `KEEL_KERNELS` as read once, what it asks for, and what was said about it.
#[cfg(feature = "std")]
struct EnvReading {
    raw: Option<std::string::String>,
    cap: Option<Level>,
    notes: std::vec::Vec<std::string::String>,
}

/// Reads `KEEL_KERNELS` once per process; the first reader prints its notes
/// on stderr, so each is said exactly once.
#[cfg(feature = "std")]
fn env_reading() -> &'static EnvReading {
    static READ: std::sync::OnceLock<EnvReading> = std::sync::OnceLock::new();
    READ.get_or_init(|| {
        let raw = std::env::var_os("KEEL_KERNELS").map(|v| v.to_string_lossy().into_owned());
        let mut notes = std::vec::Vec::new();
        let cap = match raw.as_deref() {
            None => None,
            Some(v) => match v.parse::<Level>() {
                Ok(want) => {
                    let got = clamp(want, detected());
                    if got != want {
                        notes.push(std::format!(
                            "KEEL_KERNELS={v:?} asks for {want}, which this CPU does not support \
                             (it supports up to {}): running {got}",
                            detected()
                        ));
                    }
                    Some(want)
                }
                Err(e) => {
                    notes.push(std::format!(
                        "KEEL_KERNELS={v:?} ignored: {e}; running {}",
                        detected()
                    ));
                    None
                }
            },
        };
        for n in &notes {
            std::eprintln!("keel-kernels: {n}");
        }
        EnvReading { raw, cap, notes }
    })
}

#[cfg(feature = "std")]
fn env_cap() -> Option<Level> {
    env_reading().cap
}

#[cfg(not(feature = "std"))]
fn env_cap() -> Option<Level> {
    None
}

/// 0 = not yet read, else [`sum_plan`]'s bits.
static SUM_PLAN: AtomicU8 = AtomicU8::new(0);

/// [`SUM_PLAN`]'s bits: read; the wide loops; VNNI; 256-bit from DRAM;
/// 256-bit 64-bit sums from L3 sizes; the AVX2 leaves' prefetch; VBMI2;
/// a fast `pext`.
const PLAN_READ: u8 = 1;
const PLAN_WIDE: u8 = 2;
const PLAN_VNNI: u8 = 4;
const PLAN_DRAM_256: u8 = 8;
const PLAN_L3_256: u8 = 16;
const PLAN_AVX2_PREFETCH: u8 = 32;
const PLAN_VBMI2: u8 = 64;
const PLAN_FAST_PEXT: u8 = 128;

/// Whether unmasked sums at the AVX-512 level run the wide loops
/// (`arch::x86_64::avx512::agg::sum_all_*`: eight 512-bit accumulators and
/// no block masks) rather than the masked leaves and, past
/// `agg::SUM_STREAM_FROM_BYTES`, the 128-bit loop. A choice of speed, not
/// of result (every loop gives the scalar twin's bits), made by vendor, as
/// measured: on an Intel Xeon (family 6 model 207) the 512-bit loop with
/// eight accumulators read an i64 column from DRAM 1.4x faster than a
/// 128-bit loop, where on Zen 4 the 128-bit loop was the faster (see
/// `SUM_STREAM_FROM_BYTES`); AMD CPUs keep the paths measured there. Read
/// once and cached. Under Miri (static detection) the wide loops are chosen,
/// so that Miri checks them; without `std`, not.
#[inline]
pub(crate) fn wide_sums() -> bool {
    sum_plan() & PLAN_WIDE != 0
}

/// Whether the CPU has AVX-512 VNNI, so the unmasked exact `i32` sum at
/// the AVX-512 level adds its high halves with `vpdpwssd`: two vector
/// instructions per 16 rows where the shifting loop takes three. On every
/// vendor (it was measured on Intel first; on Zen 4 the unmasked loop with
/// it read L1 at 0.65-0.73 of a wrapping loop where the masked leaf read
/// 0.40-0.65: `bench/results/2026-12-04-kernels-sums-32-zen4.md`).
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code)
)]
#[inline]
pub(crate) fn sums_vnni() -> bool {
    sum_plan() & PLAN_VNNI != 0
}

/// Whether the CPU has AVX-512 VBMI2, so the AVX-512 level takes a 64-row
/// word's set positions with one byte compress (`vpcompressb`): in
/// `select_into` (`arch::x86_64::avx512::bitmap::select_vbmi2`), where the
/// level otherwise takes the AVX2 level's table form or loops once per set
/// bit, and in the masked HyperLogLog
/// add's walk (`arch::x86_64::avx512::hll::add_u64_masked_vbmi2`), which
/// otherwise takes four 16-row compresses, or a `tzcnt` loop for a word of
/// a few rows. On Zen 4 (family 25 model 17) it cut the masked add's time
/// at 1 in 10 rows selected by 12%
/// (`bench/results/2026-12-06-kernels-hll-vbmi2-zen4.md`), and made
/// `select_into` 1.9-9.3x as fast as the loop from 1 in 10 rows set, 1.4x
/// at 1 in 64 from 16 Mi rows
/// (`bench/results/2026-12-06-kernels-select-vbmi2-zen4.md`). Zen 4, Ice
/// Lake and later Intel cores have it; Skylake-SP and Cascade Lake do not.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code)
)]
#[inline]
pub(crate) fn vbmi2() -> bool {
    sum_plan() & PLAN_VBMI2 != 0
}

/// Whether BMI2's `pext` is fast (a few cycles) on this CPU, so the bitmap
/// compaction (`bitmap::compact`) takes it at the AVX2 and AVX-512 levels:
/// on Intel cores and on AMD from Zen 3 (family 25) on. Zen 1 and Zen 2
/// (family 23, and Hygon's family 24) run it in microcode, slower the more
/// bits the mask sets; there the run loop takes its place.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code)
)]
#[inline]
pub(crate) fn fast_pext() -> bool {
    sum_plan() & PLAN_FAST_PEXT != 0
}

/// Whether the AVX2 level's streaming leaves (the filters of every type,
/// min/max, the 32-bit sums) prefetch columns of
/// `arch::x86_64::PREFETCH_MIN_BYTES` or more, 2 KiB ahead of the loads.
/// On an Intel model 167 guest (`KEEL_KERNELS=avx2`), from DRAM, `lt` to a
/// bitmap went from 0.69-0.77 of the read pass to 0.92-1.13 with it, u16
/// compare from 0.71-0.76 to 0.93-1.01, the exact `i32` sum from 0.66-0.68
/// of arrow's to 1.01 (`bench/results/2026-12-03-kernels-filter-prefetch-intel.md`).
/// On Zen 4 (family 25 model 17, `KEEL_KERNELS=avx2`) every one of them
/// was as fast or faster without it: at 128 Mi rows `lt` on f64 read
/// 0.45-0.85 of the read pass with it and 0.76-1.06 without, u8/u16
/// compare 0.56-0.76 and 0.74-0.91, min/max 0.64-0.89 and 0.87-1.01 (i64
/// `min` 0.64-0.87 and 0.71-0.93: level), the exact `i32` sum 0.71-0.93x
/// arrow's and 0.95-1.05x
/// (`bench/results/2026-12-04-kernels-avx2-prefetch-zen4.md`). So Intel
/// only (Zen 3, which runs this level, follows Zen 4 by vendor: not
/// measured).
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2")),
    allow(dead_code)
)]
#[inline]
pub(crate) fn avx2_prefetch() -> bool {
    sum_plan() & PLAN_AVX2_PREFETCH != 0
}

/// Whether the AVX-512 grouped sums (`arch::x86_64::avx512::grouped`)
/// prefetch each value and weight column 2 KiB ahead of their loads, at
/// every column size: on Intel CPUs, the rule of [`avx2_prefetch`]. On an
/// Intel model 167 guest TPC-H Q1's plan, which hands them 4096 rows at a
/// time of columns read from memory, ran SF 1 in 0.75 of the time with it;
/// the grouped bench's 1 Mi-row sums were level, and in L1 (4 Ki rows)
/// 0-2% slower (`bench/results/2026-12-07-kernels-grouped-prefetch-intel.md`).
/// Not measured on AMD CPUs, which keep the loop without it.
#[cfg_attr(
    not(all(target_arch = "x86_64", target_feature = "sse2", feature = "alloc")),
    allow(dead_code)
)]
#[inline]
pub(crate) fn grouped_prefetch() -> bool {
    avx2_prefetch()
}

/// Whether streaming kernels at the AVX-512 level take the AVX2 leaves for
/// columns past `agg::SUM_STREAM_FROM_BYTES`: unmasked sums of 4- and
/// 8-byte values (`agg::sum_level`) and filters of 8-byte values
/// (`filter::filter_level`), through [`dram_level`]. As measured on an Intel Xeon that reports
/// family 6 model 167 (a 2-core KVM guest with AVX-512; its L3 reads as
/// 480 MiB, so the host may be a later part than that model number
/// names): from DRAM the 256-bit leaves read i64 and f64 sums 1.12-1.2x
/// as fast as either 512-bit form (the wide loop, the masked leaf), i32
/// and f32 sums as fast or up to 1.18x, and 64-bit filters 1.25-1.3x; in
/// cache, up to 32 MiB columns, and for narrower filters they are level or
/// slower. On model 207 the wide sums were the faster from DRAM
/// (`bench/results/2026-12-03-kernels-sums-dram-intel.md` and the file it
/// cites). So this holds on model 167 only, the one measured so.
#[inline]
pub(crate) fn dram_256() -> bool {
    sum_plan() & PLAN_DRAM_256 != 0
}

/// Whether unmasked sums of 8-byte values at the AVX-512 level take the
/// AVX2 leaf for columns of `agg::SUM_256_FROM_BYTES` (16 MiB, half the
/// L3 of a Zen 4 CCD) or more, and those of 4-byte integers in a band of
/// sizes, through `agg::sum_level`. As measured on an
/// AMD EPYC that reports family 25 model 17 (Zen 4, a 2-core KVM guest):
/// from 2 Mi to 7 Mi rows (16-56 MiB) the 256-bit leaf read i64 and f64
/// sums as fast as the 512-bit one or up to 1.25x faster in every run,
/// and the 512-bit leaf lost to arrow at 6-7 Mi rows; up to 1 Mi rows
/// they tie, and from `agg::SUM_STREAM_FROM_BYTES` on both give way to
/// the 128-bit loop; the filters (the AVX2 64-bit compares were the
/// slower at every size) keep AVX-512
/// (`bench/results/2026-12-04-kernels-sums-l3-zen4.md`). Exact sums of
/// 4-byte integers take the AVX2 leaves from `agg::SUM32_256_FROM_BYTES`
/// (8 MiB) up to `agg::SUM32_256_BELOW_BYTES` (24 MiB), where they read
/// 1.03-1.28x the 512-bit leaves' speed at 3 and 4 Mi rows, and keep
/// AVX-512 elsewhere (at the tree of 2026-12-04 the 512-bit leaf was
/// 1.3-1.5x the 256-bit one there; the VNNI and unmasked loops came
/// since: `bench/results/2026-12-08-kernels-sums-32-l3-zen4.md`). So this
/// holds on AMD family 25, the Zen 4 measured.
#[inline]
pub(crate) fn l3_256() -> bool {
    sum_plan() & PLAN_L3_256 != 0
}

/// The level a streaming kernel reading `bytes` bytes runs at: `level`,
/// or AVX2 in place of AVX-512 from `agg::SUM_STREAM_FROM_BYTES` on where
/// [`dram_256`] holds. Callers say which value types take it
/// (`agg::sum_level`, `filter::filter_level`).
#[inline]
pub(crate) fn dram_level(level: Level, bytes: usize) -> Level {
    if level == Level::Avx512 && bytes >= crate::agg::SUM_STREAM_FROM_BYTES && dram_256() {
        Level::Avx2
    } else {
        level
    }
}

/// The sum plan's bits, read once and cached.
#[inline]
fn sum_plan() -> u8 {
    match SUM_PLAN.load(Ordering::Relaxed) {
        0 => {
            let c = plan_for(is_intel(), has_vnni(), family_model())
                | if has_vbmi2() { PLAN_VBMI2 } else { 0 };
            SUM_PLAN.store(c, Ordering::Relaxed);
            c
        }
        c => c,
    }
}

/// The plan's bits for a CPU: Intel or not, with VNNI or not, its cpuid
/// (family, model). AMD family 25 is Zen 3 and Zen 4 (Zen 5 is family 26);
/// of these only Zen 4 has AVX-512, so only it reaches [`l3_256`]'s rule.
fn plan_for(intel: bool, vnni: bool, family_model: (u32, u32)) -> u8 {
    let mut c = PLAN_READ;
    if vnni {
        c |= PLAN_VNNI;
    }
    if intel || family_model.0 >= 25 {
        c |= PLAN_FAST_PEXT;
    }
    if intel {
        c |= PLAN_WIDE | PLAN_AVX2_PREFETCH;
        if family_model == (6, 167) {
            c |= PLAN_DRAM_256;
        }
    } else if family_model.0 == 25 {
        c |= PLAN_L3_256;
    }
    c
}

/// cpuid leaf 1's display family and model (the extended fields folded in
/// as the vendors document: the extended model for families 6 and 15).
#[cfg(all(target_arch = "x86_64", feature = "std", not(miri)))]
fn family_model() -> (u32, u32) {
    // SAFETY: leaf 1 exists on every x86-64 CPU; cpuid touches no memory.
    #[allow(unused_unsafe)]
    let a = unsafe { core::arch::x86_64::__cpuid(1) }.eax;
    decode_family_model(a)
}

/// Without runtime detection, no model (static choices only).
#[cfg(not(all(target_arch = "x86_64", feature = "std", not(miri))))]
fn family_model() -> (u32, u32) {
    (0, 0)
}

/// Decodes cpuid leaf 1's `eax` into (family, model).
#[cfg_attr(
    not(all(target_arch = "x86_64", feature = "std", not(miri))),
    allow(dead_code)
)]
fn decode_family_model(eax: u32) -> (u32, u32) {
    let base_family = (eax >> 8) & 0xf;
    let base_model = (eax >> 4) & 0xf;
    let family = if base_family == 0xf {
        base_family + ((eax >> 20) & 0xff)
    } else {
        base_family
    };
    let model = if base_family == 6 || base_family == 0xf {
        base_model | ((eax >> 12) & 0xf0)
    } else {
        base_model
    };
    (family, model)
}

#[cfg(all(target_arch = "x86_64", feature = "std", not(miri)))]
fn has_vnni() -> bool {
    extern crate std;
    std::is_x86_feature_detected!("avx512vnni")
}

#[cfg(not(all(target_arch = "x86_64", feature = "std", not(miri))))]
fn has_vnni() -> bool {
    false
}

#[cfg(all(target_arch = "x86_64", feature = "std", not(miri)))]
fn has_vbmi2() -> bool {
    extern crate std;
    std::is_x86_feature_detected!("avx512vbmi2")
}

/// Without runtime detection, what the build was told the target has.
#[cfg(not(all(target_arch = "x86_64", feature = "std", not(miri))))]
fn has_vbmi2() -> bool {
    cfg!(target_feature = "avx512vbmi2")
}

#[cfg(all(target_arch = "x86_64", feature = "std", not(miri)))]
fn is_intel() -> bool {
    // cpuid leaf 0: the vendor string in ebx, edx, ecx. (`__cpuid` is an
    // unsafe fn in older toolchains, a safe one in newer.)
    // SAFETY: leaf 0 exists on every x86-64 CPU; cpuid touches no memory.
    #[allow(unused_unsafe)]
    let r = unsafe { core::arch::x86_64::__cpuid(0) };
    let le = u32::from_le_bytes;
    (r.ebx, r.edx, r.ecx) == (le(*b"Genu"), le(*b"ineI"), le(*b"ntel"))
}

#[cfg(all(target_arch = "x86_64", miri))]
fn is_intel() -> bool {
    true
}

#[cfg(not(any(
    all(target_arch = "x86_64", feature = "std", not(miri)),
    all(target_arch = "x86_64", miri)
)))]
fn is_intel() -> bool {
    false
}

#[cfg(all(target_arch = "x86_64", feature = "std", not(miri)))]
fn detect() -> Level {
    extern crate std;
    use std::is_x86_feature_detected as has;
    if has!("avx512f")
        && has!("avx512bw")
        && has!("avx512cd")
        && has!("avx512dq")
        && has!("avx512vl")
        && has!("avx512vpopcntdq")
        && has!("avx2")
        && has!("bmi1")
        && has!("fma")
        && has!("bmi2")
        && has!("popcnt")
        && has!("lzcnt")
    {
        Level::Avx512
    } else if has!("avx2")
        && has!("bmi1")
        && has!("bmi2")
        && has!("popcnt")
        && has!("fma")
        && has!("lzcnt")
    {
        Level::Avx2
    } else {
        Level::Scalar
    }
}

#[cfg(all(target_arch = "x86_64", any(not(feature = "std"), miri)))]
fn detect() -> Level {
    // Static dispatch: what the build was told the target has. Under Miri this
    // is the scalar level unless the build enabled the features.
    if cfg!(all(
        target_feature = "avx512f",
        target_feature = "avx512bw",
        target_feature = "avx512cd",
        target_feature = "avx512dq",
        target_feature = "avx512vl",
        target_feature = "avx512vpopcntdq",
        target_feature = "avx2",
        target_feature = "bmi1",
        target_feature = "fma",
        target_feature = "bmi2",
        target_feature = "popcnt",
        target_feature = "lzcnt"
    )) {
        Level::Avx512
    } else if cfg!(all(
        target_feature = "avx2",
        target_feature = "bmi1",
        target_feature = "bmi2",
        target_feature = "popcnt",
        target_feature = "fma",
        target_feature = "lzcnt"
    )) {
        Level::Avx2
    } else {
        Level::Scalar
    }
}

#[cfg(target_arch = "aarch64")]
fn detect() -> Level {
    // Advanced SIMD is mandatory on aarch64 Linux/macOS targets.
    if cfg!(target_feature = "neon") {
        Level::Neon
    } else {
        Level::Scalar
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect() -> Level {
    Level::Scalar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cpuid leaf 1 signatures decode to the documented family and model.
    #[test]
    fn family_and_model_decode_as_documented() {
        // Family 6 model 167 stepping 1; Emerald Rapids (6, 207); Zen 4
        // (family 0x19 = 15 + 10, model 0x11); a family-5 part (no
        // extended model).
        assert_eq!(decode_family_model(0x000A_0671), (6, 167));
        assert_eq!(decode_family_model(0x000C_06F2), (6, 207));
        assert_eq!(decode_family_model(0x00A1_0F11), (25, 17));
        assert_eq!(decode_family_model(0x0001_0543), (5, 4));
    }

    /// The sum plan follows the CPUs it was measured on, and no other.
    #[test]
    fn sum_plans_follow_the_measured_cpus() {
        let has = |c: u8, bit: u8| c & bit != 0;
        // Intel: the wide loops and the AVX2 prefetch everywhere,
        // VNNI where present, 256-bit from DRAM on model 167 only.
        let c = plan_for(true, false, (6, 167));
        assert!(has(c, PLAN_WIDE) && has(c, PLAN_DRAM_256) && !has(c, PLAN_VNNI));
        assert!(has(c, PLAN_AVX2_PREFETCH) && !has(c, PLAN_L3_256));
        let c = plan_for(true, true, (6, 207));
        assert!(has(c, PLAN_WIDE) && has(c, PLAN_VNNI) && !has(c, PLAN_DRAM_256));
        // AMD family 25 (Zen 3, Zen 4): the L3 rule and VNNI where present
        // (Zen 4), no wide loops, no AVX2 prefetch.
        let c = plan_for(false, true, (25, 17));
        assert!(has(c, PLAN_L3_256) && has(c, PLAN_VNNI) && !has(c, PLAN_WIDE));
        assert!(!has(c, PLAN_DRAM_256) && !has(c, PLAN_AVX2_PREFETCH));
        let c = plan_for(false, false, (25, 1));
        assert_eq!(c, PLAN_READ | PLAN_L3_256 | PLAN_FAST_PEXT);
        // Zen 5 (26), unmeasured: VNNI where present, and its `pext`.
        assert_eq!(plan_for(false, false, (26, 2)), PLAN_READ | PLAN_FAST_PEXT);
        assert_eq!(
            plan_for(false, true, (26, 2)),
            PLAN_READ | PLAN_VNNI | PLAN_FAST_PEXT
        );
        // Zen 2 (23) and Hygon (24): a microcoded `pext`, VNNI where present.
        for fm in [(23, 49), (24, 0)] {
            assert_eq!(plan_for(false, false, fm), PLAN_READ, "{fm:?}");
            assert_eq!(plan_for(false, true, fm), PLAN_READ | PLAN_VNNI, "{fm:?}");
        }
        // Every Intel CPU with BMI2 has a fast `pext`.
        assert!(has(plan_for(true, false, (6, 60)), PLAN_FAST_PEXT));
        // Every plan is nonzero: 0 means not yet read.
        assert_ne!(plan_for(false, false, (0, 0)), 0);
    }

    #[test]
    fn clamp_never_exceeds_support() {
        for want in Level::ALL {
            for best in Level::ALL {
                let c = clamp(want, best);
                assert!(
                    c == Level::Scalar || c <= best && c <= want,
                    "{want} {best} -> {c}"
                );
            }
        }
    }

    #[test]
    fn parse_round_trips() {
        for l in Level::ALL {
            assert_eq!(l.name().parse(), Ok(l));
            assert_eq!(l.name().to_uppercase().parse(), Ok(l));
        }
        assert!("".parse::<Level>().is_err());
    }
}
