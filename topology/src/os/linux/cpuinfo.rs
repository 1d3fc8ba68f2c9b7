//! `proc/cpuinfo`: the processors it lists and the IDs they carry.

use std::string::ToString;
use std::vec::Vec;

use super::sysfs::{Res, Sysfs};
use crate::parse;

/// One `processor` entry of `/proc/cpuinfo`.
#[derive(Default)]
pub(crate) struct CpuInfoProc {
    /// Its `processor` number.
    pub(crate) processor: usize,
    /// Its `physical id` (package), when given.
    pub(crate) physical_id: Option<i64>,
    /// Its `core id`, when given.
    pub(crate) core_id: Option<i64>,
}

/// What `proc/cpuinfo` says (empty when it is absent).
#[derive(Default)]
pub(crate) struct CpuInfo {
    /// Its processors, in the order listed.
    pub(crate) procs: Vec<CpuInfoProc>,
    /// An AMD family 0x15/0x16 part, whose compute units pair threads
    /// that each count as a core.
    pub(crate) is_amd_with_cu: bool,
}

impl CpuInfo {
    pub(crate) fn read(fs: &Sysfs) -> Res<CpuInfo> {
        // Lossy: firmware strings (model names, ARM `Hardware`) need not be
        // UTF-8, and only the numeric fields are read.
        let Some(text) = fs.text_lossy("proc/cpuinfo")? else {
            return Ok(CpuInfo::default());
        };
        let mut info = CpuInfo::default();
        let (mut vendor, mut family) = (None, None);
        for line in text.lines() {
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let (k, v) = (k.trim(), v.trim());
            match k {
                // Values are labels here: an unparsable one is skipped, as
                // hwloc does, because cpuinfo's format varies by arch.
                "processor" => {
                    if let Ok(p) = parse::parse_uint(v) {
                        if p as usize <= parse::MAX_CPU {
                            info.procs.push(CpuInfoProc {
                                processor: p as usize,
                                ..Default::default()
                            });
                        }
                    }
                }
                "physical id" => {
                    if let Some(p) = info.procs.last_mut() {
                        p.physical_id = parse::parse_int(v).ok();
                    }
                }
                "core id" => {
                    if let Some(p) = info.procs.last_mut() {
                        p.core_id = parse::parse_int(v).ok();
                    }
                }
                "vendor_id" if vendor.is_none() => vendor = Some(v.to_string()),
                "cpu family" if family.is_none() => family = Some(v.to_string()),
                _ => {}
            }
        }
        info.is_amd_with_cu = vendor.as_deref() == Some("AuthenticAMD")
            && matches!(family.as_deref(), Some("21") | Some("22"));
        Ok(info)
    }
}
