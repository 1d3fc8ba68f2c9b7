//! The `keel` command: `keel topo` prints the machine as keel sees it.

use std::process::ExitCode;

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
        Some(cmd) => {
            eprintln!("keel: command `{cmd}` is not available yet\n\n{}", usage());
            ExitCode::FAILURE
        }
        None => {
            eprint!("{}", usage());
            ExitCode::FAILURE
        }
    }
}
