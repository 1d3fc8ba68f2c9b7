//! The `keel` command: `keel topo` prints the machine as keel sees it.

use std::ffi::OsString;
use std::io::Write as _;
use std::process::ExitCode;

mod topo;

fn usage() -> &'static str {
    "usage: keel <command>\n\ncommands:\n  topo [--json] [--root DIR]   print the machine as keel sees it\n\n`keel <command> --help` says more.\n"
}

fn main() -> ExitCode {
    // OS strings: `std::env::args` panics on an argument that is not UTF-8,
    // and a Linux path (`--root`) need not be.
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match args.first().and_then(|a| a.to_str()) {
        Some("-h") | Some("--help") | Some("help") => {
            // `print!` panics on a closed pipe; the help text is not worth one.
            let _ = std::io::stdout().write_all(usage().as_bytes());
            ExitCode::SUCCESS
        }
        Some("topo") => {
            let result = topo::parse_args(&args[1..]).and_then(|o| topo::run(&o));
            match result {
                Ok(text) => {
                    // A closed pipe (`keel topo | head`) is not an error worth a panic.
                    let _ = std::io::stdout().write_all(text.as_bytes());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("keel topo: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        None if args.is_empty() => {
            eprint!("{}", usage());
            ExitCode::FAILURE
        }
        _ => {
            let cmd = args[0].to_string_lossy();
            eprintln!("keel: unknown command `{cmd}`\n\n{}", usage());
            ExitCode::FAILURE
        }
    }
}
