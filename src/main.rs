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
            (--quick, --json, --out DIR, --only QUESTIONS, --timeout SECS)

`keel <command> --help` says more about each.
";

/// Writes `text` to stdout. A closed pipe (`keel topo | head`) is the
/// reader's choice, not worth a word; any other failure (a full disk) is
/// the output lost, so it is said and the command fails.
fn print(text: &str) -> bool {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => true,
        Err(e) => {
            say(&format!("keel: cannot write the output: {e}"));
            false
        }
    }
}

/// Writes a line to stderr, whatever becomes of it (`eprintln!` panics
/// when stderr is closed or full).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn main() -> ExitCode {
    use lexopt::prelude::*;
    let mut p = lexopt::Parser::from_env();
    let cmd = match p.next() {
        Ok(Some(Value(cmd))) => cmd,
        Ok(Some(Short('h') | Long("help"))) => {
            return status(print(USAGE));
        }
        Ok(None) => {
            say(USAGE.trim_end());
            return ExitCode::FAILURE;
        }
        Ok(Some(arg)) => {
            say(&format!("keel: {}\n\n{USAGE}", arg.unexpected()));
            return ExitCode::FAILURE;
        }
        Err(e) => {
            say(&format!("keel: {e}\n\n{USAGE}"));
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
            say(&format!("keel: unknown command `{cmd}`\n\n{USAGE}"));
            return ExitCode::FAILURE;
        }
    };
    match result {
        Ok((text, None)) => status(print(&text)),
        Ok((text, Some(e))) => {
            print(&text);
            say(&format!("keel {}: {e}", cmd.to_string_lossy()));
            ExitCode::FAILURE
        }
        Err(e) => {
            say(&format!("keel {}: {e}", cmd.to_string_lossy()));
            ExitCode::FAILURE
        }
    }
}

/// Success if the output was written.
fn status(written: bool) -> ExitCode {
    if written {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
