//! Running scripts in the reference VM (`tests/refvm/run.sh`) from integration tests.
//!
//! Where the VM cannot be had (run.sh exits 77, or `LUKSKIT_REFVM=0` turns it off) a test
//! fails unless `LUKSKIT_ALLOW_SKIP=1` lets it skip ([`lukskit_testkit::skip_or_fail`]):
//! both are for people whose machine cannot run the VM, never for CI. Every VM run has an
//! explicit timeout, generous for a loaded host; the time it took and the timeout are
//! printed, and a run stopped by its timeout fails saying so.
#![allow(dead_code)]

use lukskit_testkit::skip_or_fail;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// run.sh's exit status when the VM cannot be provided here.
pub const EXIT_UNAVAILABLE: i32 = 77;
/// run.sh's exit status when it stopped the VM at its timeout.
pub const EXIT_TIMEOUT: i32 = 124;
/// run.sh's exit status when the VM stopped without reporting the script's status.
pub const EXIT_HARNESS: i32 = 125;

/// A line on standard error that the test harness does not capture (progress of long VM
/// runs, their timings).
pub fn say(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(s.as_bytes());
    let _ = e.write_all(b"\n");
}

/// The timeout (seconds) for a VM run whose work is expected to take about `expected`
/// seconds on an idle host here: four times that (a loaded host, TCG slowed down by other
/// builds), at least 5 minutes. `LUKSKIT_REFVM_TIMEOUT=SECS` raises it.
pub fn timeout_for(expected: u64) -> u64 {
    let ours = (4 * expected).max(300);
    std::env::var("LUKSKIT_REFVM_TIMEOUT")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(ours, |t| t.max(ours))
}

/// The directory of the VM harness.
pub fn refvm_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/refvm")
}

/// What a run of `run.sh` gave.
pub struct VmRun {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// The `--timeout` it was given (seconds; None = run.sh's default).
    pub timeout: Option<u64>,
}

impl VmRun {
    /// Whether run.sh stopped the VM at its timeout.
    pub fn timed_out(&self) -> bool {
        self.code == EXIT_TIMEOUT && self.stderr.contains("the VM timed out")
    }

    /// Whether the script ran to its end in the VM (its status is `code`). Fails the test
    /// when the VM was stopped by its timeout (saying so, and how long it ran) or stopped
    /// without a status; when the VM cannot be had here, [`skip_or_fail`] and false.
    pub fn ran(&self, test: &str) -> bool {
        let timeout = self
            .timeout
            .map_or("run.sh's default".to_string(), |t| format!("{t} s"));
        if self.timed_out() {
            panic!(
                "{test}: TIMEOUT: the reference VM was stopped by its timeout ({timeout}) after \
                 running {:.0} s; a loaded host slows TCG down: set LUKSKIT_REFVM_TIMEOUT=SECS \
                 to allow more. stdout={} stderr={}",
                self.elapsed.as_secs_f64(),
                self.stdout,
                self.stderr
            );
        }
        match self.code {
            EXIT_UNAVAILABLE => {
                skip_or_fail(
                    test,
                    &format!("the reference VM is not available: {}", skip_reason(self)),
                );
                false
            }
            EXIT_HARNESS => panic!(
                "{test}: the reference VM stopped without reporting the script's status after \
                 {:.0} s (timeout {timeout}): stdout={} stderr={}",
                self.elapsed.as_secs_f64(),
                self.stdout,
                self.stderr
            ),
            _ => true,
        }
    }
}

/// Run `tests/refvm/run.sh --timeout TIMEOUT ARGS` for `test` (see [`run_sh`]), and print
/// how long it took against the timeout.
pub fn run_vm(test: &str, timeout: u64, args: &[&std::ffi::OsStr], with_lukskit: bool) -> VmRun {
    run_vm_env(test, timeout, args, with_lukskit, &[])
}

/// [`run_vm`] with more environment for run.sh (e.g. `LUKSKIT_REFVM_CPUS` for this VM only).
pub fn run_vm_env(
    test: &str,
    timeout: u64,
    args: &[&std::ffi::OsStr],
    with_lukskit: bool,
    env: &[(&str, String)],
) -> VmRun {
    let t = timeout.to_string();
    let mut all: Vec<&std::ffi::OsStr> = vec!["--timeout".as_ref(), t.as_ref()];
    all.extend_from_slice(args);
    let mut r = run_sh_env(&all, with_lukskit, env);
    r.timeout = Some(timeout);
    say(&format!(
        "refvm: {test}: the VM run took {:.1} s (timeout {timeout} s, exit status {})",
        r.elapsed.as_secs_f64(),
        r.code
    ));
    // The guest's own timings ("...: took N s" lines), so that a log shows where a long run
    // spent its time whether or not the test passes.
    for line in r.stdout.lines().filter(|l| is_timing(l)) {
        say(&format!("refvm: {test}: {line}"));
    }
    r
}

/// A guest script's timing line: `WHAT: took N s`.
fn is_timing(line: &str) -> bool {
    line.strip_suffix(" s")
        .and_then(|l| l.rsplit_once(": took "))
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Run `tests/refvm/run.sh ARGS`, with the lukskit binary under test in the VM when
/// `with_lukskit`.
pub fn run_sh(args: &[&std::ffi::OsStr], with_lukskit: bool) -> VmRun {
    run_sh_env(args, with_lukskit, &[])
}

/// [`run_sh`] with more environment for run.sh.
pub fn run_sh_env(args: &[&std::ffi::OsStr], with_lukskit: bool, env: &[(&str, String)]) -> VmRun {
    let mut cmd = Command::new("bash");
    cmd.arg(refvm_dir().join("run.sh"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if with_lukskit {
        cmd.env("LUKSKIT_BIN", env!("CARGO_BIN_EXE_lukskit"));
    } else {
        cmd.env_remove("LUKSKIT_BIN");
    }
    let t0 = Instant::now();
    let out = cmd.output().expect("cannot run bash tests/refvm/run.sh");
    VmRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: t0.elapsed(),
        timeout: None,
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

/// Download and build what the VM needs: true when it is ready; otherwise
/// [`skip_or_fail`] for `test` with the reason and false.
pub fn vm_ready(test: &str) -> bool {
    match prepare() {
        Ok(()) => true,
        Err(why) => {
            skip_or_fail(test, &why);
            false
        }
    }
}

/// Download and build what the VM needs; `Err(reason)` when it cannot be had here.
pub fn prepare() -> Result<(), String> {
    if std::env::var("LUKSKIT_REFVM").as_deref() == Ok("0") {
        return Err(
            "LUKSKIT_REFVM=0 turns the reference VM off (unset it to run the VM tests)".into(),
        );
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
        EXIT_UNAVAILABLE => Err(format!(
            "the reference VM is not available: {} (see tests/refvm/README.md: it needs \
             qemu-system-x86, cpio, kmod, dpkg-deb and the Debian mirror or a warm cache)",
            skip_reason(&r)
        )),
        _ => panic!(
            "tests/refvm/run.sh --prepare failed ({}): {}{}",
            r.code, r.stdout, r.stderr
        ),
    }
}

/// Run `tests/refvm/SCRIPT` in the VM with lukskit and `disks` blank 64 MiB disks (made in
/// `dir`), with the timeout for a run of about `expected` seconds. `None` when the VM cannot
/// be had here and [`skip_or_fail`] allowed a skip; otherwise the run, which must have
/// exited 0. [`ScriptRun`] takes more options.
pub fn run_script_on_blank_disks(
    test: &str,
    script: &str,
    dir: &Path,
    disks: usize,
    expected: u64,
) -> Option<VmRun> {
    ScriptRun::new(test, script, dir, disks, expected).run()
}

/// A run of a guest script on blank disks (see [`run_script_on_blank_disks`]), with the
/// options beyond it as fields.
pub struct ScriptRun<'a> {
    /// The test's name (in messages, and for [`vm_ready`]).
    pub test: &'a str,
    /// The script, relative to `tests/refvm/`.
    pub script: &'a str,
    /// Where the blank disks are made.
    pub dir: &'a Path,
    /// How many blank disks (`/dev/vda`, `/dev/vdb`, ...).
    pub disks: usize,
    /// Their size in MiB (64; less data for a script that reads or wipes a whole disk under
    /// emulation).
    pub mib: u64,
    /// About how long the run takes, in seconds: the timeout follows from it.
    pub expected: u64,
    /// run.sh options before the script (`--copy FILE`, ...).
    pub options: &'a [&'a std::ffi::OsStr],
    /// The caller's disks, after the blank ones.
    pub more_disks: &'a [&'a std::ffi::OsStr],
}

impl<'a> ScriptRun<'a> {
    /// A run on `disks` blank 64 MiB disks, no more options or disks.
    pub fn new(test: &'a str, script: &'a str, dir: &'a Path, disks: usize, expected: u64) -> Self {
        ScriptRun {
            test,
            script,
            dir,
            disks,
            mib: 64,
            expected,
            options: &[],
            more_disks: &[],
        }
    }

    /// Make the disks and run the script: `None` when the VM cannot be had here and
    /// [`skip_or_fail`] allowed a skip; otherwise the run, which must have exited 0.
    pub fn run(&self) -> Option<VmRun> {
        let test = self.test;
        if !vm_ready(test) {
            return None;
        }
        let images: Vec<String> = (0..self.disks)
            .map(|i| {
                let p = self.dir.join(format!("disk{i}.img"));
                std::fs::File::create(&p)
                    .and_then(|f| f.set_len(self.mib << 20))
                    .expect("blank disk image");
                p.display().to_string()
            })
            .collect();
        let script = refvm_dir().join(self.script);
        let mut args = self.options.to_vec();
        args.push(script.as_os_str());
        args.extend(images.iter().map(|d| std::ffi::OsStr::new(d.as_str())));
        args.extend_from_slice(self.more_disks);
        let r = run_vm(test, timeout_for(self.expected), &args, true);
        if !r.ran(test) {
            return None;
        }
        assert_eq!(
            r.code, 0,
            "{test}: {script:?} in the VM: {}{}",
            r.stdout, r.stderr
        );
        Some(r)
    }
}

/// The lines of a guest transcript that follow its `== A B` block headers, each as
/// `(A, B, line)` (lines before the first header are left out). The guest scripts print one
/// header per case and tool, then what they read back (`table: `, `status: `, ...).
pub fn block_lines(out: &str) -> Vec<(String, String, &str)> {
    let mut lines = Vec::new();
    let mut cur: Option<(String, String)> = None;
    for line in out.lines() {
        if let Some(h) = line.strip_prefix("== ") {
            let mut it = h.split(' ');
            cur = Some((
                it.next().unwrap_or("").to_string(),
                it.next().unwrap_or("").to_string(),
            ));
        } else if let Some((a, b)) = &cur {
            lines.push((a.clone(), b.clone(), line));
        }
    }
    lines
}
