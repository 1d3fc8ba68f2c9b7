//! The config file `KEEL_CONFIG` names: it round-trips, the environment
//! overrides it, bad lines are notes, and the pool honours it.
#![cfg(not(keel_loom))]

use keel_pool::settings::{self, KEYS, Settings};
use keel_pool::{Pool, Source};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// A file under the temporary directory, unique to this process and `name`.
fn temp_file(name: &str, contents: &[u8]) -> PathBuf {
    let p = std::env::temp_dir().join(format!("keel-pool-{}-{name}", std::process::id()));
    std::fs::write(&p, contents).expect("write a temporary file");
    p
}

/// A lookup over `vars`, standing in for the environment.
fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, OsString> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), OsString::from(v)))
        .collect();
    move |k| map.get(k).cloned()
}

/// One valid value per key.
const VALUES: [(&str, &str); 7] = [
    (settings::WORKERS, "12"),
    (settings::SPIN_US, "0"),
    (settings::BIND, "spread"),
    (settings::PLACEMENT, "node:3"),
    (settings::WIDTH_SCAN, "8"),
    (settings::WIDTH_GATHER, "16"),
    (settings::WIDTH_COMPUTE, "24"),
];

#[test]
fn the_file_round_trips() {
    let mut s = Settings::new();
    for (k, v) in VALUES {
        s.set(k, v).unwrap();
    }
    let text = s.to_string();
    assert_eq!(text.lines().count(), KEYS.len());
    let back = Settings::parse(&text);
    assert!(back.notes().is_empty(), "{:?}", back.notes());
    for (k, v) in VALUES {
        assert_eq!(s.get(k), Some((v, Source::Builder)));
        assert_eq!(back.get(k), Some((v, Source::File)), "{k}");
    }
    assert_eq!(back.to_string(), text);
    // Typed getters read the same values.
    assert_eq!(back.workers(), Some((12, Source::File)));
    assert_eq!(back.spin(), Some((Duration::ZERO, Source::File)));
    assert_eq!(
        back.count(settings::WIDTH_COMPUTE),
        Some((24, Source::File))
    );
    #[cfg(feature = "topology")]
    assert_eq!(
        back.binding(),
        Some((keel_pool::Binding::Spread, Source::File))
    );
    // Comments, blank lines, spaces and CRLF line ends are all fine.
    let s = Settings::parse("\r\n# widths\r\n  KEEL_WIDTH_SCAN = 4  # measured\r\n\r\n");
    assert_eq!(s.get(settings::WIDTH_SCAN), Some(("4", Source::File)));
    assert!(s.notes().is_empty(), "{:?}", s.notes());
    if cfg!(miri) {
        println!("skipping the file read under Miri: isolation forbids it");
        return;
    }
    // Through a real file named by KEEL_CONFIG.
    let path = temp_file("round-trip", text.as_bytes());
    let read = Settings::from_lookup(env(&[(settings::CONFIG, path.to_str().unwrap())]));
    std::fs::remove_file(&path).unwrap();
    assert!(read.notes().is_empty(), "{:?}", read.notes());
    assert_eq!(read.file(), Some(path.as_path()));
    assert_eq!(read.to_string(), text);
}

#[test]
fn the_environment_overrides_the_file() {
    let file = "KEEL_WORKERS=6\nKEEL_SPIN_US=40\nKEEL_PLACEMENT=interleave\n";
    // No file access under Miri: the layering is then checked on the
    // environment alone.
    let file_path = (!cfg!(miri)).then(|| temp_file("override", file.as_bytes()));
    let lookup_file = file_path.as_ref().map(|p| p.to_str().unwrap().to_string());
    let mut vars = vec![
        (settings::WORKERS, "3"),
        // A bad value in the environment is a note; the file's value holds.
        (settings::SPIN_US, "soon"),
        (settings::WIDTH_GATHER, "2"),
    ];
    if let Some(p) = &lookup_file {
        vars.push((settings::CONFIG, p));
    }
    let s = Settings::from_lookup(env(&vars));
    if let Some(p) = &lookup_file {
        std::fs::remove_file(p).unwrap();
        assert_eq!(s.get(settings::SPIN_US), Some(("40", Source::File)));
        assert_eq!(
            s.get(settings::PLACEMENT),
            Some(("interleave", Source::File))
        );
        assert_eq!(s.notes().len(), 1, "{:?}", s.notes());
        assert!(
            s.notes()[0].contains("KEEL_SPIN_US=\"soon\" ignored")
                && s.notes()[0].contains("the config file's \"40\" applies"),
            "{:?}",
            s.notes()
        );
    }
    assert_eq!(s.workers(), Some((3, Source::Env)));
    assert_eq!(s.get(settings::WIDTH_GATHER), Some(("2", Source::Env)));
    assert_eq!(s.get(settings::WIDTH_SCAN), None);
}

#[test]
fn bad_lines_are_notes() {
    let text = "KEEL_WORKERS=0\n\
                KEEL_WORKERS = many\n\
                KEEL_BIND=sideways\n\
                KEEL_PLACEMENT=node:x\n\
                KEEL_SPIN_US=-5\n\
                KEEL_KERNELS=avx2\n\
                KEEL_CONFIG=/etc/other\n\
                just some words\n\
                =3\n\
                KEEL_WIDTH_SCAN=4\n\
                KEEL_WIDTH_SCAN=5\n";
    let s = Settings::parse(text);
    let notes = s.notes();
    assert_eq!(notes.len(), 10, "{notes:#?}");
    for (line, what) in [
        (
            1,
            "KEEL_WORKERS=\"0\" ignored: expected an integer of at least 1",
        ),
        (2, "KEEL_WORKERS=\"many\" ignored"),
        (
            3,
            "KEEL_BIND=\"sideways\" ignored: expected none, close or spread",
        ),
        (4, "KEEL_PLACEMENT=\"node:x\" ignored"),
        (5, "KEEL_SPIN_US=\"-5\" ignored"),
        (6, "\"KEEL_KERNELS\" ignored: unknown key"),
        (
            7,
            "\"KEEL_CONFIG\" ignored: a config file cannot name another",
        ),
        (8, "\"just some words\" ignored: not KEY=VALUE"),
        (9, "\"\" ignored: unknown key"),
        (11, "KEEL_WIDTH_SCAN set again; this line wins"),
    ] {
        let want = format!("config:{line}: {what}");
        assert!(
            notes.iter().any(|n| n.starts_with(&want)),
            "{want}\n{notes:#?}"
        );
    }
    // Only the good line and the later duplicate stay.
    assert_eq!(s.to_string(), "KEEL_WIDTH_SCAN=5\n");

    // Arbitrary bytes never panic; every line is a value or a note.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let alphabet = b"KEL_WORSPINUDTH=#:0123456789 \n\r\tabcdelos-+";
    for _ in 0..if cfg!(miri) { 20 } else { 2_000 } {
        let len = (x % 80) as usize;
        let mut t = String::new();
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t.push(alphabet[(x % alphabet.len() as u64) as usize] as char);
        }
        let s = Settings::parse(&t);
        let written = s.to_string();
        assert_eq!(Settings::parse(&written).to_string(), written, "{t:?}");
    }
}

#[test]
fn unreadable_files_are_notes() {
    if cfg!(miri) {
        println!("skipping under Miri: isolation forbids file access");
        return;
    }
    let missing = std::env::temp_dir().join("keel-pool-no-such-config");
    let big = temp_file("big", &vec![b'#'; settings::MAX_FILE_BYTES as usize + 1]);
    let binary = temp_file("binary", b"KEEL_WORKERS=2\n\xff\xfe\n");
    let dir = std::env::temp_dir();
    for (path, why) in [
        (missing.clone(), "cannot read"),
        (big.clone(), "larger than 65536 bytes"),
        (binary.clone(), "not UTF-8"),
        (dir, "not a regular file"),
        (PathBuf::new(), "KEEL_CONFIG is empty"),
    ] {
        let p = path.to_str().unwrap().to_string();
        let s = Settings::from_lookup(env(&[(settings::CONFIG, &p), (settings::WORKERS, "2")]));
        assert_eq!(s.notes().len(), 1, "{p}: {:?}", s.notes());
        assert!(s.notes()[0].contains(why), "{p}: {:?}", s.notes());
        assert_eq!(s.file(), None);
        // The environment still applies.
        assert_eq!(s.workers(), Some((2, Source::Env)));
    }
    std::fs::remove_file(big).unwrap();
    std::fs::remove_file(binary).unwrap();
    // A FIFO with no writer: opened for reading it would block for ever.
    #[cfg(unix)]
    {
        let fifo = std::env::temp_dir().join(format!("keel-pool-{}-fifo", std::process::id()));
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let p = fifo.to_str().unwrap().to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let s = Settings::from_lookup(env(&[(settings::CONFIG, &p)]));
            let _ = tx.send(s.notes().to_vec());
        });
        let notes = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("reading a FIFO as the config file hung");
        assert!(
            notes.len() == 1 && notes[0].contains("not a regular file"),
            "{notes:?}"
        );
        std::fs::remove_file(fifo).unwrap();
    }
    // A byte-order mark before the first key.
    let s = Settings::parse("\u{feff}KEEL_WORKERS=3\n");
    assert_eq!((s.workers(), s.notes().len()), (Some((3, Source::File)), 0));
}

/// The only test in this binary that touches the environment or builds a
/// pool from it, so nothing else reads it concurrently.
#[test]
fn the_pool_honours_the_file() {
    if cfg!(miri) {
        println!("skipping under Miri: isolation forbids file access");
        return;
    }
    let path = temp_file(
        "pool",
        b"# a recommendation\nKEEL_WORKERS=3\nKEEL_SPIN_US=250\nKEEL_BIND=close\nKEEL_WIDTH_SCAN=2\nKEEL_NOISE=1\n",
    );
    // SAFETY: no other thread of this process reads or writes the
    // environment now (see above).
    unsafe {
        for k in KEYS {
            std::env::remove_var(k);
        }
        std::env::set_var(settings::CONFIG, &path);
    }
    let p = Pool::new().unwrap();
    let c = p.config();
    assert_eq!((p.width(), c.width_source), (3, Source::File));
    assert_eq!(
        (c.spin, c.spin_source),
        (Duration::from_micros(250), Source::File)
    );
    #[cfg(feature = "topology")]
    assert_eq!(
        (c.binding, c.binding_source),
        (keel_pool::Binding::Close, Source::File)
    );
    assert_eq!(c.config_file.as_deref(), Some(path.as_path()));
    assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
    assert!(
        c.notes[0].contains(":6: \"KEEL_NOISE\" ignored"),
        "{:?}",
        c.notes
    );
    drop(p);
    // The environment overrides the file; the builder overrides both.
    // SAFETY: as above.
    unsafe { std::env::set_var(settings::WORKERS, "2") };
    let p = Pool::new().unwrap();
    assert_eq!((p.width(), p.config().width_source), (2, Source::Env));
    assert_eq!(p.config().spin_source, Source::File);
    drop(p);
    let p = Pool::builder()
        .width(4)
        .spin_window(Duration::ZERO)
        .build()
        .unwrap();
    assert_eq!((p.width(), p.config().width_source), (4, Source::Builder));
    assert_eq!(p.config().spin_source, Source::Builder);
    drop(p);
    // A width from the file is capped like one from the environment.
    std::fs::write(&path, "KEEL_WORKERS=100000\n").unwrap();
    // SAFETY: as above.
    unsafe { std::env::remove_var(settings::WORKERS) };
    let p = Pool::new().unwrap();
    assert_eq!(p.config().width_source, Source::File);
    assert!(
        p.config()
            .notes
            .iter()
            .any(|n| n.contains("KEEL_WORKERS=100000 capped at") && n.contains("config file")),
        "{:?}",
        p.config().notes
    );
    drop(p);
    // SAFETY: as above.
    unsafe { std::env::remove_var(settings::CONFIG) };
    std::fs::remove_file(&path).unwrap();
}
