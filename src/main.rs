//! The `keel` command: `keel topo` prints the machine as keel sees it;
//! `keel doctor` measures it and says how to run keel on it.
//!
//! Arguments are parsed with lexopt: two subcommands with a few flags each
//! need no more, it keeps arguments as OS strings (a `--root` directory
//! need not be UTF-8), adds no dependency of its own, and leaves the help
//! text and the error words to us.

use std::io::Write as _;
use std::process::ExitCode;

mod doctor;
mod topo;

const USAGE: &str = "\
usage: keel <command> [options]

commands:
  topo      print the machine as keel sees it (--json, --root DIR)
  doctor    measure this machine and recommend how to run keel on it
            (--quick, --json, --out DIR)

`keel <command> --help` says more about each.
";

/// Writes `text` to stdout; a closed pipe (`keel topo | head`) is not
/// worth a panic.
fn print(text: &str) {
    let _ = std::io::stdout().write_all(text.as_bytes());
}

fn main() -> ExitCode {
    use lexopt::prelude::*;
    let mut p = lexopt::Parser::from_env();
    let cmd = match p.next() {
        Ok(Some(Value(cmd))) => cmd,
        Ok(Some(Short('h') | Long("help"))) => {
            print(USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(None) => {
            eprint!("{USAGE}");
            return ExitCode::FAILURE;
        }
        Ok(Some(arg)) => {
            eprintln!("keel: {}\n\n{USAGE}", arg.unexpected());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("keel: {e}\n\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    // The output, and why the command failed after all (printed after it).
    let result = match cmd.to_str() {
        Some("topo") => topo::parse_args(&mut p).and_then(|o| topo::run(&o).map(|t| (t, None))),
        Some("doctor") => doctor::parse_args(&mut p).and_then(|o| doctor::run(&o)),
        Some("help") => Ok((USAGE.to_string(), None)),
        _ => {
            let cmd = cmd.to_string_lossy();
            eprintln!("keel: unknown command `{cmd}`\n\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    match result {
        Ok((text, None)) => {
            print(&text);
            ExitCode::SUCCESS
        }
        Ok((text, Some(e))) => {
            print(&text);
            eprintln!("keel {}: {e}", cmd.to_string_lossy());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("keel {}: {e}", cmd.to_string_lossy());
            ExitCode::FAILURE
        }
    }
}
