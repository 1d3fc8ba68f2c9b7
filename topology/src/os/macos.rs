//! macOS: `sysctl` (hw.*). macOS exposes no CPU numbering for binding, so
//! CPUs are numbered 0..n in the kernel's order (efficiency cores first on
//! Apple silicon); one NUMA node holds `hw.memsize`.

use std::ffi::CStr;
use std::string::String;
use std::vec::Vec;

use crate::build::Raw;
use crate::{Cache, CacheKind, CoreKind, CpuSet, NumaNode};

/// An integer sysctl (4 or 8 bytes), or `None` when absent.
fn sysctl(name: &CStr) -> Option<u64> {
    let mut buf = [0u8; 8];
    let mut len: libc::size_t = buf.len();
    // SAFETY: `name` is NUL-terminated; `buf` is writable for `len` bytes
    // and the kernel writes at most `len` bytes, updating `len`; no new
    // value is set (null pointer, zero length).
    let rc = unsafe {
        libc::sysctlbyname(
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            core::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return None;
    }
    match len {
        4 => Some(u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as u64),
        8 => Some(u64::from_ne_bytes(buf)),
        _ => None,
    }
}

fn sysctl_fmt(name: String) -> Option<u64> {
    let mut bytes = name.into_bytes();
    bytes.push(0);
    CStr::from_bytes_with_nul(&bytes).ok().and_then(sysctl)
}

fn range(a: usize, b: usize) -> CpuSet {
    (a..b).collect()
}

/// The machine from sysctl, or why not.
pub(crate) fn raw() -> Result<Raw, String> {
    let logical = sysctl(c"hw.logicalcpu")
        .or_else(|| sysctl(c"hw.ncpu"))
        .filter(|&n| n > 0 && n as usize <= crate::parse::MAX_CPU)
        .ok_or("sysctl hw.logicalcpu unavailable")? as usize;
    let physical = sysctl(c"hw.physicalcpu")
        .map_or(logical, |n| n as usize)
        .clamp(1, logical);
    let all = range(0, logical);
    let mut raw = Raw {
        online: all.clone(),
        ..Raw::default()
    };
    // Threads per core are uniform on Macs (Intel SMT-2 or none); siblings
    // are adjacent in the kernel's numbering.
    let per_core = (logical / physical).max(1);
    let mut c = 0;
    while c < logical {
        raw.cores.push(range(c, (c + per_core).min(logical)));
        c += per_core;
    }
    raw.packages.push((Some(0), all.clone()));
    raw.numa_nodes.push(NumaNode {
        os_index: 0,
        cpus: all.clone(),
        memory_bytes: sysctl(c"hw.memsize").unwrap_or(0),
    });
    // Performance levels: perflevel0 is the fastest; the kernel numbers
    // the slowest level's CPUs first, so walk levels from the last.
    let levels = sysctl(c"hw.nperflevels").unwrap_or(0) as usize;
    let mut next = 0;
    let mut kinds = Vec::new();
    for l in (0..levels.min(8)).rev() {
        let n = sysctl_fmt(std::format!("hw.perflevel{l}.logicalcpu")).unwrap_or(0) as usize;
        if n == 0 || next + n > logical {
            break;
        }
        let cpus = range(next, next + n);
        let caches = [
            (1, CacheKind::Data, "l1dcachesize", 1),
            (1, CacheKind::Instruction, "l1icachesize", 1),
            (2, CacheKind::Unified, "l2cachesize", 0),
        ];
        for (level, kind, key, fixed_share) in caches {
            let Some(size) = sysctl_fmt(std::format!("hw.perflevel{l}.{key}")) else {
                continue;
            };
            let share = if fixed_share == 1 {
                1
            } else {
                sysctl_fmt(std::format!("hw.perflevel{l}.cpusperl2"))
                    .map_or(n, |s| s as usize)
                    .clamp(1, n)
            };
            let mut c = next;
            while c < next + n {
                raw.caches.push(Cache {
                    level,
                    kind,
                    size_bytes: size,
                    line_bytes: sysctl(c"hw.cachelinesize").unwrap_or(0) as u32,
                    cpus: range(c, (c + share).min(next + n)),
                });
                c += share;
            }
        }
        kinds.push(CoreKind {
            cpus,
            label: std::format!("perflevel{l}"),
        });
        next += n;
    }
    if levels > 1 && next == logical {
        raw.core_kinds = kinds;
    } else {
        // Intel Macs: one level, caches from hw.cacheconfig (CPUs sharing
        // each level) and hw.l{1d,2,3}cachesize.
        raw.caches.clear();
        let mut config = [0u64; 8];
        let mut len: libc::size_t = core::mem::size_of_val(&config);
        // SAFETY: as in `sysctl`: `config` is writable for `len` bytes.
        let rc = unsafe {
            libc::sysctlbyname(
                c"hw.cacheconfig".as_ptr(),
                config.as_mut_ptr().cast(),
                &mut len,
                core::ptr::null_mut(),
                0,
            )
        };
        let keys = [
            (1, CacheKind::Data, c"hw.l1dcachesize"),
            (1, CacheKind::Instruction, c"hw.l1icachesize"),
            (2, CacheKind::Unified, c"hw.l2cachesize"),
            (3, CacheKind::Unified, c"hw.l3cachesize"),
        ];
        for (level, kind, key) in keys {
            let Some(size) = sysctl(key).filter(|&s| s > 0) else {
                continue;
            };
            let share = if rc == 0 {
                config[level as usize] as usize
            } else {
                0
            };
            let share = if share == 0 {
                logical
            } else {
                share.min(logical)
            };
            let mut c = 0;
            while c < logical {
                raw.caches.push(Cache {
                    level,
                    kind,
                    size_bytes: size,
                    line_bytes: sysctl(c"hw.cachelinesize").unwrap_or(0) as u32,
                    cpus: range(c, (c + share).min(logical)),
                });
                c += share;
            }
        }
    }
    Ok(raw)
}
