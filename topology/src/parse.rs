//! Pure parsers for the text formats Linux uses in sysfs and procfs.
//!
//! They are `no_std`, allocate only for the result, never panic, and return a
//! [`ParseError`] that carries the offending text. The fuzz targets call them
//! directly on arbitrary input.

use alloc::string::String;
use core::fmt;

use crate::CpuSet;

/// The highest CPU index a parser accepts. Linux's `NR_CPUS` tops out at 8192
/// today; the margin keeps a hostile `0-4294967295` from allocating gigabytes.
///
/// ```
/// use keel_topology::parse::{MAX_CPU, parse_cpulist};
/// assert_eq!(parse_cpulist(&MAX_CPU.to_string())?.first(), Some(MAX_CPU));
/// assert!(parse_cpulist(&format!("0-{}", MAX_CPU + 1)).is_err());
/// # Ok::<(), keel_topology::parse::ParseError>(())
/// ```
pub const MAX_CPU: usize = (1 << 20) - 1;

/// Text that does not have the expected format.
///
/// ```
/// use keel_topology::parse::{ParseError, parse_cpulist};
/// let err: ParseError = parse_cpulist("0-x").unwrap_err();
/// assert_eq!((err.what, err.text.as_str()), ("cpulist", "0-x"));
/// assert_eq!(err.reason, "not a decimal number");
/// assert_eq!(err.to_string(), r#"invalid cpulist "0-x": not a decimal number"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What was being parsed (`cpulist`, `cpumask`, `cache size`, ...).
    pub what: &'static str,
    /// The offending text (cut to 200 bytes so errors stay printable).
    pub text: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

impl ParseError {
    pub(crate) fn new(what: &'static str, text: &str, reason: &'static str) -> Self {
        let mut end = text.len().min(200);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        ParseError {
            what,
            text: String::from(&text[..end]),
            reason,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} {:?}: {}", self.what, self.text, self.reason)
    }
}

impl core::error::Error for ParseError {}

fn parse_index(what: &'static str, full: &str, s: &str) -> Result<usize, ParseError> {
    if s.is_empty() {
        return Err(ParseError::new(what, full, "empty number"));
    }
    let mut n: usize = 0;
    for b in s.bytes() {
        if !b.is_ascii_digit() {
            return Err(ParseError::new(what, full, "not a decimal number"));
        }
        n = n * 10 + (b - b'0') as usize;
        if n > MAX_CPU {
            return Err(ParseError::new(what, full, "CPU index too large"));
        }
    }
    Ok(n)
}

/// Parses a Linux cpulist (`0-3,8,10-11`), as in `/sys/devices/system/cpu/online`.
///
/// Surrounding whitespace is ignored; empty text is the empty set. Ranges must
/// not run backwards and indexes must not exceed [`MAX_CPU`].
///
/// ```
/// use keel_topology::parse::parse_cpulist;
/// let s = parse_cpulist("0-3,8,10-11\n").unwrap();
/// assert_eq!(s.len(), 7);
/// assert_eq!(s.to_string(), "0-3,8,10-11");
/// assert!(parse_cpulist("3-1").is_err());
/// ```
pub fn parse_cpulist(text: &str) -> Result<CpuSet, ParseError> {
    const WHAT: &str = "cpulist";
    let t = text.trim();
    // Bitmap words, filled a word at a time: bit by bit, a 4 KiB file of
    // `0-1048575,` repeated took seconds.
    let mut words: alloc::vec::Vec<u64> = alloc::vec::Vec::new();
    if t.is_empty() {
        return Ok(CpuSet::new());
    }
    let mut ranges: alloc::vec::Vec<(usize, usize)> = alloc::vec::Vec::new();
    for part in t.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (parse_index(WHAT, text, a)?, parse_index(WHAT, text, b)?),
            None => {
                let a = parse_index(WHAT, text, part)?;
                (a, a)
            }
        };
        if b < a {
            return Err(ParseError::new(WHAT, text, "range runs backwards"));
        }
        ranges.push((a, b));
    }
    // A kernel's list is ascending and disjoint, so each word is filled
    // once; any other is sorted and merged first, so that one range
    // repeated (`0-1048575`, 16 Ki words, thousands of times) costs its
    // words once, not once a copy.
    if ranges.windows(2).any(|w| w[1].0 <= w[0].1) {
        ranges.sort_unstable();
        let mut merged: alloc::vec::Vec<(usize, usize)> = alloc::vec::Vec::new();
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        ranges = merged;
    }
    for (a, b) in ranges {
        set_range(&mut words, a, b);
    }
    Ok(CpuSet::from_words(words))
}

/// Sets bits `a..=b` of a bitmap, growing it as needed.
fn set_range(words: &mut alloc::vec::Vec<u64>, a: usize, b: usize) {
    if words.len() <= b / 64 {
        words.resize(b / 64 + 1, 0);
    }
    let (wa, wb) = (a / 64, b / 64);
    // Bits from a % 64 up, and up to b % 64, within their words.
    let lo = !0u64 << (a % 64);
    let hi = !0u64 >> (63 - b % 64);
    if wa == wb {
        words[wa] |= lo & hi;
        return;
    }
    words[wa] |= lo;
    for w in &mut words[wa + 1..wb] {
        *w = !0;
    }
    words[wb] |= hi;
}

/// Parses a Linux hex cpumask (`ff,ffffffff`), as in `shared_cpu_map` or
/// `thread_siblings`: comma-separated 32-bit words, most significant first.
///
/// Surrounding whitespace and an optional `0x` are ignored; empty text is the
/// empty set.
///
/// ```
/// use keel_topology::parse::parse_cpumask;
/// let s = parse_cpumask("00000001,00000003").unwrap();
/// assert_eq!(s.to_string(), "0-1,32");
/// assert!(parse_cpumask("xyz").is_err());
/// ```
pub fn parse_cpumask(text: &str) -> Result<CpuSet, ParseError> {
    const WHAT: &str = "cpumask";
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    if t.is_empty() {
        return Ok(CpuSet::new());
    }
    let groups = t.split(',').count();
    if groups * 32 > MAX_CPU + 1 {
        return Err(ParseError::new(WHAT, text, "mask wider than the CPU limit"));
    }
    let mut words = alloc::vec![0u64; groups.div_ceil(2)];
    // Group k counted from the right holds CPUs 32k..32k+31.
    for (k, g) in t.rsplit(',').enumerate() {
        if g.is_empty() || g.len() > 8 {
            return Err(ParseError::new(
                WHAT,
                text,
                "each group must be 1 to 8 hex digits",
            ));
        }
        let v = u32::from_str_radix(g, 16)
            .map_err(|_| ParseError::new(WHAT, text, "not hexadecimal"))?;
        // `from_str_radix` accepts a leading `+`; sysfs never writes one.
        if g.starts_with('+') {
            return Err(ParseError::new(WHAT, text, "not hexadecimal"));
        }
        words[k / 2] |= (v as u64) << (32 * (k % 2));
    }
    Ok(CpuSet::from_words(words))
}

/// Parses a cache size as sysfs writes it (`32K`, `32768K`, `1M`, `8192`):
/// a decimal number with an optional `K`, `M` or `G` suffix (binary units),
/// returned in bytes.
///
/// ```
/// use keel_topology::parse::parse_cache_size;
/// assert_eq!(parse_cache_size("32768K\n"), Ok(32 << 20));
/// assert_eq!(parse_cache_size("2M"), Ok(2 << 20));
/// assert!(parse_cache_size("12Q").is_err());
/// ```
pub fn parse_cache_size(text: &str) -> Result<u64, ParseError> {
    const WHAT: &str = "cache size";
    let t = text.trim();
    let (digits, shift) = match t.as_bytes().last() {
        Some(b'K' | b'k') => (&t[..t.len() - 1], 10),
        Some(b'M' | b'm') => (&t[..t.len() - 1], 20),
        Some(b'G' | b'g') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n = parse_u64(digits).ok_or_else(|| ParseError::new(WHAT, text, "not a size"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| ParseError::new(WHAT, text, "size overflows 64 bits"))
}

/// Parses a decimal integer (optionally negative), ignoring surrounding
/// whitespace, as in `core_id` or `physical_package_id` (which is `-1` when
/// the kernel has none).
///
/// ```
/// use keel_topology::parse::parse_int;
/// assert_eq!(parse_int("-1\n"), Ok(-1));
/// assert_eq!(parse_int("-9223372036854775808"), Ok(i64::MIN));
/// assert!(parse_int("9223372036854775808").is_err());
/// assert!(parse_int("1.5").is_err());
/// ```
pub fn parse_int(text: &str) -> Result<i64, ParseError> {
    let t = text.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t),
    };
    // A negative magnitude reaches 2^63 (`i64::MIN`).
    let n = parse_u64(digits)
        .filter(|&n| n <= i64::MAX as u64 + u64::from(neg))
        .ok_or_else(|| ParseError::new("integer", text, "not a decimal integer"))?;
    Ok(if neg {
        (n as i64).wrapping_neg()
    } else {
        n as i64
    })
}

/// Parses a non-negative decimal integer, ignoring surrounding whitespace.
///
/// ```
/// use keel_topology::parse::parse_uint;
/// assert_eq!(parse_uint("4096\n"), Ok(4096));
/// assert!(parse_uint("-1").is_err());
/// ```
pub fn parse_uint(text: &str) -> Result<u64, ParseError> {
    parse_u64(text.trim())
        .ok_or_else(|| ParseError::new("unsigned integer", text, "not a decimal number"))
}

fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for b in s.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    Some(n)
}

/// Parses a hexadecimal 64-bit value with or without `0x`, as in ARM's
/// `midr_el1`: at most 16 significant digits, after any number of leading
/// zeros (a value printed padded wider still fits).
///
/// ```
/// use keel_topology::parse::parse_hex_u64;
/// assert_eq!(parse_hex_u64("0x00000000410fd4f1\n"), Ok(0x410f_d4f1));
/// assert_eq!(parse_hex_u64("0x0000ffffffffffffffff"), Ok(u64::MAX));
/// assert!(parse_hex_u64("0x10000000000000000").is_err()); // 65 bits
/// assert!(parse_hex_u64("0x").is_err());
/// ```
pub fn parse_hex_u64(text: &str) -> Result<u64, ParseError> {
    let t = text.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if t.is_empty()
        || t.trim_start_matches('0').len() > 16
        || !t.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(ParseError::new(
            "hex value",
            text,
            "not a 64-bit hexadecimal value",
        ));
    }
    u64::from_str_radix(t, 16).map_err(|_| ParseError::new("hex value", text, "not hexadecimal"))
}

/// A CPU quota from cgroup v2 `cpu.max` (`150000 100000`, or `max 100000`),
/// as a number of CPUs; `None` when unlimited.
///
/// ```
/// use keel_topology::parse::parse_cpu_max;
/// assert_eq!(parse_cpu_max("150000 100000\n"), Ok(Some(1.5)));
/// assert_eq!(parse_cpu_max("max 100000"), Ok(None));
/// assert!(parse_cpu_max("150000 0").is_err());
/// assert!(parse_cpu_max("0 100000").is_err());
/// ```
pub fn parse_cpu_max(text: &str) -> Result<Option<f64>, ParseError> {
    const WHAT: &str = "cpu.max";
    let mut it = text.split_whitespace();
    let (q, p) = match (it.next(), it.next(), it.next()) {
        (Some(q), Some(p), None) => (q, p),
        (Some(q), None, None) => (q, "100000"),
        _ => return Err(ParseError::new(WHAT, text, "expected `QUOTA PERIOD`")),
    };
    let p = parse_u64(p).ok_or_else(|| ParseError::new(WHAT, text, "period is not a number"))?;
    if p == 0 {
        return Err(ParseError::new(WHAT, text, "period is zero"));
    }
    if q == "max" {
        return Ok(None);
    }
    let q = parse_u64(q).ok_or_else(|| ParseError::new(WHAT, text, "quota is not a number"))?;
    if q == 0 {
        // The kernel refuses a quota under 1 ms.
        return Err(ParseError::new(WHAT, text, "quota is zero"));
    }
    Ok(Some(q as f64 / p as f64))
}

/// A CPU quota from cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us`,
/// as a number of CPUs; `None` when unlimited (quota `-1`).
///
/// ```
/// use keel_topology::parse::parse_cfs_quota;
/// assert_eq!(parse_cfs_quota("200000\n", "100000\n"), Ok(Some(2.0)));
/// assert_eq!(parse_cfs_quota("-1", "100000"), Ok(None));
/// ```
pub fn parse_cfs_quota(quota: &str, period: &str) -> Result<Option<f64>, ParseError> {
    let q = parse_int(quota).map_err(|e| ParseError {
        what: "cpu.cfs_quota_us",
        ..e
    })?;
    let p = parse_int(period).map_err(|e| ParseError {
        what: "cpu.cfs_period_us",
        ..e
    })?;
    if q < 0 {
        return Ok(None);
    }
    if q == 0 {
        return Err(ParseError::new("cpu.cfs_quota_us", quota, "quota is zero"));
    }
    if p <= 0 {
        return Err(ParseError::new(
            "cpu.cfs_period_us",
            period,
            "period is not positive",
        ));
    }
    Ok(Some(q as f64 / p as f64))
}

/// The `MemTotal` of a `/proc/meminfo` or `nodeN/meminfo` text, in bytes.
///
/// Both `MemTotal:  16 kB` and `Node 0 MemTotal:  16 kB` are accepted.
///
/// ```
/// use keel_topology::parse::parse_meminfo_total;
/// assert_eq!(parse_meminfo_total("Node 1 MemTotal:  8 kB\nNode 1 MemFree: 1 kB\n"), Ok(8192));
/// assert!(parse_meminfo_total("MemFree: 1 kB").is_err());
/// ```
pub fn parse_meminfo_total(text: &str) -> Result<u64, ParseError> {
    const WHAT: &str = "meminfo";
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if key.split_whitespace().last() != Some("MemTotal") {
            continue;
        }
        let mut it = value.split_whitespace();
        let n = it
            .next()
            .and_then(parse_u64)
            .ok_or_else(|| ParseError::new(WHAT, text, "MemTotal is not a number"))?;
        let mul = match it.next() {
            None => 1,
            Some("kB" | "KB" | "k") => 1024,
            Some(_) => return Err(ParseError::new(WHAT, text, "unknown MemTotal unit")),
        };
        return n
            .checked_mul(mul)
            .ok_or_else(|| ParseError::new(WHAT, text, "MemTotal overflows"));
    }
    Err(ParseError::new(WHAT, text, "no MemTotal line"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn cpulist_forms() {
        assert_eq!(parse_cpulist("").unwrap(), CpuSet::new());
        assert_eq!(parse_cpulist(" \n").unwrap(), CpuSet::new());
        assert_eq!(parse_cpulist("5").unwrap().to_string(), "5");
        assert_eq!(
            parse_cpulist("0-3,8,10-11").unwrap().to_string(),
            "0-3,8,10-11"
        );
        assert_eq!(parse_cpulist("8,0-1").unwrap().to_string(), "0-1,8");
        assert_eq!(parse_cpulist("100-130").unwrap().len(), 31);
    }

    #[test]
    fn cpulist_ranges_at_word_edges() {
        for (a, b) in [
            (0, 0),
            (0, 63),
            (63, 64),
            (1, 62),
            (5, 200),
            (64, 127),
            (0, 1000),
        ] {
            let s = parse_cpulist(&alloc::format!("{a}-{b}")).unwrap();
            assert_eq!(s.len(), b - a + 1, "{a}-{b}");
            assert_eq!(s.first(), Some(a));
            assert!(s.contains(b) && !s.contains(b + 1));
            assert!(a == 0 || !s.contains(a - 1));
            assert_eq!(s.words().len(), b / 64 + 1);
        }
        let top = parse_cpulist(&alloc::format!("{MAX_CPU}")).unwrap();
        assert_eq!(top.iter().collect::<alloc::vec::Vec<_>>(), [MAX_CPU]);
    }

    #[test]
    fn cpulist_rejects() {
        for bad in [
            "a",
            "1-",
            "-1",
            "1,,2",
            "3-1",
            "1-2-3",
            "1 2",
            "99999999",
            "0-1048576",
            "١",
        ] {
            let e = parse_cpulist(bad).unwrap_err();
            assert_eq!(e.what, "cpulist");
            assert_eq!(e.text, bad, "error names the text");
        }
    }

    #[test]
    fn cpumask_forms() {
        assert_eq!(parse_cpumask("00000000").unwrap(), CpuSet::new());
        assert_eq!(parse_cpumask("f").unwrap().to_string(), "0-3");
        assert_eq!(parse_cpumask("ff,ffffffff\n").unwrap().to_string(), "0-39");
        assert_eq!(
            parse_cpumask("1,00000000,00000000").unwrap().to_string(),
            "64"
        );
        assert_eq!(
            parse_cpumask("80000000,00000000").unwrap().to_string(),
            "63"
        );
        assert_eq!(parse_cpumask("0x3").unwrap().to_string(), "0-1");
    }

    #[test]
    fn cpumask_rejects() {
        for bad in ["g", "1,,2", ",1", "123456789", "+1", "-1", "0x"] {
            if bad == "0x" {
                // `0x` alone is an empty mask, like empty text.
                assert!(parse_cpumask(bad).unwrap().is_empty());
                continue;
            }
            assert!(parse_cpumask(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_ints() {
        assert_eq!(parse_cache_size("32K"), Ok(32768));
        assert_eq!(parse_cache_size("8192"), Ok(8192));
        assert_eq!(parse_cache_size("1G"), Ok(1 << 30));
        assert!(parse_cache_size("").is_err());
        assert!(parse_cache_size("K").is_err());
        assert!(parse_cache_size("99999999999999999999K").is_err());
        assert!(parse_cache_size("18014398509481984K").is_err());
        assert_eq!(parse_int("42"), Ok(42));
        assert!(parse_int("-").is_err());
        assert!(parse_int("").is_err());
        assert_eq!(parse_uint(" 7 "), Ok(7));
        assert_eq!(parse_cpu_max("max"), Ok(None));
        assert_eq!(parse_cpu_max("50000"), Ok(Some(0.5)));
        assert!(parse_cpu_max("").is_err());
        assert!(parse_cpu_max("1 2 3").is_err());
        assert!(parse_cfs_quota("100", "0").is_err());
        assert!(parse_cfs_quota("x", "1").is_err());
        assert_eq!(parse_meminfo_total("MemTotal: 3 kB"), Ok(3072));
    }

    #[test]
    fn long_error_text_is_cut_on_a_char_boundary() {
        let s = "é".repeat(300);
        let e = parse_cpulist(&s).unwrap_err();
        assert!(e.text.len() <= 200);
    }
}
