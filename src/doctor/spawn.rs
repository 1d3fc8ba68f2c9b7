//! Starting a measurement's child process and reading its answer, with a
//! time limit: a child that crashes, hangs or answers nonsense is reported
//! as such, and the run goes on.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs `keel doctor --child ID` (`exe` is this binary) and returns the JSON
/// object it printed, or what went wrong in words.
pub fn run(exe: &Path, id: &str, quick: bool, limit: Duration) -> Result<Value, String> {
    let mut cmd = Command::new(exe);
    cmd.args(["doctor", "--child", id]);
    if quick {
        cmd.arg("--quick");
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start: {e}"))?;
    // Drained on threads, so that a chatty child never blocks on a full pipe.
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let status = wait(&mut child, limit);
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let last_err = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let status = match status {
        Some(s) => s,
        None => {
            return Err(format!(
                "hung: no answer within {} s; killed",
                limit.as_secs_f64()
            ));
        }
    };
    if !status.success() {
        return Err(match signal(&status) {
            Some(sig) => format!("crashed: killed by signal {sig}{}", signal_name(sig)),
            None => format!(
                "failed: exit status {}{}",
                status.code().unwrap_or(-1),
                if last_err.is_empty() {
                    String::new()
                } else {
                    format!(": {last_err}")
                }
            ),
        });
    }
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    match serde_json::from_str::<Value>(line) {
        Ok(v) if v.is_object() => Ok(v),
        _ => Err(format!("failed: no result on stdout ({line:?})")),
    }
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let mut bytes = Vec::new();
            let _ = p.read_to_end(&mut bytes);
            s = String::from_utf8_lossy(&bytes).into_owned();
        }
        s
    })
}

/// Waits for `child` up to `limit`; kills it and returns `None` past that.
fn wait(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

#[cfg(unix)]
fn signal(s: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt as _;
    s.signal()
}

#[cfg(not(unix))]
fn signal(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        _ => "",
    }
}
