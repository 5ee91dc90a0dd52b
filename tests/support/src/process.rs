//! A finished process, as tests look at it.

use std::process::{Command, Output};

/// A finished process: its exit code and both streams as text.
#[derive(Debug)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl From<Output> for Run {
    /// Fails when the process was killed by a signal or wrote other than
    /// UTF-8.
    fn from(out: Output) -> Run {
        Run {
            code: out.status.code().expect("exited, not killed by a signal"),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

/// Runs `args` (the program first) on a pseudo-terminal through `script`,
/// which copies what the command wrote, both streams, to its own stdout.
///
/// ```
/// let out = test_support::process::on_terminal(&["sh", "-c", "test -t 1 && echo terminal"]);
/// assert!(String::from_utf8_lossy(&out.stdout).contains("terminal"));
/// ```
pub fn on_terminal(args: &[&str]) -> Output {
    let words: Vec<String> = args
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect();
    Command::new("script")
        .args(["-qec", &words.join(" "), "/dev/null"])
        .output()
        .expect("`script` (util-linux) runs")
}
