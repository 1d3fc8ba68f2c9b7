//! The builder: width, spin window, binding and thread names, from the
//! builder's own settings, then the environment and the config file
//! ([`crate::settings`]), then the defaults.

use crate::settings::{self, Settings};
use crate::sleep::Sleep;
#[cfg(feature = "topology")]
use crate::sync::Mutex;
use crate::sync::{Arc, thread};
#[cfg(feature = "topology")]
use crate::{Binding, Topology, affinity};
use crate::{Pool, Shared, worker};
use std::fmt;
use std::time::Duration;

/// The environment variable (and config-file key) that sets the pool width
/// (hands, the calling thread included) when the builder does not.
///
/// ```
/// use keel_pool::{ENV_WORKERS, Pool, Source, settings::Settings};
///
/// let env = |k: &str| (k == ENV_WORKERS).then(|| "3".into());
/// let pool = Pool::builder().settings(Settings::from_lookup(env)).build()?;
/// assert_eq!((pool.width(), pool.config().width_source), (3, Source::Env));
/// // The builder's own width wins over the variable.
/// let pool = Pool::builder().width(2).settings(Settings::from_lookup(env)).build()?;
/// assert_eq!((pool.width(), pool.config().width_source), (2, Source::Builder));
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
pub const ENV_WORKERS: &str = settings::WORKERS;
/// The environment variable (and config-file key) that sets the spin window
/// in microseconds when the builder does not (`0` parks at once).
///
/// ```
/// use keel_pool::{ENV_SPIN_US, Pool, Source, settings::Settings};
/// use std::time::Duration;
///
/// let env = |k: &str| (k == ENV_SPIN_US).then(|| "0".into());
/// let pool = Pool::builder().width(2).settings(Settings::from_lookup(env)).build()?;
/// assert_eq!(pool.config().spin, Duration::ZERO);
/// assert_eq!(pool.config().spin_source, Source::Env);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
pub const ENV_SPIN_US: &str = settings::SPIN_US;
/// The default spin window: long enough to cover a wakeup's cost, short
/// enough that an idle pool stops burning CPU within a tenth of a millisecond.
///
/// ```
/// use keel_pool::{DEFAULT_SPIN, Pool, Source, settings::Settings};
///
/// // No setting anywhere: the built-in window.
/// let pool = Pool::builder().width(2).settings(Settings::new()).build()?;
/// assert_eq!(pool.config().spin, DEFAULT_SPIN);
/// assert_eq!(pool.config().spin_source, Source::Default);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
pub const DEFAULT_SPIN: Duration = Duration::from_micros(100);
/// The widest pool [`Builder::build`] makes: far above any machine's CPU
/// count (Linux's `NR_CPUS` tops out at 8192), and low enough that the
/// per-worker tables are small and a batch's hand count cannot overflow its
/// latch. A wider request is [`BuildError::TooWide`].
///
/// ```
/// use keel_pool::{BuildError, MAX_WIDTH, Pool};
///
/// assert!(MAX_WIDTH >= 8192);
/// let r = Pool::builder().width(MAX_WIDTH + 1).build();
/// assert!(matches!(r, Err(BuildError::TooWide { max: MAX_WIDTH, .. })));
/// ```
pub const MAX_WIDTH: usize = 1 << 16;
/// A width read from the environment or the config file is capped at this
/// many hands per usable CPU (with a note in [`Config::notes`]): oversubscribing a few times over
/// can suit hands that block, but a typo such as `KEEL_WORKERS=65536` must
/// not start tens of thousands of threads. The builder's own
/// [`Builder::width`] is taken as asked, up to [`MAX_WIDTH`].
///
/// ```
/// use keel_pool::{ENV_WIDTH_PER_CPU, Pool, settings::Settings};
///
/// let pool = Pool::builder().settings(Settings::parse("KEEL_WORKERS=100000")).build()?;
/// // Capped at ENV_WIDTH_PER_CPU hands for each usable CPU, with a note.
/// assert!(pool.width() < 100_000);
/// assert_eq!(pool.width() % ENV_WIDTH_PER_CPU, 0);
/// assert!(pool.config().notes[0].contains("capped"));
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
pub const ENV_WIDTH_PER_CPU: usize = 4;
/// A spin window read from the environment or the config file is capped at
/// this (with a note in [`Config::notes`]): a spin is a core burned while
/// idle, and a typo such as `KEEL_SPIN_US=10000000000` must not keep idle
/// workers from ever parking. The builder's own
/// [`Builder::spin_window`] is taken as asked.
///
/// ```
/// use keel_pool::{ENV_MAX_SPIN, Pool, settings::Settings};
///
/// let settings = Settings::parse("KEEL_SPIN_US=60000000");
/// let pool = Pool::builder().width(1).settings(settings).build()?;
/// assert_eq!(pool.config().spin, ENV_MAX_SPIN);
/// assert!(pool.config().notes[0].contains("capped"));
/// let pool = Pool::builder().width(1).spin_window(ENV_MAX_SPIN * 2).build()?;
/// assert_eq!(pool.config().spin, ENV_MAX_SPIN * 2);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
pub const ENV_MAX_SPIN: Duration = Duration::from_millis(10);

/// Why a pool could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// A width of 0 was asked for; the smallest pool has width 1 (the
    /// calling thread alone).
    ZeroWidth,
    /// The thread name prefix contains a NUL byte, which no OS thread name
    /// can hold.
    ThreadName {
        /// The prefix given to [`Builder::thread_name`].
        prefix: String,
    },
    /// A width above [`MAX_WIDTH`] was asked for.
    TooWide {
        /// The width asked for.
        width: usize,
        /// The largest width a pool can have ([`MAX_WIDTH`]).
        max: usize,
    },
    /// The OS refused to start worker `index` (a thread limit such as
    /// `RLIMIT_NPROC`, or memory). The workers started before it have been
    /// joined when `build` returns this.
    Spawn {
        /// The worker that did not start.
        index: usize,
        /// What the OS said.
        error: std::io::Error,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::ZeroWidth => {
                f.write_str("pool width must be at least 1 (the calling thread)")
            }
            BuildError::TooWide { width, max } => {
                write!(f, "pool width {width} is above the maximum of {max}")
            }
            BuildError::ThreadName { prefix } => {
                write!(f, "thread name prefix {prefix:?} contains a NUL byte")
            }
            BuildError::Spawn { index, error } => {
                write!(f, "could not start worker {index}: {error}")
            }
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn { error, .. } => Some(error),
            BuildError::ZeroWidth | BuildError::TooWide { .. } | BuildError::ThreadName { .. } => {
                None
            }
        }
    }
}

/// Where a setting came from.
///
/// ```
/// use keel_pool::{Pool, Source, settings::Settings};
/// use std::time::Duration;
///
/// let pool = Pool::builder()
///     .spin_window(Duration::from_micros(5))
///     .settings(Settings::parse("KEEL_WORKERS=2"))
///     .build()?;
/// assert_eq!(pool.config().width_source, Source::File);
/// assert_eq!(pool.config().spin_source, Source::Builder);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// Set by the program: on the [`Builder`], or with [`Settings::set`].
    Builder,
    /// Read from the environment ([`ENV_WORKERS`], [`ENV_SPIN_US`], ...).
    Env,
    /// Read from the config file named by `KEEL_CONFIG`.
    File,
    /// The topology's physical cores (`Topology::workers_for(Work::Bandwidth)`).
    Topology,
    /// `std::thread::available_parallelism` (no topology).
    AvailableParallelism,
    /// The built-in default.
    Default,
}

/// The settings a pool runs with, and where each came from.
///
/// ```
/// use keel_pool::{Pool, Source, settings::Settings};
///
/// let settings = Settings::parse("KEEL_SPIN_US=30\nKEEL_THREADS=4\n");
/// let pool = Pool::builder().width(2).settings(settings).build()?;
/// let config = pool.config();
/// assert_eq!((config.width, config.width_source), (2, Source::Builder));
/// assert_eq!((config.spin.as_micros(), config.spin_source), (30, Source::File));
/// assert!(config.notes[0].starts_with("config:2: \"KEEL_THREADS\" ignored"));
/// assert_eq!(config.config_file, None);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Hands, the calling thread included: `width - 1` worker threads.
    pub width: usize,
    /// Where `width` came from.
    pub width_source: Source,
    /// Spin window of idle workers and of waiting submitters.
    pub spin: Duration,
    /// Where `spin` came from.
    pub spin_source: Source,
    /// Worker binding.
    #[cfg(feature = "topology")]
    pub binding: Binding,
    /// Where `binding` came from.
    #[cfg(feature = "topology")]
    pub binding_source: Source,
    /// The config file read (named by `KEEL_CONFIG`), if one was.
    pub config_file: Option<std::path::PathBuf>,
    /// Settings that were ignored or capped, and why (an unparsable
    /// environment variable, a bad line of the config file, for example).
    pub notes: Vec<String>,
}

/// Configures and builds a [`Pool`].
///
/// ```
/// use keel_pool::Pool;
/// use std::time::Duration;
///
/// let pool = Pool::builder()
///     .width(2)
///     .spin_window(Duration::from_micros(50))
///     .build()?;
/// assert_eq!(pool.width(), 2);
/// assert_eq!(pool.workers(), 1);
/// # Ok::<(), keel_pool::BuildError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    width: Option<usize>,
    spin: Option<Duration>,
    thread_name: Option<String>,
    settings: Option<Settings>,
    #[cfg(feature = "topology")]
    binding: Option<Binding>,
    #[cfg(feature = "topology")]
    topology: Option<Topology>,
}

impl Builder {
    /// A builder with every setting at its default.
    pub fn new() -> Self {
        Builder::default()
    }

    /// Hands, the calling thread included (`width - 1` worker threads; 1
    /// starts no thread at all). Overrides [`ENV_WORKERS`], the config file
    /// and the topology.
    /// `build` refuses 0 and anything above [`MAX_WIDTH`]; a width from
    /// [`ENV_WORKERS`] is capped at [`ENV_WIDTH_PER_CPU`] hands per usable
    /// CPU instead.
    pub fn width(mut self, width: usize) -> Self {
        self.width = Some(width);
        self
    }

    /// How long an idle worker, or a submitter waiting for its batch, spins
    /// before it parks (0 parks at once). Overrides [`ENV_SPIN_US`] and the
    /// config file; taken as asked, where a window from those is capped at
    /// [`ENV_MAX_SPIN`].
    pub fn spin_window(mut self, window: Duration) -> Self {
        self.spin = Some(window);
        self
    }

    /// Worker thread names are `{prefix}-{index}` (default `keel-pool`);
    /// `build` refuses a prefix with a NUL byte.
    ///
    /// ```
    /// use keel_pool::{BuildError, Pool};
    /// use std::sync::Mutex;
    ///
    /// let pool = Pool::builder().width(2).thread_name("scan").build()?;
    /// let name = Mutex::new(None);
    /// pool.broadcast(|_| *name.lock().unwrap() = std::thread::current().name().map(String::from));
    /// assert_eq!(name.into_inner().unwrap().as_deref(), Some("scan-0"));
    /// let r = Pool::builder().width(2).thread_name("a\0b").build();
    /// assert!(matches!(r, Err(BuildError::ThreadName { .. })));
    /// # Ok::<(), BuildError>(())
    /// ```
    pub fn thread_name(mut self, prefix: impl Into<String>) -> Self {
        self.thread_name = Some(prefix.into());
        self
    }

    /// Binds each worker to CPUs of the topology's cores (default
    /// [`Binding::None`], or `KEEL_BIND`).
    ///
    /// ```
    /// use keel_pool::{Binding, Pool, Source};
    ///
    /// let pool = Pool::builder().width(2).binding(Binding::Spread).build()?;
    /// assert_eq!(pool.config().binding, Binding::Spread);
    /// assert_eq!(pool.config().binding_source, Source::Builder);
    /// // Binding can be refused (a container's cpuset, say): that worker runs unbound.
    /// assert!(pool.binding_failures().len() <= pool.workers());
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    #[cfg(feature = "topology")]
    pub fn binding(mut self, binding: Binding) -> Self {
        self.binding = Some(binding);
        self
    }

    /// Takes the settings the builder leaves open from `settings` instead
    /// of reading them from the environment and `KEEL_CONFIG`
    /// ([`Settings::from_env`]); their notes join [`Config::notes`].
    ///
    /// ```
    /// use keel_pool::{Pool, Source, settings::Settings};
    ///
    /// let pool = Pool::builder()
    ///     .settings(Settings::parse("KEEL_WORKERS=2\nKEEL_SPIN_US=20\n"))
    ///     .build()?;
    /// assert_eq!((pool.width(), pool.config().width_source), (2, Source::File));
    /// assert_eq!(pool.config().spin.as_micros(), 20);
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// The topology to size and bind the pool from, instead of detecting it.
    ///
    /// ```
    /// use keel_pool::{Pool, Source, Topology, settings::Settings};
    /// use keel_topology::Work;
    ///
    /// let topology = Topology::detect();
    /// let wide = topology.workers_for(Work::Bandwidth);
    /// let pool = Pool::builder().topology(topology).settings(Settings::new()).build()?;
    /// assert_eq!((pool.width(), pool.config().width_source), (wide, Source::Topology));
    /// # Ok::<(), keel_pool::BuildError>(())
    /// ```
    #[cfg(feature = "topology")]
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// Starts the workers.
    pub fn build(self) -> Result<Pool, BuildError> {
        #[cfg(feature = "topology")]
        let binding_open = self.binding.is_none();
        #[cfg(not(feature = "topology"))]
        let binding_open = false;
        let open = self.width.is_none() || self.spin.is_none() || binding_open;
        let settings = match self.settings {
            Some(s) => s,
            None if open => Settings::from_env(),
            None => Settings::new(),
        };
        let mut notes = settings.notes().to_vec();
        #[cfg(feature = "topology")]
        let (binding, binding_source) = match self.binding {
            Some(b) => (b, Source::Builder),
            None => settings
                .binding()
                .unwrap_or((Binding::None, Source::Default)),
        };
        #[cfg(feature = "topology")]
        let topology = self
            .topology
            .clone()
            .or_else(|| (self.width.is_none() || binding != Binding::None).then(detect_topology));
        let (width, width_source) = match self.width {
            Some(0) => return Err(BuildError::ZeroWidth),
            Some(width) if width > MAX_WIDTH => {
                return Err(BuildError::TooWide {
                    width,
                    max: MAX_WIDTH,
                });
            }
            Some(w) => (w, Source::Builder),
            None => match settings.workers() {
                Some((w, src)) => {
                    let cpus = usable_cpus(
                        #[cfg(feature = "topology")]
                        topology.as_ref(),
                    );
                    let cap = cpus.saturating_mul(ENV_WIDTH_PER_CPU).min(MAX_WIDTH);
                    if w > cap {
                        let from = if src == Source::File {
                            "the config file"
                        } else {
                            "the environment"
                        };
                        notes.push(format!(
                            "{ENV_WORKERS}={w} capped at {cap}: at most {ENV_WIDTH_PER_CPU} hands per usable CPU ({cpus}) from {from}"
                        ));
                        (cap, src)
                    } else {
                        (w, src)
                    }
                }
                None => default_width(
                    #[cfg(feature = "topology")]
                    topology.as_ref(),
                ),
            },
        };
        let (spin, spin_source) = match self.spin {
            Some(s) => (s, Source::Builder),
            None => match settings.spin() {
                Some((s, src)) if s > ENV_MAX_SPIN => {
                    notes.push(format!(
                        "{ENV_SPIN_US}={} capped at {}: a longer spin keeps idle workers from parking",
                        s.as_micros(),
                        ENV_MAX_SPIN.as_micros()
                    ));
                    (ENV_MAX_SPIN, src)
                }
                Some(s) => s,
                None => (DEFAULT_SPIN, Source::Default),
            },
        };
        let workers = width - 1;
        #[cfg(feature = "topology")]
        let mut plan = match &topology {
            Some(t) => affinity::plan(t, binding, workers),
            None => vec![None; workers],
        }
        .into_iter();
        let shared = Arc::new(Shared {
            sleep: Sleep::new(workers, spin),
            #[cfg(feature = "topology")]
            binding: Mutex::new(vec![None; workers]),
        });
        let prefix = self.thread_name.unwrap_or_else(|| "keel-pool".to_string());
        // std panics on a thread name with a NUL byte; refuse it up front.
        if prefix.contains('\0') {
            return Err(BuildError::ThreadName { prefix });
        }
        let mut handles = Vec::with_capacity(workers);
        // Spawned with no lock held: a spawn is slow, and holding the queue
        // through it would stall workers already dequeuing.
        for index in 0..workers {
            let start = worker::Start {
                index,
                #[cfg(feature = "topology")]
                bind: plan.next().flatten(),
            };
            let s = shared.clone();
            let spawned = thread::Builder::new()
                .name(format!("{prefix}-{index}"))
                .spawn(move || worker::main(s, start));
            match spawned {
                Ok(h) => handles.push(h),
                Err(error) => {
                    shared.sleep.shutdown();
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(BuildError::Spawn { index, error });
                }
            }
        }
        let pool = Pool {
            shared,
            handles,
            config: Config {
                width,
                width_source,
                spin,
                spin_source,
                #[cfg(feature = "topology")]
                binding,
                #[cfg(feature = "topology")]
                binding_source,
                config_file: settings.file().map(std::path::Path::to_path_buf),
                notes,
            },
        };
        // Each worker binds itself before it takes its first ticket, so once
        // every worker has run a broadcast call its outcome is recorded, and
        // `binding_failures` is complete when `build` returns.
        #[cfg(feature = "topology")]
        if binding != Binding::None {
            pool.broadcast(|_| {});
        }
        Ok(pool)
    }
}

#[cfg(feature = "topology")]
fn detect_topology() -> Topology {
    Topology::detect()
}

/// The default width and where it came from, at most [`MAX_WIDTH`] (a
/// recorded or hostile sysfs tree may list up to 2^20 CPUs).
fn default_width(#[cfg(feature = "topology")] topology: Option<&Topology>) -> (usize, Source) {
    #[cfg(feature = "topology")]
    if let Some(t) = topology {
        if !t.cores().is_empty() {
            return (
                t.workers_for(keel_topology::Work::Bandwidth).min(MAX_WIDTH),
                Source::Topology,
            );
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (n.min(MAX_WIDTH), Source::AvailableParallelism)
}

/// The CPUs this process may use: the topology's usable CPUs, else
/// `available_parallelism` (which also honours the affinity mask).
fn usable_cpus(#[cfg(feature = "topology")] topology: Option<&Topology>) -> usize {
    #[cfg(feature = "topology")]
    if let Some(t) = topology {
        let n = t.usable_cpus().len();
        if n > 0 {
            return n;
        }
    }
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
