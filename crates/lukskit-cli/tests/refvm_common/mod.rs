//! Running scripts in the reference VM (`tests/refvm/run.sh`) from integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The directory of the VM harness.
pub fn refvm_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/refvm")
}

/// What a run of `run.sh` gave.
pub struct VmRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Run `tests/refvm/run.sh ARGS`, with the lukskit binary under test in the VM when
/// `with_lukskit`.
pub fn run_sh(args: &[&std::ffi::OsStr], with_lukskit: bool) -> VmRun {
    let mut cmd = Command::new("bash");
    cmd.arg(refvm_dir().join("run.sh"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if with_lukskit {
        cmd.env("LUKSKIT_BIN", env!("CARGO_BIN_EXE_lukskit"));
    } else {
        cmd.env_remove("LUKSKIT_BIN");
    }
    let out = cmd.output().expect("cannot run bash tests/refvm/run.sh");
    VmRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Why `run.sh` skipped (exit 77): its last `SKIP:` line, else all of its stderr.
pub fn skip_reason(r: &VmRun) -> String {
    r.stderr
        .lines()
        .rev()
        .find(|l| l.contains("SKIP:"))
        .unwrap_or(r.stderr.trim())
        .to_string()
}

/// Download and build what the VM needs; `Err(reason)` means the caller skips.
pub fn prepare() -> Result<(), String> {
    if std::env::var("LUKSKIT_REFVM").as_deref() == Ok("0") {
        return Err("LUKSKIT_REFVM=0".into());
    }
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return Err("the reference VM needs an x86_64 Linux host".into());
    }
    if Command::new("bash")
        .args(["-c", "true"])
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        return Err("bash not found".into());
    }
    let r = run_sh(&["--prepare".as_ref()], false);
    match r.code {
        0 => Ok(()),
        77 => Err(skip_reason(&r)),
        _ => panic!(
            "tests/refvm/run.sh --prepare failed ({}): {}{}",
            r.code, r.stdout, r.stderr
        ),
    }
}
