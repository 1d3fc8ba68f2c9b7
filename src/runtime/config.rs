//! The runtime's errors and the settings it reads beyond the pool's.

use keel_heap::Placement;
use keel_pool::settings::{self, Settings};
use keel_pool::{BuildError, Source};
use std::format;
use std::string::String;
use std::vec::Vec;

#[cfg(doc)]
use super::Runtime;

/// Why a runtime operation failed.
///
/// ```
/// use keel_rt::RuntimeError;
/// use keel_rt::pool::Pool;
///
/// let err = RuntimeError::from(Pool::builder().width(0).build().unwrap_err());
/// assert!(matches!(err, RuntimeError::Pool(_)));
/// assert!(err.to_string().starts_with("pool error: "));
/// assert!(std::error::Error::source(&err).is_some());
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RuntimeError {
    /// A kernel refused its arguments.
    Kernel(keel_kernels::Error),
    /// The pool could not be built.
    Pool(BuildError),
    /// No heap could be made for a hand.
    Heap,
}

impl std::fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuntimeError::Kernel(e) => write!(f, "kernel error: {e}"),
            RuntimeError::Pool(e) => write!(f, "pool error: {e}"),
            RuntimeError::Heap => f.write_str("no heap could be made for a hand"),
        }
    }
}

impl std::error::Error for RuntimeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RuntimeError::Kernel(e) => Some(e),
            RuntimeError::Pool(e) => Some(e),
            RuntimeError::Heap => None,
        }
    }
}

impl From<BuildError> for RuntimeError {
    fn from(e: BuildError) -> Self {
        RuntimeError::Pool(e)
    }
}

impl From<keel_kernels::Error> for RuntimeError {
    fn from(e: keel_kernels::Error) -> Self {
        RuntimeError::Kernel(e)
    }
}

/// Kinds of work, each with its recommended hands per batch
/// (`KEEL_WIDTH_SCAN`, `KEEL_WIDTH_GATHER`, `KEEL_WIDTH_COMPUTE`, as
/// `keel doctor` measures them).
///
/// ```
/// use keel_rt::{RuntimeConfig, WorkKind};
/// use keel_rt::pool::settings::Settings;
///
/// let c = RuntimeConfig::from_settings(&Settings::parse("KEEL_WIDTH_COMPUTE=2\n"), 8);
/// assert_eq!(c.width(WorkKind::Compute), 2);
/// assert_eq!(c.width(WorkKind::Scan), 8);
/// assert_eq!(c.width(WorkKind::Gather), 8);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkKind {
    /// Bandwidth-bound scans and aggregations ([`Runtime::fold`],
    /// [`Runtime::sum`], [`Runtime::filter_count`], [`Runtime::span_within`]).
    Scan,
    /// Random gathers by row index.
    Gather,
    /// Compute-bound kernels ([`Runtime::count_distinct_i64`]).
    Compute,
}

/// The settings a runtime reads beyond the pool's: memory placement and
/// the hands per kind of work, each with where it came from.
///
/// ```
/// use keel_rt::{RuntimeConfig, WorkKind};
/// use keel_rt::pool::Source;
/// use keel_rt::pool::settings::Settings;
///
/// let c = RuntimeConfig::from_settings(&Settings::parse("KEEL_WIDTH_SCAN=3\n"), 4);
/// assert_eq!(c.widths[WorkKind::Scan as usize], (3, Source::File));
/// assert_eq!(c.placement_source, Source::Default);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Where large buffers' pages go ([`Runtime::place`]); `KEEL_PLACEMENT`.
    pub placement: Placement,
    /// Where `placement` came from.
    pub placement_source: Source,
    /// Hands for [`WorkKind::Scan`], [`WorkKind::Gather`] and
    /// [`WorkKind::Compute`], at most the pool's width.
    pub widths: [(usize, Source); 3],
    /// Settings that were ignored or capped, and why.
    pub notes: Vec<String>,
}

impl RuntimeConfig {
    /// The runtime's settings from `s` for a pool of `width` hands.
    ///
    /// ```
    /// use keel_rt::{RuntimeConfig, WorkKind};
    /// use keel_rt::heap::Placement;
    /// use keel_rt::pool::settings::Settings;
    ///
    /// let s = Settings::parse("KEEL_PLACEMENT=node:1\nKEEL_WIDTH_GATHER=12\n");
    /// let c = RuntimeConfig::from_settings(&s, 8);
    /// assert_eq!(c.placement, Placement::Node(1));
    /// assert_eq!(c.width(WorkKind::Gather), 8); // capped at the pool's width
    /// assert_eq!(c.width(WorkKind::Scan), 8);
    /// assert_eq!(c.notes.len(), 1);
    /// ```
    pub fn from_settings(s: &Settings, width: usize) -> RuntimeConfig {
        let mut notes = Vec::new();
        let (placement, placement_source) = match s.get(settings::PLACEMENT) {
            Some((v, src)) => match parse_placement(v) {
                Some(p) => (p, src),
                None => {
                    notes.push(format!("{}={v:?} ignored", settings::PLACEMENT));
                    (Placement::Auto, Source::Default)
                }
            },
            None => (Placement::Auto, Source::Default),
        };
        let widths = [
            settings::WIDTH_SCAN,
            settings::WIDTH_GATHER,
            settings::WIDTH_COMPUTE,
        ]
        .map(|key| match s.count(key) {
            Some((n, src)) if n > width => {
                notes.push(format!(
                    "{key}={n} capped at the pool's width, {width} hands"
                ));
                (width, src)
            }
            Some((n, src)) => (n.max(1), src),
            None => (width, Source::Default),
        });
        RuntimeConfig {
            placement,
            placement_source,
            widths,
            notes,
        }
    }

    /// Hands for `kind`.
    ///
    /// ```
    /// use keel_rt::{RuntimeConfig, WorkKind};
    /// use keel_rt::pool::settings::Settings;
    ///
    /// let c = RuntimeConfig::from_settings(&Settings::parse("KEEL_WIDTH_SCAN=3\n"), 4);
    /// assert_eq!(c.width(WorkKind::Scan), 3);
    /// assert_eq!(c.width(WorkKind::Gather), 4);
    /// ```
    pub fn width(&self, kind: WorkKind) -> usize {
        self.widths[kind as usize].0
    }
}

/// `auto`, `interleave`, `default` or `node:N`, as the settings parser
/// checked it.
fn parse_placement(v: &str) -> Option<Placement> {
    match v {
        "auto" => Some(Placement::Auto),
        "interleave" => Some(Placement::Interleave),
        "default" => Some(Placement::Default),
        _ => v.strip_prefix("node:")?.parse().ok().map(Placement::Node),
    }
}
