//! The `keel` command: `keel topo` prints the machine as keel sees it.

use std::io::Write as _;
use std::process::ExitCode;

mod topo;

fn usage() -> &'static str {
    "usage: keel <command>\n\ncommands:\n  topo [--json] [--root DIR]   print the machine as keel sees it\n"
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-h") | Some("--help") | Some("help") => {
            print!("{}", usage());
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
        Some(cmd) => {
            eprintln!("keel: unknown command `{cmd}`\n\n{}", usage());
            ExitCode::FAILURE
        }
        None => {
            eprint!("{}", usage());
            ExitCode::FAILURE
        }
    }
}
