//! Options from the environment, read without allocating.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `KEEL_HEAP_PURGE_EVERY` | the page-release pass runs on one GC in N | keel-heap's (16) |
//! | `KEEL_HEAP_DECAY_MS` | time after which free memory is released | keel-heap's |
//! | `KEEL_HEAP_POOL_MIB` | MiB of freed direct maps (blocks above the buddy range) kept for reuse | keel-heap's (256) |
//! | `KEEL_HEAP_DECAY_THREAD` | `0`: start no decay thread (decay stays on the slow paths) | on (keel-heap's) |
//! | `KEEL_HEAP_STATS` | `1`: print statistics to stderr at exit | off |
//! | `KEEL_HEAP_STATS_FILE` | append the exit statistics to this file instead of stderr (implies `KEEL_HEAP_STATS=1`) | unset |
//! | `KEEL_HEAP_CHECK` | `1`: run keel-heap's checker (validation, bad-free detection) | off |
//!
//! They are read with libc's `getenv`, which neither allocates nor needs
//! Rust's runtime, because the first `malloc` can come before either is ready.
//! A value that does not parse is ignored, with one line on stderr from the
//! library constructor (once per process: a command run through wrappers
//! such as `env` or `timeout` prints it once in each process that loads the
//! library).

use core::ffi::CStr;
use core::fmt::Write as _;
use keel_heap::StackWriter;

/// The options as read from the environment; `None` means "keel-heap's
/// default".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EnvOptions {
    /// `KEEL_HEAP_PURGE_EVERY`: run the page-release pass once in this many GCs.
    pub purge_every: Option<u64>,
    /// `KEEL_HEAP_DECAY_MS`: release idle free pages after this many ms.
    pub decay_ms: Option<u64>,
    /// `KEEL_HEAP_POOL_MIB`: MiB of freed direct maps kept for reuse.
    pub pool_mib: Option<u64>,
    /// `KEEL_HEAP_DECAY_THREAD`: whether keel-heap may start its decay thread.
    pub decay_thread: Option<bool>,
    /// `KEEL_HEAP_STATS=1`: print statistics to stderr at exit.
    pub stats: bool,
    /// `KEEL_HEAP_CHECK=1`: turn keel-heap's checker on.
    pub checker: bool,
    /// `KEEL_HEAP_STATS_FILE` is set (its value is read again at exit).
    pub stats_file: bool,
}

/// Why an option's value was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionError {
    /// Not a decimal number (or empty).
    NotANumber,
    /// A number too large for the option.
    TooLarge,
    /// A flag that is neither `0`/`1` nor `true`/`false`/`yes`/`no`/`on`/`off`.
    NotAFlag,
}

impl OptionError {
    /// What was wrong, for the warning line.
    pub fn describe(self) -> &'static str {
        match self {
            OptionError::NotANumber => "not a decimal number",
            OptionError::TooLarge => "too large",
            OptionError::NotAFlag => "not 0/1/true/false/yes/no/on/off",
        }
    }
}

/// Parses a decimal number (surrounding ASCII spaces allowed), without
/// allocating.
///
/// ```ignore
/// assert_eq!(parse_number(b" 16 "), Ok(16));
/// ```
pub fn parse_number(text: &[u8]) -> Result<u64, OptionError> {
    let t = text.trim_ascii();
    if t.is_empty() {
        return Err(OptionError::NotANumber);
    }
    let mut v: u64 = 0;
    for &c in t {
        if !c.is_ascii_digit() {
            return Err(OptionError::NotANumber);
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or(OptionError::TooLarge)?;
    }
    Ok(v)
}

/// Parses an on/off flag.
pub fn parse_flag(text: &[u8]) -> Result<bool, OptionError> {
    let t = text.trim_ascii();
    let is = |w: &[u8]| t.eq_ignore_ascii_case(w);
    if is(b"1") || is(b"true") || is(b"yes") || is(b"on") {
        Ok(true)
    } else if is(b"0") || is(b"false") || is(b"no") || is(b"off") || t.is_empty() {
        Ok(false)
    } else {
        Err(OptionError::NotAFlag)
    }
}

/// Builds the options from a lookup function (the environment in the
/// library, a table in tests); bad values are passed to `warn` and ignored.
pub fn from_lookup<'a>(
    lookup: impl Fn(&str) -> Option<&'a [u8]>,
    mut warn: impl FnMut(&str, &[u8], OptionError),
) -> EnvOptions {
    let mut o = EnvOptions::default();
    let mut number = |name: &str| -> Option<u64> {
        let v = lookup(name)?;
        parse_number(v).map_err(|e| warn(name, v, e)).ok()
    };
    o.purge_every = number("KEEL_HEAP_PURGE_EVERY");
    o.decay_ms = number("KEEL_HEAP_DECAY_MS");
    o.pool_mib = number("KEEL_HEAP_POOL_MIB");
    let mut flag = |name: &str| -> Option<bool> {
        let v = lookup(name)?;
        parse_flag(v).map_err(|e| warn(name, v, e)).ok()
    };
    o.decay_thread = flag("KEEL_HEAP_DECAY_THREAD");
    o.stats = flag("KEEL_HEAP_STATS").unwrap_or(false);
    o.checker = flag("KEEL_HEAP_CHECK").unwrap_or(false);
    o.stats_file = lookup("KEEL_HEAP_STATS_FILE").is_some_and(|v| !v.is_empty());
    o.stats |= o.stats_file;
    o
}

/// Reads the options from the process environment with libc's `getenv`,
/// silently (the constructor reports bad values: [`warn_bad_env`]).
pub fn from_env() -> EnvOptions {
    from_lookup(getenv, |_, _, _| {})
}

/// Prints one line on stderr for each option in the environment whose value
/// does not parse.
pub fn warn_bad_env() {
    let _ = from_lookup(getenv, |name, value, err| {
        let mut w = StackWriter::<256>::new();
        let _ = writeln!(
            w,
            "keel-malloc: ignoring {name}={}: {}",
            shown(value),
            err.describe()
        );
        w.write_to_stderr();
    });
}

/// A value as a warning shows it: its first 64 bytes, cut back to the last
/// whole character, or `<not UTF-8>`.
fn shown(value: &[u8]) -> &str {
    let head = &value[..value.len().min(64)];
    match core::str::from_utf8(head) {
        Ok(s) => s,
        // Only the cut split a character: show what comes before it.
        Err(e) if e.error_len().is_none() => {
            core::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => "<not UTF-8>",
    }
}

/// One variable's bytes, if set. Names are the fixed ASCII names above.
pub(crate) fn getenv(name: &str) -> Option<&'static [u8]> {
    // A name longer than this buffer is a bug in this file, not input.
    let mut buf = [0u8; 64];
    let n = name.len().min(buf.len() - 1);
    buf[..n].copy_from_slice(&name.as_bytes()[..n]);
    // SAFETY: `buf` is NUL-terminated (zero-filled beyond `n`). getenv returns
    // null or a pointer into the environment block, which lives for the rest
    // of the process unless the program calls setenv/putenv on that same name;
    // the value is parsed right away by the caller and never kept.
    unsafe {
        let p = libc::getenv(buf.as_ptr().cast());
        if p.is_null() {
            None
        } else {
            Some(CStr::from_ptr(p).to_bytes())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(parse_number(b"16"), Ok(16));
        assert_eq!(parse_number(b" 0 "), Ok(0));
        assert_eq!(parse_number(b""), Err(OptionError::NotANumber));
        assert_eq!(parse_number(b"-1"), Err(OptionError::NotANumber));
        assert_eq!(parse_number(b"1e3"), Err(OptionError::NotANumber));
        assert_eq!(parse_number(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(
            parse_number(b"18446744073709551616"),
            Err(OptionError::TooLarge)
        );
    }

    #[test]
    fn warnings_show_whole_characters() {
        let long = [&[b'a'; 63][..], "é".as_bytes()].concat();
        assert_eq!(shown(&long), &"a".repeat(63)[..]);
        assert_eq!(shown("décalé".as_bytes()), "décalé");
        assert_eq!(shown(b"\xff1"), "<not UTF-8>");
        assert_eq!(shown(&[b'7'; 80]), &"7".repeat(64)[..]);
    }

    #[test]
    fn flags() {
        for t in [&b"1"[..], b"true", b"YES", b" on"] {
            assert_eq!(parse_flag(t), Ok(true));
        }
        for t in [&b"0"[..], b"false", b"No", b"off", b""] {
            assert_eq!(parse_flag(t), Ok(false));
        }
        assert_eq!(parse_flag(b"2"), Err(OptionError::NotAFlag));
    }

    #[test]
    fn lookup_and_warnings() {
        let table: [(&str, &[u8]); 6] = [
            ("KEEL_HEAP_PURGE_EVERY", b"4"),
            ("KEEL_HEAP_DECAY_THREAD", b"off"),
            ("KEEL_HEAP_POOL_MIB", b"64"),
            ("KEEL_HEAP_DECAY_MS", b"soon"),
            ("KEEL_HEAP_STATS", b"1"),
            ("KEEL_HEAP_CHECK", b"maybe"),
        ];
        let mut warned = [false; 2];
        let o = from_lookup(
            |n| table.iter().find(|(k, _)| *k == n).map(|(_, v)| *v),
            |n, _, e| match n {
                "KEEL_HEAP_DECAY_MS" => {
                    assert_eq!(e, OptionError::NotANumber);
                    warned[0] = true;
                }
                "KEEL_HEAP_CHECK" => {
                    assert_eq!(e, OptionError::NotAFlag);
                    warned[1] = true;
                }
                other => panic!("unexpected warning for {other}"),
            },
        );
        assert_eq!(warned, [true, true]);
        assert_eq!(
            o,
            EnvOptions {
                purge_every: Some(4),
                decay_ms: None,
                pool_mib: Some(64),
                decay_thread: Some(false),
                stats: true,
                checker: false,
                stats_file: false,
            }
        );
        let empty = from_lookup(|_| None, |n, _, _| panic!("warned for {n}"));
        assert_eq!(empty, EnvOptions::default());
        let mut bad = 0;
        let o = from_lookup(
            |n| (n == "KEEL_HEAP_DECAY_THREAD").then_some(&b"sometimes"[..]),
            |n, _, e| {
                assert_eq!((n, e), ("KEEL_HEAP_DECAY_THREAD", OptionError::NotAFlag));
                bad += 1;
            },
        );
        assert_eq!(
            (o.decay_thread, bad),
            (None, 1),
            "ignored, with one warning"
        );
    }
}
