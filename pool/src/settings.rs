//! keel's run-time settings: the `KEEL_*` environment variables and the
//! config file `KEEL_CONFIG` names, read by one parser that the pool, the
//! `Runtime` and `keel doctor` share.
//!
//! The file is UTF-8 text with one `KEY=VALUE` per line, using the names and
//! value syntax of the environment variables; `#` starts a comment, blank
//! lines are ignored, spaces around the key and the value are trimmed. A
//! variable set in the environment overrides the file's line. An unknown
//! key, a line that is not `KEY=VALUE`, a value of the wrong form, or a file
//! that cannot be read is a note ([`Settings::notes`]), never a panic: the
//! setting is then as if it were absent.
//!
//! | key | value | read by |
//! |---|---|---|
//! | `KEEL_WORKERS` | pool width, an integer ≥ 1 | the pool |
//! | `KEEL_SPIN_US` | spin window in µs, an integer ≥ 0 (the pool caps it at 10 ms) | the pool |
//! | `KEEL_BIND` | `none`, `close` or `spread` | the pool |
//! | `KEEL_PLACEMENT` | `auto`, `interleave`, `default` or `node:N` | the runtime |
//! | `KEEL_WIDTH_SCAN`, `KEEL_WIDTH_GATHER`, `KEEL_WIDTH_COMPUTE` | recommended hands per batch for each kind of work, an integer ≥ 1 | the runtime |
//!
//! ```
//! use keel_pool::settings::{self, Settings};
//! use keel_pool::Source;
//!
//! let s = Settings::parse("# written by keel doctor\nKEEL_WORKERS=8\nKEEL_BIND = close\n");
//! assert_eq!(s.workers(), Some((8, Source::File)));
//! assert_eq!(s.get(settings::BIND), Some(("close", Source::File)));
//! assert!(s.notes().is_empty());
//! ```

use crate::Source;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable naming the config file.
///
/// ```
/// use keel_pool::settings::{self, Settings};
///
/// let path = std::env::temp_dir().join(format!("keel-doc-config-{}", std::process::id()));
/// std::fs::write(&path, "KEEL_WORKERS=3\n")?;
/// let s = Settings::from_lookup(|k| (k == settings::CONFIG).then(|| path.clone().into()));
/// std::fs::remove_file(&path)?;
/// assert_eq!(s.workers().map(|(n, _)| n), Some(3));
/// // A config file cannot name another: CONFIG is not one of its keys.
/// assert!(!settings::KEYS.contains(&settings::CONFIG));
/// # Ok::<(), std::io::Error>(())
/// ```
pub const CONFIG: &str = "KEEL_CONFIG";
/// Pool width: hands, the calling thread included.
///
/// ```
/// use keel_pool::settings::{self, Settings};
/// use keel_pool::Source;
///
/// let s = Settings::parse("KEEL_WORKERS=+06\n");
/// assert_eq!(s.get(settings::WORKERS), Some(("6", Source::File)));
/// assert_eq!(s.workers(), Some((6, Source::File)));
/// assert_eq!(Settings::parse("KEEL_WORKERS=0").workers(), None);
/// ```
pub const WORKERS: &str = "KEEL_WORKERS";
/// Spin window of idle workers and waiting submitters, in microseconds.
///
/// ```
/// use keel_pool::settings::{self, Settings};
/// use std::time::Duration;
///
/// let mut s = Settings::new();
/// s.set(settings::SPIN_US, "250")?;
/// assert_eq!(s.spin().map(|(d, _)| d), Some(Duration::from_micros(250)));
/// assert!(s.set(settings::SPIN_US, "0.5").is_err());
/// # Ok::<(), keel_pool::settings::SettingError>(())
/// ```
pub const SPIN_US: &str = "KEEL_SPIN_US";
/// Worker binding: `none`, `close` or `spread`.
pub const BIND: &str = "KEEL_BIND";
/// Memory placement: `auto`, `interleave`, `default` or `node:N`.
///
/// ```
/// use keel_pool::settings::{self, Settings};
///
/// let s = Settings::parse("KEEL_PLACEMENT=NODE:01");
/// assert_eq!(s.get(settings::PLACEMENT).map(|(v, _)| v), Some("node:1"));
/// let bad = Settings::parse("KEEL_PLACEMENT=node:");
/// assert_eq!(bad.get(settings::PLACEMENT), None);
/// assert_eq!(bad.notes().len(), 1);
/// ```
pub const PLACEMENT: &str = "KEEL_PLACEMENT";
/// Recommended hands per batch for bandwidth-bound scans.
///
/// ```
/// use keel_pool::settings::{self, Settings};
/// use keel_pool::Source;
///
/// let mut s = Settings::new();
/// s.set(settings::WIDTH_SCAN, "4")?;
/// assert_eq!(s.count(settings::WIDTH_SCAN), Some((4, Source::Builder)));
/// assert!(s.set(settings::WIDTH_SCAN, "0").is_err());
/// # Ok::<(), keel_pool::settings::SettingError>(())
/// ```
pub const WIDTH_SCAN: &str = "KEEL_WIDTH_SCAN";
/// Recommended hands per batch for random gathers.
///
/// ```
/// use keel_pool::settings::{self, Settings};
///
/// let s = Settings::parse("KEEL_WIDTH_GATHER=32\nKEEL_WIDTH_GATHER=many\n");
/// // The bad second line is a note; the first line's value stands.
/// assert_eq!(s.count(settings::WIDTH_GATHER).map(|(n, _)| n), Some(32));
/// assert!(s.notes()[0].starts_with("config:2: KEEL_WIDTH_GATHER"));
/// ```
pub const WIDTH_GATHER: &str = "KEEL_WIDTH_GATHER";
/// Recommended hands per batch for compute-bound kernels.
///
/// ```
/// use keel_pool::settings::{self, Settings};
/// use keel_pool::Source;
///
/// let env = |k: &str| (k == settings::WIDTH_COMPUTE).then(|| "12".into());
/// let s = Settings::from_lookup(env);
/// assert_eq!(s.count(settings::WIDTH_COMPUTE), Some((12, Source::Env)));
/// assert_eq!(s.to_string(), "KEEL_WIDTH_COMPUTE=12\n");
/// ```
pub const WIDTH_COMPUTE: &str = "KEEL_WIDTH_COMPUTE";
/// Every key a config file may set, in the order [`Settings`] writes them.
///
/// ```
/// use keel_pool::settings::{self, Settings};
///
/// // Written back in KEYS order, whatever the order read.
/// let s = Settings::parse("KEEL_WIDTH_SCAN=2\nKEEL_BIND=none\nKEEL_WORKERS=4\n");
/// assert_eq!(s.to_string(), "KEEL_WORKERS=4\nKEEL_BIND=none\nKEEL_WIDTH_SCAN=2\n");
/// assert_eq!(settings::KEYS[0], settings::WORKERS);
/// assert!(settings::KEYS.iter().all(|k| k.starts_with("KEEL_")));
/// ```
pub const KEYS: [&str; 7] = [
    WORKERS,
    SPIN_US,
    BIND,
    PLACEMENT,
    WIDTH_SCAN,
    WIDTH_GATHER,
    WIDTH_COMPUTE,
];
/// A config file larger than this is not read (a settings file is a few
/// lines; this keeps a wrong path such as a device or a log from being read
/// whole).
///
/// ```
/// use keel_pool::settings::{self, Settings};
///
/// let path = std::env::temp_dir().join(format!("keel-doc-max-{}", std::process::id()));
/// let comment = "#".repeat(settings::MAX_FILE_BYTES as usize);
/// std::fs::write(&path, format!("KEEL_WORKERS=2\n{comment}\n"))?;
/// let s = Settings::from_lookup(|k| (k == settings::CONFIG).then(|| path.clone().into()));
/// std::fs::remove_file(&path)?;
/// assert_eq!((s.workers(), s.file()), (None, None));
/// assert!(s.notes()[0].contains("not read"));
/// # Ok::<(), std::io::Error>(())
/// ```
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Why a value was refused.
///
/// ```
/// use keel_pool::settings::{self, SettingError, Settings};
///
/// let mut s = Settings::new();
/// let e = s.set(settings::WORKERS, "zero").unwrap_err();
/// assert!(matches!(e, SettingError::BadValue { key, .. } if key == settings::WORKERS));
/// assert_eq!(e.to_string(), "KEEL_WORKERS=\"zero\": expected an integer of at least 1");
/// let unknown = SettingError::UnknownKey { key: "KEEL_THREADS".into() };
/// assert_eq!(s.set("KEEL_THREADS", "4"), Err(unknown));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SettingError {
    /// The key is not one of [`KEYS`].
    UnknownKey {
        /// The key as given.
        key: String,
    },
    /// The value does not have the form the key takes.
    BadValue {
        /// The key.
        key: &'static str,
        /// The value as given.
        value: String,
        /// The form the key takes.
        expected: &'static str,
    },
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingError::UnknownKey { key } => write!(f, "unknown key {key:?}"),
            SettingError::BadValue {
                key,
                value,
                expected,
            } => write!(f, "{key}={value:?}: expected {expected}"),
        }
    }
}

impl std::error::Error for SettingError {}

/// One value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    key: &'static str,
    value: String,
    source: Source,
}

/// A set of keel settings: values by key, each with its [`Source`], the
/// config file they were read from, and notes on what was ignored.
///
/// [`Pool::builder`](crate::Pool::builder) reads [`Settings::from_env`]
/// unless given some with [`Builder::settings`](crate::Builder::settings).
/// `Display` writes the values as a config file that [`Settings::parse`]
/// reads back.
///
/// ```
/// use keel_pool::settings::{self, Settings};
///
/// let mut s = Settings::new();
/// s.set(settings::WORKERS, "4")?;
/// s.set(settings::PLACEMENT, "node:1")?;
/// assert!(s.set(settings::BIND, "sideways").is_err());
/// let text = s.to_string();
/// assert_eq!(text, "KEEL_WORKERS=4\nKEEL_PLACEMENT=node:1\n");
/// let back = Settings::parse(&text);
/// assert_eq!(back.get(settings::PLACEMENT).map(|(v, _)| v), Some("node:1"));
/// # Ok::<(), keel_pool::settings::SettingError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    entries: Vec<Entry>,
    file: Option<PathBuf>,
    notes: Vec<String>,
}

impl Settings {
    /// No settings at all: everything at its default.
    pub fn new() -> Self {
        Settings::default()
    }

    /// The settings of this process: the file named by `KEEL_CONFIG`, if
    /// set, overridden key by key by the environment.
    ///
    /// ```
    /// use keel_pool::settings::{self, Settings};
    /// use keel_pool::Source;
    ///
    /// // Whatever the environment holds, every value kept is well-formed.
    /// let s = Settings::from_env();
    /// for key in settings::KEYS {
    ///     if let Some((value, source)) = s.get(key) {
    ///         assert!(matches!(source, Source::Env | Source::File));
    ///         assert!(Settings::new().set(key, value).is_ok());
    ///     }
    /// }
    /// ```
    pub fn from_env() -> Self {
        Settings::from_lookup(|k| std::env::var_os(k))
    }

    /// [`Settings::from_env`] with `env` in place of the environment
    /// (`KEEL_CONFIG` is looked up through it too).
    ///
    /// ```
    /// use keel_pool::settings::{self, Settings};
    /// use keel_pool::Source;
    ///
    /// let s = Settings::from_lookup(|k| (k == settings::SPIN_US).then(|| "250".into()));
    /// assert_eq!(s.spin(), Some((std::time::Duration::from_micros(250), Source::Env)));
    /// ```
    pub fn from_lookup(env: impl Fn(&str) -> Option<OsString>) -> Self {
        let mut s = Settings::new();
        if let Some(path) = env(CONFIG) {
            s.read_file(Path::new(&path));
        }
        for key in KEYS {
            let Some(raw) = env(key) else { continue };
            let Some(text) = raw.to_str() else {
                s.notes.push(format!("{key}={raw:?} ignored: not UTF-8"));
                continue;
            };
            match check(key, text) {
                Ok(v) => s.put(key, v, Source::Env),
                Err(e) => {
                    let fallback = match s.get(key) {
                        Some((v, _)) => format!("; the config file's {v:?} applies"),
                        None => String::new(),
                    };
                    s.notes.push(format!(
                        "{key}={text:?} ignored: {}{fallback}",
                        expected(&e)
                    ));
                }
            }
        }
        s
    }

    /// The settings a config file's text gives, as from a file (each value's
    /// source is [`Source::File`]); bad lines are notes.
    pub fn parse(text: &str) -> Self {
        let mut s = Settings::new();
        s.parse_into(text, "config");
        s
    }

    /// Reads the config file at `path` into `self` (a note if it cannot).
    fn read_file(&mut self, path: &Path) {
        use std::io::Read;
        let shown = path.display().to_string();
        if path.as_os_str().is_empty() {
            self.notes
                .push(format!("{CONFIG} is empty: no config file read"));
            return;
        }
        // Only a regular file is read: opening a FIFO blocks until a writer
        // comes, and a terminal or a device may never end. (A missing file
        // goes on to the open, which says why.)
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            self.notes
                .push(format!("{CONFIG}={shown}: not a regular file, not read"));
            return;
        }
        let mut bytes = Vec::new();
        let read = std::fs::File::open(path)
            .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes));
        if let Err(e) = read {
            self.notes.push(format!(
                "{CONFIG}={shown}: cannot read: {e}; no config file read"
            ));
            return;
        }
        if bytes.len() as u64 > MAX_FILE_BYTES {
            self.notes.push(format!(
                "{CONFIG}={shown}: larger than {MAX_FILE_BYTES} bytes, not read"
            ));
            return;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            self.notes
                .push(format!("{CONFIG}={shown}: not UTF-8 text, not read"));
            return;
        };
        self.file = Some(path.to_path_buf());
        self.parse_into(&text, &shown);
    }

    /// Parses a file's `text`; `name` labels its notes.
    fn parse_into(&mut self, text: &str, name: &str) {
        // A byte-order mark (some editors write one) is no part of a key.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (n, line) in text.lines().enumerate() {
            let at = n + 1;
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                self.notes
                    .push(format!("{name}:{at}: {line:?} ignored: not KEY=VALUE"));
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            let Some(key) = known(key) else {
                let why = if key == CONFIG {
                    "a config file cannot name another".to_string()
                } else {
                    format!("unknown key (the keys are {})", KEYS.join(", "))
                };
                self.notes
                    .push(format!("{name}:{at}: {key:?} ignored: {why}"));
                continue;
            };
            match check(key, value) {
                Ok(v) => {
                    if self.get(key).is_some() {
                        self.notes
                            .push(format!("{name}:{at}: {key} set again; this line wins"));
                    }
                    self.put(key, v, Source::File);
                }
                Err(e) => self.notes.push(format!(
                    "{name}:{at}: {key}={value:?} ignored: {}",
                    expected(&e)
                )),
            }
        }
    }

    /// Sets `key` to `value` (checked as a file's line would be), as set by
    /// the program ([`Source::Builder`]).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let key = known(key).ok_or_else(|| SettingError::UnknownKey {
            key: key.to_string(),
        })?;
        let v = check(key, value.trim())?;
        self.put(key, v, Source::Builder);
        Ok(())
    }

    /// Removes `key`'s value, if it has one.
    ///
    /// ```
    /// use keel_pool::settings::{self, Settings};
    ///
    /// let mut s = Settings::parse("KEEL_WORKERS=4\nKEEL_BIND=close\n");
    /// s.unset(settings::BIND);
    /// s.unset(settings::WIDTH_SCAN);
    /// assert_eq!(s.get(settings::BIND), None);
    /// assert_eq!(s.to_string(), "KEEL_WORKERS=4\n");
    /// ```
    pub fn unset(&mut self, key: &str) {
        self.entries.retain(|e| e.key != key);
    }

    fn put(&mut self, key: &'static str, value: String, source: Source) {
        match self.entries.iter_mut().find(|e| e.key == key) {
            Some(e) => {
                e.value = value;
                e.source = source;
            }
            None => self.entries.push(Entry { key, value, source }),
        }
    }

    /// `key`'s value, well-formed for that key, and where it came from.
    pub fn get(&self, key: &str) -> Option<(&str, Source)> {
        self.entries
            .iter()
            .find(|e| e.key == key)
            .map(|e| (e.value.as_str(), e.source))
    }

    /// `KEEL_WORKERS`: the pool width (at least 1).
    pub fn workers(&self) -> Option<(usize, Source)> {
        self.count(WORKERS)
    }

    /// `KEEL_SPIN_US`: the spin window.
    ///
    /// ```
    /// use keel_pool::settings::Settings;
    /// use keel_pool::Source;
    /// use std::time::Duration;
    ///
    /// let s = Settings::parse("KEEL_SPIN_US=0");
    /// assert_eq!(s.spin(), Some((Duration::ZERO, Source::File)));
    /// assert_eq!(Settings::new().spin(), None);
    /// ```
    pub fn spin(&self) -> Option<(Duration, Source)> {
        let (v, src) = self.get(SPIN_US)?;
        v.parse().ok().map(|us| (Duration::from_micros(us), src))
    }

    /// `KEEL_BIND`: the worker binding.
    ///
    /// ```
    /// use keel_pool::{Binding, settings::Settings};
    ///
    /// let s = Settings::parse("KEEL_BIND=spread");
    /// assert_eq!(s.binding().map(|(b, _)| b), Some(Binding::Spread));
    /// ```
    #[cfg(feature = "topology")]
    pub fn binding(&self) -> Option<(crate::Binding, Source)> {
        let (v, src) = self.get(BIND)?;
        let b = match v {
            "none" => crate::Binding::None,
            "close" => crate::Binding::Close,
            "spread" => crate::Binding::Spread,
            _ => return None,
        };
        Some((b, src))
    }

    /// A positive count under `key` (`KEEL_WORKERS`, `KEEL_WIDTH_*`).
    ///
    /// ```
    /// use keel_pool::settings::{self, Settings};
    ///
    /// let s = Settings::parse("KEEL_WIDTH_GATHER=16");
    /// assert_eq!(s.count(settings::WIDTH_GATHER).map(|(n, _)| n), Some(16));
    /// ```
    pub fn count(&self, key: &str) -> Option<(usize, Source)> {
        let (v, src) = self.get(key)?;
        v.parse().ok().map(|n| (n, src))
    }

    /// The config file the settings were read from, if one was.
    ///
    /// ```
    /// use keel_pool::settings::{self, Settings};
    ///
    /// let path = std::env::temp_dir().join(format!("keel-doc-file-{}", std::process::id()));
    /// std::fs::write(&path, "KEEL_BIND=spread\n")?;
    /// let s = Settings::from_lookup(|k| (k == settings::CONFIG).then(|| path.clone().into()));
    /// std::fs::remove_file(&path)?;
    /// assert_eq!(s.file(), Some(path.as_path()));
    /// assert_eq!(Settings::parse("KEEL_BIND=spread\n").file(), None);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// What was ignored and why: one line each, naming the variable or the
    /// file and line.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// Writes the values as a config file, one `KEY=VALUE` line each, in
/// [`KEYS`] order.
impl fmt::Display for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for key in KEYS {
            if let Some((v, _)) = self.get(key) {
                writeln!(f, "{key}={v}")?;
            }
        }
        Ok(())
    }
}

/// `key` as one of [`KEYS`].
fn known(key: &str) -> Option<&'static str> {
    KEYS.iter().copied().find(|k| *k == key)
}

/// What a refused value should have looked like, for a note.
fn expected(e: &SettingError) -> String {
    match e {
        SettingError::BadValue { expected, .. } => format!("expected {expected}"),
        SettingError::UnknownKey { .. } => e.to_string(),
    }
}

/// Checks `value` for `key` and returns it in canonical form (keywords in
/// lower case, numbers without a leading `+` or zeros).
fn check(key: &'static str, value: &str) -> Result<String, SettingError> {
    let bad = |expected| SettingError::BadValue {
        key,
        value: value.to_string(),
        expected,
    };
    match key {
        WORKERS | WIDTH_SCAN | WIDTH_GATHER | WIDTH_COMPUTE => match value.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n.to_string()),
            _ => Err(bad("an integer of at least 1")),
        },
        SPIN_US => match value.parse::<u64>() {
            Ok(n) => Ok(n.to_string()),
            Err(_) => Err(bad("a whole number of microseconds")),
        },
        BIND => {
            let v = value.to_ascii_lowercase();
            match v.as_str() {
                "none" | "close" | "spread" => Ok(v),
                _ => Err(bad("none, close or spread")),
            }
        }
        PLACEMENT => {
            let v = value.to_ascii_lowercase();
            match v.as_str() {
                "auto" | "interleave" | "default" => Ok(v),
                _ => match v.strip_prefix("node:").map(str::parse::<usize>) {
                    Some(Ok(n)) => Ok(format!("node:{n}")),
                    _ => Err(bad("auto, interleave, default or node:N")),
                },
            }
        }
        _ => Err(SettingError::UnknownKey {
            key: key.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_values() {
        assert_eq!(check(WORKERS, "+08").as_deref(), Ok("8"));
        assert_eq!(check(BIND, "Close").as_deref(), Ok("close"));
        assert_eq!(check(PLACEMENT, "NODE:02").as_deref(), Ok("node:2"));
        assert!(check(PLACEMENT, "node:").is_err());
        assert!(check(PLACEMENT, "node:-1").is_err());
        assert!(check(WORKERS, "0").is_err());
        assert!(check(WIDTH_SCAN, "").is_err());
        assert_eq!(check(SPIN_US, "0").as_deref(), Ok("0"));
        assert!(check(SPIN_US, "-1").is_err());
        assert!(check(SPIN_US, "1e3").is_err());
    }
}
