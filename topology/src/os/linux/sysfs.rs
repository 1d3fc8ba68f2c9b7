//! Files under one root, read as text: the one place that opens them.

use std::format;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

use crate::parse::{self, ParseError};
use crate::{CpuSet, TopologyError};

/// The CPU folder, relative to the root.
pub(crate) const CPU_DIR: &str = "sys/devices/system/cpu";
/// The NUMA node folder, relative to the root.
pub(crate) const NODE_DIR: &str = "sys/devices/system/node";

pub(crate) type Res<T> = Result<T, TopologyError>;

/// The most a table may hold (cpuinfo, the mount table): far above any
/// real one (cpuinfo of 8192 CPUs is ~20 MiB), far below what would hurt.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// The most an attribute may hold: the longest real one, a cpulist of
/// 8192 CPUs each on its own, is under 48 KiB; a hostile list of many MiB
/// would take seconds to parse.
const MAX_ATTR_BYTES: u64 = 1 << 20;

/// Reads a whole file without asking its size first: sysfs reports 4096
/// for every attribute, so the `stat` that `fs::read` makes buys nothing.
///
/// A recorded root is data and may hold special files: the read stops at
/// [`MAX_FILE_BYTES`] (a link to `/dev/zero` would never end), and the
/// open does not block (a FIFO without a writer would wait forever; it
/// reads as empty).
fn read_small(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // No effect on regular files, sysfs or procfs.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let f = opts.open(path)?;
    let mut buf = Vec::with_capacity(128);
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(io::Error::other(format!("larger than {} MiB", max >> 20)));
    }
    Ok(buf)
}

/// Files under one root, read as text.
pub(crate) struct Sysfs {
    root: PathBuf,
}

impl Sysfs {
    pub(crate) fn new(root: &Path) -> Self {
        Sysfs {
            root: root.to_path_buf(),
        }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel.trim_start_matches('/'))
    }

    /// Whether `rel` stays under the root: a path the root's own files
    /// name (a cgroup path, a mount point) may climb out with `..`, and a
    /// recorded root must never read the live machine's files.
    fn inside(rel: &str) -> bool {
        !rel.split('/').any(|c| c == "..")
    }

    pub(crate) fn shown(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    /// The file's bytes up to its first NUL; `None` when it is absent (or
    /// unreadable the way sysfs attributes without a value are).
    fn bytes(&self, rel: &str, max: u64) -> Res<Option<Vec<u8>>> {
        if !Self::inside(rel) {
            return Ok(None);
        }
        match read_small(&self.path(rel), max) {
            Ok(mut bytes) => {
                // Some kernels (and captures of them) end attributes with a
                // NUL; like C readers, the text stops there.
                if let Some(nul) = bytes.iter().position(|&b| b == 0) {
                    bytes.truncate(nul);
                }
                Ok(Some(bytes))
            }
            Err(e) => match e.kind() {
                io::ErrorKind::NotFound
                | io::ErrorKind::NotADirectory
                | io::ErrorKind::IsADirectory
                | io::ErrorKind::PermissionDenied
                | io::ErrorKind::InvalidInput => Ok(None),
                // sysfs answers EINVAL/ENODEV/EIO for attributes that have
                // no value on this machine: that is absence, not a fault.
                _ if e.raw_os_error().is_some() => Ok(None),
                _ => Err(TopologyError::Read {
                    path: self.shown(rel),
                    reason: e.to_string(),
                }),
            },
        }
    }

    /// The file's text; `None` when it is absent (or unreadable the way
    /// sysfs attributes without a value are).
    pub(crate) fn text(&self, rel: &str) -> Res<Option<String>> {
        let Some(bytes) = self.bytes(rel, MAX_ATTR_BYTES)? else {
            return Ok(None);
        };
        match String::from_utf8(bytes) {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(TopologyError::Parse {
                path: self.shown(rel),
                error: ParseError::new("text", &String::from_utf8_lossy(e.as_bytes()), "not UTF-8"),
            }),
        }
    }

    /// The file's text with invalid UTF-8 replaced, for tables whose lines
    /// are independent (the mount table, cpuinfo): one mount point or model
    /// name in another encoding must not hide the lines around it.
    pub(crate) fn text_lossy(&self, rel: &str) -> Res<Option<String>> {
        Ok(self
            .bytes(rel, MAX_FILE_BYTES)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    /// The file parsed with `f`; `None` when absent or blank (sysfs writes
    /// empty files for values it does not know).
    pub(crate) fn parsed<T>(
        &self,
        rel: &str,
        f: impl Fn(&str) -> Result<T, ParseError>,
    ) -> Res<Option<T>> {
        match self.text(rel)? {
            Some(t) if !t.trim().is_empty() => {
                f(&t).map(Some).map_err(|error| TopologyError::Parse {
                    path: self.shown(rel),
                    error,
                })
            }
            _ => Ok(None),
        }
    }

    pub(crate) fn cpulist(&self, rel: &str) -> Res<Option<CpuSet>> {
        self.parsed(rel, parse::parse_cpulist)
    }

    pub(crate) fn cpumask(&self, rel: &str) -> Res<Option<CpuSet>> {
        self.parsed(rel, parse::parse_cpumask)
    }

    pub(crate) fn int(&self, rel: &str) -> Res<Option<i64>> {
        self.parsed(rel, parse::parse_int)
    }

    pub(crate) fn uint(&self, rel: &str) -> Res<Option<u64>> {
        self.parsed(rel, parse::parse_uint)
    }

    pub(crate) fn exists(&self, rel: &str) -> bool {
        Self::inside(rel) && self.path(rel).exists()
    }

    /// Numbers `N` of the directories `PREFIXN` in a directory, sorted
    /// (and so unique: `N` is written without leading zeros). An entry that
    /// is no directory (a file, a link in a loop) is none.
    pub(crate) fn numbered(&self, rel: &str, prefix: &str) -> Vec<usize> {
        if !Self::inside(rel) {
            return Vec::new();
        }
        let mut v: Vec<usize> = match fs::read_dir(self.path(rel)) {
            Ok(d) => d
                .filter_map(|e| e.ok())
                // The entry's type comes with the listing; only a link
                // costs a `stat` (which a loop fails).
                .filter(|e| match e.file_type() {
                    Ok(t) if t.is_symlink() => e.path().is_dir(),
                    Ok(t) => t.is_dir(),
                    Err(_) => e.path().is_dir(),
                })
                .filter_map(|e| {
                    let name = e.file_name();
                    let rest = name.to_str()?.strip_prefix(prefix)?;
                    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    // Callers rebuild the name from the number: `index00`
                    // would read as a second `index0`. The kernel writes
                    // no leading zeros.
                    if rest.len() > 1 && rest.starts_with('0') {
                        return None;
                    }
                    rest.parse::<usize>().ok().filter(|&n| n <= parse::MAX_CPU)
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        v.sort_unstable();
        v
    }
}
