//! cryptsetup 2.6.1's own test scripts (`../shared/cryptsetup-2.6.1-tests`, upstream's
//! `tests/`) in the reference VM (and, for the ones that need no device-mapper, on the host),
//! against real cryptsetup 2.6.1 and against lukskit.
//!
//! The scripts are read from `../shared` at run time (never copied into the repository), packed
//! with a `differ` compiled from their `differ.c`, and shipped into the VM, where
//! `tests/refvm/upstream/run-suite.sh` runs each job (one script with one tool) from a fresh
//! copy. Two VMs (2 vCPUs each, both tools installed, each with its own configuration, scratch
//! disk and copy of the tests) share one queue of jobs kept here on the host ([`queue_order`]:
//! longest first; [`serve_queue`]: each VM takes the next job when it is free, through a
//! directory shared with it), so the wall time is about half the sum of all jobs. Every script
//! has the same time limit for both tools, and the test reports how far each tool got. After
//! each job run-suite.sh reports what the run left behind (mounts, mappings, loop devices,
//! scsi_debug, keys in the user keyring, files in /run/cryptsetup and /run/lukskit, processes)
//! and removes it; a VM whose state cannot be reset stops and a fresh one takes the rest of
//! the queue. Measured 2026-11-25 11:23-11:27 UTC (load average ~9): a reset takes about 1 s
//! in the VM (2.7 s and 3.8 s for three jobs in each VM), a boot until the first job 23-31 s,
//! so the VMs are reset, not rebooted, between jobs; 00modules-test, discards-test and
//! keyring-compat-test with both tools took 224 s of wall time, the two VMs finishing 6 s
//! apart. (Until 2026-11-25 each tool had its own VM, and before that one VM ran both tools in
//! sequence: on 00modules-test, discards-test, keyring-compat-test and password-hash-test,
//! one VM running both tools took 551 s, two VMs 2 vCPUs each 337 s, with 1 vCPU each 562 s,
//! both tools then hitting the limits of keyring-compat-test and password-hash-test — so each
//! VM keeps 2 vCPUs.) The [`HOST`]
//! scripts (compat-args-test, luks2-validation-test: header files and argument checks only)
//! run the same way on the host against the installed cryptsetup 2.6.1, where they take a
//! minute instead of a quarter of an hour under the VM's emulation. Each test prints the
//! per-script table and, for every script lukskit does not pass yet, where it stopped and the
//! last commands it ran with their messages (the list of gaps); for a script real cryptsetup
//! fails, the same for cryptsetup (marked `REFERENCE`), and after any failure in the VM the
//! kernel messages of that run and the VM's state (memory, keys, mappings, loop devices).
//!
//! The reference VM has no lukskit, so it relies on run.sh giving real cryptsetup all it needs:
//! the first two-VM run (2026-11-25) had real cryptsetup fail device-test (line 233 via 127:
//! `luksAddKey -i1` of a LUKS2 Argon2 slot) and compat-test2 (line 721: `open -S1
//! --test-passphrase` of an Argon2 slot with two threads), both aborting with "libgcc_s.so.1
//! must be installed for pthread_exit to work" (exit 134): glibc loads that library with
//! dlopen when a thread ends, and it had come into the VM only with lukskit's libraries.
//! Reproduced with device-test alone (not a matter of order, state or load) and fixed in
//! run.sh, which now copies it in; `refvm_smoke` checks Argon2 threads without lukskit.
//! Afterwards (2026-11-25 08:26-08:43 UTC, two VMs, load average 6-14) both tools passed both:
//! device-test 195 s / 191 s (cryptsetup / lukskit), compat-test2 834 s / 767 s, 1041 s of
//! wall time.
//!
//! What it asserts: every script on [`RATCHET`] (each verified to pass with lukskit) passes
//! with lukskit — exit status 0 and no more "skip" lines than real cryptsetup printed (a
//! skipped part is not a pass) — in an environment where real cryptsetup passes it (otherwise
//! the environment is broken and nothing can be checked). A ratchet script that regresses, is
//! skipped or does not run fails the test. The others are reported as "not yet".
//!
//! Real cryptsetup runs a script only where lukskit's run needs it ([`needs_reference`]: lukskit
//! failed, timed out or printed skip lines): the scripts' own checks are what a clean lukskit
//! pass proves, and the reference run only tells a broken environment from a lukskit fault and
//! counts cryptsetup's skip lines. The guest leaves each job's result in the shared directory,
//! and the host queues the reference job next ([`reference_job`]), so the VM that ran lukskit's
//! job runs it at once. `LUKSKIT_UPSTREAM_REFERENCE=always` runs real cryptsetup on every
//! script as well (as the test command did until 2026-11-27: its CI run then took over the 90
//! minutes allowed, the reference runs being about half of this test's VM time).
//!
//! Ratchet today: in the VM 00modules-test, discards-test, luks1-compat-test, device-test,
//! keyring-compat-test, align-test and password-hash-test; on the
//! host compat-args-test and luks2-validation-test — every script of [`DEFAULT`] and [`HOST`],
//! that is every script of the directory real cryptsetup passes in the VM except the [`SLOW`]
//! ones. compat-test, compat-test2, mode-test and luks2-integrity-test passed with lukskit in
//! every run and were in the test command until 2026-11-27, when its CI run went over the 90
//! minutes allowed on 2 cores: with lukskit alone, beside the host tests, they took 773 s
//! (plus real cryptsetup's run, for compat-test's skipped part), 1577 s, 1304 s and 1358 s of
//! VM time (reencryption-compat-test 454 s, align-test 256 s in the same run); they are on
//! [`SLOW`] now (`LUKSKIT_UPSTREAM=all` or by name runs them), and reencryption-compat-test
//! (LUKS1 legacy re-encryption, the longest of the rest) since 2026-11-30. Of the long scripts: compat-test (LUKS1 end to end) passes with both tools, the interactive cases
//! [32]-[41] skipped by both for want of `expect` in the VM; compat-test2 (LUKS2 end to end,
//! all cases [0]-[43] including the kernel-keyring ones) with no skip lines; mode-test with all
//! 55 of its output lines the same for both (`LUKSKIT_UPSTREAM_SHOW=1 LUKSKIT_UPSTREAM_TAIL=100`),
//! the LUKS1 and LUKS2 parts of Adiantum (`xchacha12,aes-adiantum-plain64`, `xchacha20,...`)
//! included: the script silently leaves out the LUKS parts of a cipher whose format fails, so
//! only the lines show that. Their times (seconds in the VM, cryptsetup / lukskit): compat-test
//! 419 / 451, compat-test2 864 / 759 (loaded host), mode-test 543 / 450 (idle host; 1265 / 1020
//! heavily loaded), measured 2026-11-25 01:19-04:52 UTC with one VM running both tools in
//! sequence; reencryption-compat-test (LUKS1 legacy re-encryption, no skip lines) 397 / 609
//! and luks2-integrity-test (all 32 cases [OK], no skip lines) over 200 / 1186 s alone on a
//! loaded host.
//!
//! [`SLOW`] (left out of the test command): compat-test, compat-test2, mode-test and
//! luks2-integrity-test (above), the LUKS2 reencryption scripts (other work is under way on them; run one with
//! `LUKSKIT_UPSTREAM_SCRIPTS=name`), and align-test2.
//! align-test2 was measured 2026-11-25 ~04:45 UTC on a host running three VMs: both tools
//! reached its 900 s limit (cryptsetup after 200 output lines, lukskit after 229: through the
//! 4K, misaligned-opt-io, shifted and enterprise 4K drives into the stacked dm-linear one),
//! every case lukskit ran passed (LUKS2 offsets from the topology: `alignment_offset` 512 and
//! 3584 give 32769 and 32775 sectors, bogus optimal I/O sizes ignored), and the lines both
//! printed are the same but for where "Nothing to read on input." (standard error) falls. A
//! whole run is still to be measured: `LUKSKIT_UPSTREAM_SCRIPTS=align-test2:3600
//! LUKSKIT_UPSTREAM_NO_RATCHET=1`.
//!
//! Iterating on one script: `LUKSKIT_UPSTREAM_NO_RATCHET=1` runs only the named scripts (and
//! checks no ratchet), `LUKSKIT_UPSTREAM_TOOLS=lukskit` (with it) only one tool,
//! `name:secs` in `LUKSKIT_UPSTREAM_SCRIPTS` another time limit for that script, and
//! `LUKSKIT_UPSTREAM_TESTS=DIR` a copy of the directory whose script starts at a later case;
//! `LUKSKIT_UPSTREAM_SHOW=1` prints both tools' last output lines even when they pass
//! (`LUKSKIT_UPSTREAM_TAIL=N`: the last N lines instead of 12). `LUKSKIT_UPSTREAM_VM_CPUS=N`
//! (else `LUKSKIT_REFVM_CPUS`, else 2) sets the vCPUs of each of the two VMs.
//!
//! Selection: the test command runs the [`RATCHET`] list (about half the sum of every
//! script's time with lukskit, plus the reference runs lukskit's runs call for; at worst,
//! every job at its limit, see [`VM_TIME_CAP`]; plus about 1.5 minutes on the host, in
//! parallel); `LUKSKIT_UPSTREAM=default` runs [`DEFAULT`] and [`HOST`] (the
//! same scripts today); [`SLOW`] is left out, `LUKSKIT_UPSTREAM=all` runs it too, and
//! `LUKSKIT_UPSTREAM_SCRIPTS="compat-test compat-test2 mode-test luks2-integrity-test"` the
//! four scripts that left the test command on 2026-11-27 (reencryption-compat-test left it on
//! 2026-11-30);
//! `LUKSKIT_UPSTREAM_SCRIPTS="a b"` runs the named scripts (plus the ratchet list, unless
//! `LUKSKIT_UPSTREAM_NO_RATCHET=1`). [`NOT_RUN`] lists the scripts that cannot run here and
//! why. `LUKSKIT_UPSTREAM_TESTS=DIR` reads the scripts from elsewhere.

mod common;
mod refvm_common;

use lukskit_testkit::skip_or_fail;
use refvm_common::say;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Scripts run by default, with their time limit in seconds (the same for both tools; about
/// 2.5 times what the slower of real cryptsetup and lukskit takes in the VM here, so that a
/// loaded host does not cut a run short). The two VMs share the jobs (each script with each
/// tool): [`lists_are_consistent`] bounds their time with every job at its limit.
const DEFAULT: &[(&str, u64)] = &[
    ("00modules-test", 60),
    ("discards-test", 180),
    ("keyring-compat-test", 240),
    ("password-hash-test", 400),
    ("device-test", 600),
    ("luks1-compat-test", 480),
    ("align-test", 600),
];

/// Scripts that need no device-mapper, run on the host (not in the VM) against the installed
/// cryptsetup 2.6.1 and lukskit, each from a fresh copy of the test directory, with their time
/// limit in seconds (the same for both tools). luks2-validation-test takes about a minute with
/// cryptsetup here but over 15 minutes under the VM's emulation.
const HOST: &[(&str, u64)] = &[("compat-args-test", 300), ("luks2-validation-test", 600)];

/// Scripts left out of the default run (run them with `LUKSKIT_UPSTREAM=all` or by name in
/// `LUKSKIT_UPSTREAM_SCRIPTS`), with their time limit and why (times of real cryptsetup in the
/// VM on the 2-core development host, which is about what CI has).
const SLOW: &[(&str, u64, &str)] = &[
    (
        "compat-test2",
        2000,
        "LUKS2 end to end: passed by lukskit in every run since 2026-11-25, all cases [0]-[43] \
         with no skip lines (864 / 759 s with cryptsetup / lukskit on a loaded host, 1114 s \
         at load 15-24, 1577 s with lukskit beside the host tests on 2026-11-27: the longest \
         job, which alone set the VM lane's end); out of the test command for CI's 90 minutes \
         since 2026-11-27",
    ),
    (
        "compat-test",
        1200,
        "LUKS1 end to end: passed by lukskit in every run since 2026-11-25 (419 / 451 s with \
         cryptsetup / lukskit then; 773 s with lukskit beside the host tests on 2026-11-27), \
         its interactive cases [32]-[41] skipped by both tools for want of `expect` in the VM, \
         so each run also needs real cryptsetup's to compare the skips: out of the test \
         command for CI's 90 minutes since 2026-11-27",
    ),
    (
        "mode-test",
        3000,
        "every cipher mode through dm-crypt: passed by lukskit in every run since 2026-11-25, \
         all 55 output lines the same as real cryptsetup's (543 / 450 s idle, 1304 s with \
         lukskit beside the host tests on 2026-11-27); refvm_matrix checks the kernel's reading \
         of lukskit's cipher specs in the test command; out of it for CI's 90 minutes since \
         2026-11-27",
    ),
    (
        "luks2-integrity-test",
        3000,
        "dm-integrity formats (each wipes the device under emulation): passed by lukskit, all \
         32 cases [OK] with no skip lines (1186 s alone on a loaded host 2026-11-25, 1358 s \
         beside the host tests on 2026-11-27); refvm_integrity checks lukskit's integrity \
         volumes against the kernel in the test command; out of it for CI's 90 minutes since \
         2026-11-27",
    ),
    (
        "reencryption-compat-test",
        1500,
        "LUKS1 legacy re-encryption: passed by lukskit in every run since 2026-11-25 with no \
         skip lines (397 / 609 s with cryptsetup / lukskit on a loaded host 2026-11-25, 454 s \
         with lukskit beside the host tests 2026-11-27), the longest script of the default \
         list then; tests/reencrypt_luks1.rs checks lukskit's LUKS1 re-encryption against \
         cryptsetup's on the host in the test command; out of it for CI's 90 minutes since \
         2026-11-30 (stop 43's CI run took over them)",
    ),
    (
        "align-test2",
        900,
        "LUKS2 alignment on scsi_debug disks: over 200 s with real cryptsetup; on a loaded \
         host both tools hit 900 s (2026-11-25: cryptsetup after 200 lines, lukskit after 229, \
         every case passed and its first 200 lines the same as cryptsetup's)",
    ),
    (
        "luks2-reencryption-mangle-test",
        3000,
        "lukskit passes all of [1]-[9] (2026-11-27 09:15-09:32 UTC, load 8-18: 1033 s; its one \
         'skip' line is the title of [8], 'Reencryption with AEAD is not supported'); real \
         cryptsetup reached the 1500 s limit of that run in [7] on the same loaded host (one \
         VM: the other panicked at boot), so the time of a whole reference run is still to be \
         measured before it can join the default list",
    ),
    (
        "luks2-reencryption-test",
        3600,
        "reencryption of many layouts, [1]-[37]: lukskit has passed every case, run in \
         pieces (2026-11-27/28: the script's first 886 lines, its set-up, then a range of \
         cases with the device the first of them relies on; [24] failed until online \
         re-encryption from cipher_null put the new key in the keyring and a cipher_null \
         volume re-encrypted without --cipher got aes-xts-plain64; [30]/[31] run only where \
         `--version` names BLKID, which lukskit's does since it refuses [31]'s sector size \
         above the file system's block size). The fixed-size cases [16]-[21] make the whole \
         script far longer than CI's budget: [16] alone took 703 s with real cryptsetup and \
         534 s with lukskit side by side (2026-11-28 08:14 UTC); lukskit's [18] 512 s, \
         [19]+[20] 1226 s, [21]+[22] 662 s, [30]+[31] 74 s",
    ),
];

/// Scripts of the directory that are not run, and why.
const NOT_RUN: &[(&str, &str)] = &[
    (
        "api-test, api-test-2",
        "C programs against libcryptsetup's API, not the command line",
    ),
    (
        "blockwise-compat-test",
        "needs unit-utils-io, built from cryptsetup's lib/ sources",
    ),
    (
        "unit-wipe-test",
        "needs unit-wipe, built against libcryptsetup's internals",
    ),
    ("run-all-symbols", "checks libcryptsetup's exported symbols"),
    (
        "keyring-test",
        "exercises dm-crypt and the kernel keyring with dmsetup only, no cryptsetup",
    ),
    (
        "verity-compat-test",
        "veritysetup, which lukskit does not provide",
    ),
    (
        "integrity-compat-test",
        "integritysetup, which lukskit does not provide",
    ),
    (
        "ssh-test-plugin",
        "needs an SSH server and the cryptsetup-ssh token plugin",
    ),
    (
        "systemd-test-plugin",
        "needs systemd-cryptenroll, a TPM simulator and a build tree",
    ),
];

/// Scripts lukskit passes today, each verified in the VM (exit status 0 and no more skipped
/// parts than real cryptsetup). A regression of any of them fails the test; add a script here
/// once it passes.
const RATCHET: &[&str] = &[
    "00modules-test",
    "discards-test",
    "luks1-compat-test",
    "device-test",
    "keyring-compat-test",
    "align-test",
    "password-hash-test",
    "compat-args-test",
    "luks2-validation-test",
];

const TOOLS: [&str; 2] = ["cryptsetup", "lukskit"];

/// The VMs that share the jobs (each with its own vCPUs, memory and scratch disk).
const VMS: usize = 2;

/// What a job costs in a VM besides its script (the fresh copy of the tests, the report, the
/// reset), in seconds: an allowance, measured well under it (see the module docs).
const JOB_OVERHEAD: u64 = 15;

/// A VM's boot until it asks for its first job, in seconds: an allowance, measured well under
/// it (see the module docs).
const BOOT: u64 = 300;

/// The most VM time any one VM may need when every job runs to its limit, in seconds. With
/// the per-script limits (about 2.5 times the slower tool's time) the worst case of DEFAULT is
/// 229 minutes, over the 150 minutes one VM per tool had: the limits were kept, the cap
/// follows them (the expected time is about 40% of it).
const VM_TIME_CAP: u64 = 230 * 60;

/// One job of the queue: one script with one tool, under the script's limit.
#[derive(Debug, Clone, PartialEq)]
struct Job {
    script: String,
    tool: String,
    limit: u64,
}

/// A job as a VM took it from the queue.
struct Taken {
    job: Job,
    /// When the VM asked for it.
    asked: std::time::Instant,
}

/// The queue: every selected script with every tool, the longest expected first (a script's
/// limit, about 2.5 times what the slower tool takes, stands for its expected time: the same
/// order as the measured times), in the order of `sel` and `tools` among equal limits. Each
/// VM takes the next job when it is free, so the long jobs are spread first and the short
/// ones fill the gaps, and the VMs finish close together.
fn queue_order(sel: &[(String, u64)], tools: &[String]) -> Vec<Job> {
    let mut jobs: Vec<Job> = sel
        .iter()
        .flat_map(|(s, l)| {
            tools.iter().map(move |t| Job {
                script: s.clone(),
                tool: t.clone(),
                limit: *l,
            })
        })
        .collect();
    // Stable: equal limits keep the order of `sel` and `tools`.
    jobs.sort_by_key(|j| std::cmp::Reverse(j.limit));
    jobs
}

/// The VMs' time as the queue hands out the jobs: each of `vms` VMs, when free, takes the next
/// job of `order`, which then costs `cost(job)` seconds; ties go to the lower VM. Returns, per
/// VM, its busy time and the indices of the jobs it ran.
fn simulate(order: &[Job], vms: usize, cost: impl Fn(&Job) -> u64) -> Vec<(u64, Vec<usize>)> {
    let mut load: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); vms];
    for (i, job) in order.iter().enumerate() {
        let free = (0..vms)
            .min_by_key(|&v| (load[v].0, v))
            .expect("at least one VM");
        load[free].0 += cost(job);
        load[free].1.push(i);
    }
    load
}

/// Hands jobs from `queue` to the VM `vm` through its shared directory `dir` (virtio-9p,
/// /host in the guest): the guest creates `want.N` when free, and gets `job.N` ("SCRIPT:SECS
/// TOOL", or "stop" when the queue is empty; written to a temporary name and renamed, so the
/// guest never reads half a line). Before `want.N` the guest leaves the result of its job N-1
/// in `result.N-1` (run-suite.sh's "result" record); with `on_demand`, a lukskit job whose
/// result [`needs_reference`] puts the same script with real cryptsetup at the head of the
/// queue, so the VM asking takes it next. Returns the jobs this VM took once it got "stop" or
/// `finished` (the VM ended) is set.
fn serve_queue(
    dir: &Path,
    queue: &std::sync::Mutex<VecDeque<Job>>,
    finished: &std::sync::atomic::AtomicBool,
    vm: usize,
    on_demand: bool,
) -> Vec<Taken> {
    let mut taken: Vec<Taken> = Vec::new();
    for n in 1.. {
        loop {
            if dir.join(format!("want.{n}")).exists() {
                break;
            }
            if finished.load(std::sync::atomic::Ordering::SeqCst) {
                return taken;
            }
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
        let asked = std::time::Instant::now();
        let reference = taken.last().filter(|_| on_demand).and_then(|prev| {
            // A missing result (a guest that did not write one) counts as a failure: the
            // reference then runs rather than being left out.
            let rec =
                std::fs::read_to_string(dir.join(format!("result.{}", n - 1))).unwrap_or_default();
            reference_job(&prev.job, &rec)
        });
        let job = {
            let mut q = queue.lock().unwrap();
            if let Some(r) = reference {
                say(&format!(
                    "refvm_upstream: {} with lukskit needs the reference run: {} with real \
                     cryptsetup queued next",
                    r.script, r.script
                ));
                q.push_front(r);
            }
            q.pop_front()
        };
        let line = job.as_ref().map_or("stop".to_string(), |j| {
            format!("{}:{} {}", j.script, j.limit, j.tool)
        });
        let tmp = dir.join(format!(".job.{n}"));
        std::fs::write(&tmp, format!("{line}\n")).unwrap();
        std::fs::rename(&tmp, dir.join(format!("job.{n}"))).unwrap();
        let Some(job) = job else {
            return taken;
        };
        say(&format!(
            "refvm_upstream: VM {vm} takes {} with {} (limit {} s)",
            job.script, job.tool, job.limit
        ));
        taken.push(Taken { job, asked });
    }
    taken
}

/// Whether a lukskit run needs real cryptsetup's run of the same script to be judged: when it
/// did not pass (does the script pass in this VM at all, or is the environment broken?) or
/// printed skip lines (did real cryptsetup skip as many?). A clean pass needs no reference:
/// the script's own checks are what it proves.
fn needs_reference(o: &Outcome) -> bool {
    !o.passed() || o.skips > 0
}

/// The reference job that lukskit's job `prev` calls for, given the "result" record the guest
/// left for it (`rec`, as run-suite.sh prints it after "suite: result "): none for a job of
/// real cryptsetup or a clean lukskit pass.
fn reference_job(prev: &Job, rec: &str) -> Option<Job> {
    if prev.tool != "lukskit" {
        return None;
    }
    let o = rec
        .trim()
        .strip_prefix("suite: ")
        .unwrap_or(rec.trim())
        .strip_prefix("result ")
        .and_then(|r| {
            let mut it = r.splitn(3, ' ');
            let (script, tool, rest) = (it.next()?, it.next()?, it.next()?);
            (script == prev.script && tool == "lukskit").then(|| result_outcome(rest))
        });
    match o {
        Some(o) if !needs_reference(&o) => None,
        _ => Some(Job {
            script: prev.script.clone(),
            tool: "cryptsetup".to_string(),
            limit: prev.limit,
        }),
    }
}

/// One script run with one tool, as run-suite.sh reported it.
#[derive(Debug, Default, Clone)]
struct Outcome {
    rc: i32,
    secs: u64,
    lines: u64,
    skips: u64,
    timed_out: bool,
    limit: u64,
    /// The last lines of the script's output.
    out: Vec<String>,
    /// The last commands of the tool (command line, standard error, exit status).
    cmds: Vec<String>,
    /// Lines of the output that report a failed check.
    fails: Vec<String>,
    /// After a failure: the last kernel messages of the run and the state of the VM.
    kmsg: Vec<String>,
    /// What the run left behind (mounts, mappings, loop devices, scsi_debug, keys, lock
    /// files, processes), removed before the next job.
    left: Vec<String>,
    /// What the reset after the run could not remove (the VM was then replaced).
    dirty: Vec<String>,
    /// How long the reset after the run took in the VM.
    reset_secs: f64,
}

impl Outcome {
    fn passed(&self) -> bool {
        self.rc == 0 && !self.timed_out
    }

    /// The line of the script where it stopped, from the backtrace its `fail` prints
    /// ("NNN main ./script" or "NNN ./script").
    fn stop_line(&self, script: &str) -> Option<u64> {
        let me = format!("./{script}");
        self.out.iter().rev().find_map(|l| {
            let mut it = l.split_whitespace();
            let n = it.next()?.parse::<u64>().ok()?;
            let rest: Vec<&str> = it.collect();
            (rest.last() == Some(&me.as_str())).then_some(n)
        })
    }

    /// Short description: "pass 34s", "FAIL rc=2 line 128 (5 lines) 3s", "TIMEOUT 180s", ...
    fn summary(&self, script: &str) -> String {
        if self.timed_out {
            return format!("TIMEOUT {}s ({} lines)", self.limit, self.lines);
        }
        match self.rc {
            0 => format!(
                "pass {}s ({} lines, {} skip)",
                self.secs, self.lines, self.skips
            ),
            77 => format!("SKIP {}s ({} lines)", self.secs, self.lines),
            125 => "not installed in the VM".to_string(),
            126 => "script missing".to_string(),
            rc => {
                let at = self
                    .stop_line(script)
                    .map_or(String::new(), |n| format!(" line {n}"));
                format!("FAIL rc={rc}{at} {}s ({} lines)", self.secs, self.lines)
            }
        }
    }
}

/// The outcome in a "result" record's `KEY=VALUE` fields (`rc=N secs=S lines=L skips=K
/// timeout=0|1 limit=S`); a field that is missing or not a number leaves its default, an `rc`
/// that is not a number reads as -1 (not a pass).
fn result_outcome(fields: &str) -> Outcome {
    let mut o = Outcome {
        rc: -1,
        ..Outcome::default()
    };
    for kv in fields.split(' ') {
        let Some((k, v)) = kv.split_once('=') else {
            continue;
        };
        let n = v.trim().parse::<i64>().unwrap_or(-1);
        match k {
            "rc" => o.rc = n as i32,
            "secs" => o.secs = n.max(0) as u64,
            "lines" => o.lines = n.max(0) as u64,
            "skips" => o.skips = n.max(0) as u64,
            "timeout" => o.timed_out = n == 1,
            "limit" => o.limit = n.max(0) as u64,
            _ => {}
        }
    }
    o
}

/// Parse run-suite.sh's records: (script, tool) -> outcome, and whether it reached its end.
fn parse(stdout: &str) -> (BTreeMap<(String, String), Outcome>, bool) {
    let mut res: BTreeMap<(String, String), Outcome> = BTreeMap::new();
    let mut done = false;
    for line in stdout.lines() {
        let Some(rec) = line.strip_prefix("suite: ") else {
            continue;
        };
        if rec == "done" {
            done = true;
            continue;
        }
        let mut it = rec.splitn(4, ' ');
        let (kind, script, tool, rest) = (
            it.next().unwrap_or(""),
            it.next().unwrap_or("").to_string(),
            it.next().unwrap_or("").to_string(),
            it.next().unwrap_or(""),
        );
        match kind {
            "result" => {
                res.insert((script, tool), result_outcome(rest));
            }
            "reset" => {
                if let Some(o) = res.get_mut(&(script, tool)) {
                    o.reset_secs = rest
                        .strip_prefix("secs=")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0.0);
                }
            }
            "out" | "cmd" | "fail" | "kmsg" | "left" | "dirty" => {
                let text = rest.strip_prefix("| ").unwrap_or(rest).to_string();
                // `dirty` names the job as the queue gave it: SCRIPT:SECS.
                let script = split_limit(&script).0.to_string();
                if let Some(o) = res.get_mut(&(script, tool)) {
                    match kind {
                        "out" => o.out.push(text),
                        "fail" => o.fails.push(text),
                        "kmsg" => o.kmsg.push(text),
                        "left" => o.left.push(text),
                        "dirty" => o.dirty.push(text),
                        _ => o.cmds.push(text),
                    }
                }
            }
            _ => {}
        }
    }
    (res, done)
}

/// The selected scripts with their time limits.
fn selection() -> Vec<(String, u64)> {
    let limit_of = |name: &str| {
        DEFAULT
            .iter()
            .map(|&(n, l)| (n, l))
            .chain(SLOW.iter().map(|&(n, l, _)| (n, l)))
            .chain(HOST.iter().copied())
            .find(|&(n, _)| n == name)
            .map_or(600, |(_, l)| l)
    };
    let mut names: Vec<String> = if let Ok(list) = std::env::var("LUKSKIT_UPSTREAM_SCRIPTS") {
        list.split_whitespace().map(str::to_string).collect()
    } else if std::env::var("LUKSKIT_UPSTREAM").as_deref() == Ok("all") {
        DEFAULT
            .iter()
            .map(|&(n, _)| n)
            .chain(SLOW.iter().map(|&(n, _, _)| n))
            .map(str::to_string)
            .collect()
    } else if std::env::var("LUKSKIT_UPSTREAM").as_deref() == Ok("default") {
        DEFAULT.iter().map(|&(n, _)| n.to_string()).collect()
    } else {
        // The test command's run: the ratchet list (added below), a few minutes of VM time.
        Vec::new()
    };
    // The ratchet list always runs (unless LUKSKIT_UPSTREAM_NO_RATCHET=1, for iterating on one
    // script; the ratchet is then not checked).
    for r in RATCHET.iter().filter(|_| !no_ratchet()) {
        if !names.iter().any(|n| n.split(':').next() == Some(*r)) {
            names.insert(0, r.to_string());
        }
    }
    // `name:secs` (in LUKSKIT_UPSTREAM_SCRIPTS) gives a script another time limit.
    names
        .into_iter()
        .map(|n| {
            let (name, secs) = split_limit(&n);
            (name.to_string(), secs.unwrap_or_else(|| limit_of(name)))
        })
        .filter(|(n, _)| !is_host(n))
        .collect()
}

/// `name:secs` -> (name, Some(secs)); `name` (or a `secs` that is not a number) -> (name, None).
fn split_limit(entry: &str) -> (&str, Option<u64>) {
    match entry.split_once(':') {
        Some((name, secs)) => (name, secs.parse().ok()),
        None => (entry, None),
    }
}

/// vCPUs of each of the two VMs (run at the same time): `LUKSKIT_UPSTREAM_VM_CPUS`, else
/// `LUKSKIT_REFVM_CPUS`, else 2.
fn vm_cpus() -> u32 {
    ["LUKSKIT_UPSTREAM_VM_CPUS", "LUKSKIT_REFVM_CPUS"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.parse().ok())
        .unwrap_or(2)
}

/// `LUKSKIT_UPSTREAM_NO_RATCHET=1`: run only the named scripts (iterating on one script).
fn no_ratchet() -> bool {
    std::env::var("LUKSKIT_UPSTREAM_NO_RATCHET").as_deref() == Ok("1")
}

/// The tools to run each script with: both, or those `LUKSKIT_UPSTREAM_TOOLS` names (with
/// `LUKSKIT_UPSTREAM_NO_RATCHET=1` only: the ratchet needs both).
fn tools() -> Vec<String> {
    match std::env::var("LUKSKIT_UPSTREAM_TOOLS") {
        Ok(t) if no_ratchet() => t.split_whitespace().map(str::to_string).collect(),
        _ => TOOLS.iter().map(|t| t.to_string()).collect(),
    }
}

/// `LUKSKIT_UPSTREAM_REFERENCE=always`: real cryptsetup runs every script, not only where
/// lukskit's run [`needs_reference`].
fn reference_always() -> bool {
    std::env::var("LUKSKIT_UPSTREAM_REFERENCE").as_deref() == Ok("always")
}

/// The tools whose jobs fill the queue at the start, and whether real cryptsetup's jobs are
/// added on demand ([`reference_job`]): with both tools selected, lukskit's jobs only, unless
/// [`reference_always`].
fn initial_tools(tools: &[String]) -> (Vec<String>, bool) {
    let has = |t: &str| tools.iter().any(|x| x == t);
    if has("lukskit") && has("cryptsetup") && !reference_always() {
        (vec!["lukskit".to_string()], true)
    } else {
        (tools.to_vec(), false)
    }
}

fn is_host(name: &str) -> bool {
    HOST.iter().any(|&(n, _)| n == name)
}

/// The selected scripts of [`HOST`] with their time limits: those on the ratchet list, all of
/// them with `LUKSKIT_UPSTREAM=default|all`, or the ones `LUKSKIT_UPSTREAM_SCRIPTS` names.
fn host_selection() -> Vec<(String, u64)> {
    let named = std::env::var("LUKSKIT_UPSTREAM_SCRIPTS").ok();
    let all = matches!(
        std::env::var("LUKSKIT_UPSTREAM").as_deref(),
        Ok("default") | Ok("all")
    );
    HOST.iter()
        .filter(|&&(n, _)| {
            (RATCHET.contains(&n) && !no_ratchet())
                || named
                    .as_deref()
                    .is_some_and(|l| l.split_whitespace().any(|x| x == n))
                || (named.is_none() && all)
        })
        .map(|&(n, l)| (n.to_string(), l))
        .collect()
}

/// How many of a script's last output lines to bring back: `LUKSKIT_UPSTREAM_TAIL` (e.g.
/// 1000 to compare every line of mode-test with `LUKSKIT_UPSTREAM_SHOW=1`), else 12.
fn out_tail() -> u32 {
    std::env::var("LUKSKIT_UPSTREAM_TAIL")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12)
}

/// The upstream test directory: `LUKSKIT_UPSTREAM_TESTS` or `../shared/cryptsetup-2.6.1-tests`
/// next to the repository.
fn upstream_dir() -> PathBuf {
    std::env::var_os("LUKSKIT_UPSTREAM_TESTS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/cryptsetup-2.6.1-tests"),
        PathBuf::from,
    )
}

/// Pack `src` as `tests/` with a compiled `tests/differ` into `dir/upstream-tests.tar`;
/// `Err(reason)` when a host tool is missing.
fn pack(src: &Path, dir: &Path) -> Result<PathBuf, String> {
    let build = dir.join("build/tests");
    std::fs::create_dir_all(&build).unwrap();
    let differ = build.join("differ");
    let cc = |extra: &[&str]| {
        Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&differ)
            .arg(src.join("differ.c"))
            .args(extra)
            .output()
    };
    match cc(&["-static"]) {
        Ok(o) if o.status.success() => {}
        Ok(_) => {
            // No static libc: the VM has the host's libc.
            let o = cc(&[]).map_err(|e| format!("cc: {e}"))?;
            assert!(
                o.status.success(),
                "cc differ.c: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Err(e) => {
            return Err(format!(
                "cannot run cc to compile differ.c ({e}): install gcc (apt-get install gcc)"
            ))
        }
    }
    let tar = dir.join("upstream-tests.tar");
    let parent = src.parent().expect("the test directory has a parent");
    let name = src.file_name().expect("the test directory has a name");
    let transform = format!("s,^{},tests,", name.to_string_lossy());
    let st = Command::new("tar")
        .args(["--mode=u+w", "--transform", &transform, "-cf"])
        .arg(&tar)
        .arg("-C")
        .arg(parent)
        .arg(name)
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    assert!(st.success(), "tar of {} failed", src.display());
    let st = Command::new("tar")
        .args(["--mode=u+w", "-rf"])
        .arg(&tar)
        .arg("-C")
        .arg(dir.join("build"))
        .arg("tests/differ")
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    assert!(st.success(), "tar -r differ failed");
    Ok(tar)
}

fn print_report(sel: &[(String, u64)], res: &BTreeMap<(String, String), Outcome>, place: &str) {
    let get = |s: &str, t: &str| res.get(&(s.to_string(), t.to_string()));
    say(&format!(
        "refvm_upstream: cryptsetup 2.6.1's test scripts {place}"
    ));
    say(&format!(
        "{:<32} {:<44} {:<44} {}",
        "script", "cryptsetup 2.6.1", "lukskit", "verdict"
    ));
    for (s, _) in sel {
        let c = get(s, "cryptsetup");
        let l = get(s, "lukskit");
        let sum = |o: Option<&Outcome>| o.map_or("not run".to_string(), |o| o.summary(s));
        let v = verdict(c, l);
        let verdict = match v {
            Verdict::Pass if RATCHET.contains(&s.as_str()) => "pass (ratchet)",
            Verdict::Pass => "PASS: add it to RATCHET",
            Verdict::MoreSkips => "more skipped parts than cryptsetup",
            Verdict::ReferenceFails => "reference fails in the VM",
            Verdict::NotYet => "not yet",
            Verdict::NotRun => "not run",
        };
        // Real cryptsetup runs a script only where lukskit's run needs it.
        let ref_sum = match c {
            None if v == Verdict::Pass => "not needed (lukskit: clean pass)".to_string(),
            c => sum(c),
        };
        say(&format!(
            "{:<32} {:<44} {:<44} {}",
            s,
            ref_sum,
            sum(l),
            verdict
        ));
    }
    for (s, why) in NOT_RUN {
        say(&format!("{s:<32} not run: {why}"));
    }
    if std::env::var("LUKSKIT_UPSTREAM").as_deref() != Ok("all") {
        for (s, _, why) in SLOW {
            if !sel.iter().any(|(n, _)| n == s) {
                say(&format!(
                    "{s:<32} left out (LUKSKIT_UPSTREAM=all or by name): {why}"
                ));
            }
        }
    }
    say(
        "refvm_upstream: where a tool stops (lukskit where it does not pass; real cryptsetup \
         where it fails, which means the environment is broken): its failed checks, last \
         output lines, then its last commands with their standard error and exit status",
    );
    for (s, _) in sel {
        let c = get(s, "cryptsetup");
        let l = get(s, "lukskit");
        if std::env::var("LUKSKIT_UPSTREAM_SHOW").as_deref() == Ok("1") {
            // Both tools' last output lines, passes included (to compare what each did).
            for (tool, o) in [("cryptsetup", c), ("lukskit", l)] {
                for line in o.map_or(&[][..], |o| &o.out[..]) {
                    say(&format!("    {s} {tool} | {line}"));
                }
            }
        }
        let sum = |o: Option<&Outcome>| o.map_or("not run".to_string(), |o| o.summary(s));
        // Real cryptsetup first: when the reference fails, how it failed is what to look at.
        if let Some(c) = c.filter(|c| !c.passed()) {
            say(&format!(
                "--- {s}: REFERENCE cryptsetup {} / lukskit {}",
                c.summary(s),
                sum(l)
            ));
            print_stop(c);
        }
        if let Some(l) = l.filter(|l| !l.passed() || c.is_some_and(|c| l.skips > c.skips)) {
            say(&format!(
                "--- {s}: lukskit {} / cryptsetup {}",
                l.summary(s),
                sum(c)
            ));
            print_stop(l);
        }
    }
    say("refvm_upstream: what the runs left behind (each job starts from a clean state):");
    print_leftovers(res);
}

/// Where one tool's run of a script stopped: the lines that report a failed check, the last
/// output lines, and the last commands of the command log (command line, standard error,
/// exit status).
fn print_stop(o: &Outcome) {
    for f in &o.fails {
        say(&format!("    ! {f}"));
    }
    for line in o.out.iter().rev().take(6).rev() {
        say(&format!("    | {line}"));
    }
    for cmd in &o.cmds {
        say(&format!("    $ {}", cmd.trim_start_matches("$ ")));
    }
    for k in &o.kmsg {
        say(&format!("    kernel/state: {k}"));
    }
}

/// What each job left behind in its VM (removed before the next job), and what could not be
/// removed (that VM was replaced by a fresh one).
fn print_leftovers(res: &BTreeMap<(String, String), Outcome>) {
    for ((s, tool), o) in res {
        for l in &o.left {
            say(&format!("    left behind by {s} ({tool}): {l}"));
        }
        for l in &o.dirty {
            say(&format!(
                "    NOT REMOVED after {s} ({tool}), the VM was rebooted: {l}"
            ));
        }
    }
}

#[test]
fn upstream_scripts_against_cryptsetup_and_lukskit() {
    const T: &str = "refvm_upstream";
    let src = upstream_dir();
    if !src.join("compat-test").is_file() {
        skip_or_fail(
            T,
            &format!(
                "cryptsetup 2.6.1's test scripts are not at {} (../shared/cryptsetup-2.6.1-tests \
                 next to the repository, or LUKSKIT_UPSTREAM_TESTS=DIR)",
                src.display()
            ),
        );
        return;
    }
    if !refvm_common::vm_ready(T) {
        return;
    }
    let dir = common::tmp();
    let tar = match pack(&src, dir.path()) {
        Ok(t) => t,
        Err(why) => {
            skip_or_fail(T, &why);
            return;
        }
    };
    let sel = selection();
    let tools = tools();
    let (first_tools, on_demand) = initial_tools(&tools);
    let order = queue_order(&sel, &first_tools);
    let script = refvm_common::refvm_dir().join("upstream/run-suite.sh");
    // Each job is stopped by its own limit inside the VM; a VM's timeout has to cover every job
    // at its limit (the other VM may stop early and leave it the whole queue) plus the boot.
    // With references on demand, every script may need real cryptsetup's run too.
    let budget: u64 = order.iter().map(|j| j.limit + JOB_OVERHEAD).sum::<u64>()
        * if on_demand { 2 } else { 1 }
        + BOOT;
    let timeout = refvm_common::timeout_for(budget / 4).max(budget);
    let cpus = vm_cpus();
    say(&format!(
        "refvm_upstream: {} jobs ({} scripts x {}) on {VMS} VMs taking the next job when free, \
         longest first, {cpus} vCPUs each, VM timeout {timeout} s{}",
        order.len(),
        sel.len(),
        first_tools.join(", "),
        if on_demand {
            "; real cryptsetup runs a script where lukskit does not pass it cleanly \
             (LUKSKIT_UPSTREAM_REFERENCE=always: every script)"
        } else {
            ""
        }
    ));
    let queue = std::sync::Mutex::new(order.iter().cloned().collect::<VecDeque<Job>>());
    let with_lukskit = tools.iter().any(|t| t == "lukskit");
    let t0 = std::time::Instant::now();
    // Every boot of every VM: (VM, boot, jobs it took, run).
    let runs: Vec<(usize, usize, Vec<Taken>, refvm_common::VmRun)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..VMS)
            .map(|vm| {
                let (dir, tar, script, queue, tools) = (dir.path(), &tar, &script, &queue, &tools);
                let cpus = cpus.to_string();
                sc.spawn(move || {
                    let mut boots = Vec::new();
                    for boot in 0.. {
                        let vm_dir = dir.join(format!("vm{vm}-{boot}"));
                        let share = vm_dir.join("queue");
                        std::fs::create_dir_all(&share).unwrap();
                        let conf = common::write_file(
                            &vm_dir,
                            "suite.conf",
                            format!(
                                "SUITE_QUEUE=/host\nSUITE_TOOLS=\"{}\"\nSUITE_OUT_TAIL={}\n",
                                tools.join(" "),
                                out_tail()
                            )
                            .as_bytes(),
                        );
                        // A scratch disk for the scripts' images (sparse; the guest formats it).
                        let work = common::sparse(&vm_dir, "work.img", 6 << 30);
                        let tar_s = tar.to_string_lossy().into_owned();
                        let args: Vec<&std::ffi::OsStr> = vec![
                            "--mem".as_ref(),
                            "2048".as_ref(),
                            "--share".as_ref(),
                            share.as_os_str(),
                            "--copy".as_ref(),
                            tar_s.as_ref(),
                            "--copy".as_ref(),
                            conf.as_ref(),
                            script.as_os_str(),
                            work.as_ref(),
                        ];
                        let finished = std::sync::atomic::AtomicBool::new(false);
                        let booted = std::time::Instant::now();
                        let (taken, r) = std::thread::scope(|sc2| {
                            let server =
                                sc2.spawn(|| serve_queue(&share, queue, &finished, vm, on_demand));
                            let r = refvm_common::run_vm_env(
                                &format!("{T} (VM {vm}, boot {boot})"),
                                timeout,
                                &args,
                                with_lukskit,
                                &[("LUKSKIT_REFVM_CPUS", cpus.clone())],
                            );
                            finished.store(true, std::sync::atomic::Ordering::SeqCst);
                            (server.join().unwrap(), r)
                        });
                        if let Some(first) = taken.first() {
                            say(&format!(
                                "refvm_upstream: VM {vm} boot {boot}: asked for its first job \
                                 {:.0} s after run.sh started",
                                first.asked.duration_since(booted).as_secs_f64()
                            ));
                        }
                        // Exit status 3: the state after a job could not be reset (what is
                        // left is in its `dirty` records); a fresh VM takes the rest.
                        let again = r.code == 3 && !queue.lock().unwrap().is_empty();
                        boots.push((vm, boot, taken, r));
                        if !again {
                            break;
                        }
                    }
                    boots
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    say(&format!(
        "refvm_upstream: both VMs done after {:.0} s of wall time",
        t0.elapsed().as_secs_f64()
    ));
    if runs
        .iter()
        .any(|(_, _, _, r)| r.code == refvm_common::EXIT_UNAVAILABLE)
    {
        // Skips (or fails unless LUKSKIT_ALLOW_SKIP=1) with run.sh's reason.
        let (_, _, _, r) = runs
            .iter()
            .find(|(_, _, _, r)| r.code == refvm_common::EXIT_UNAVAILABLE)
            .unwrap();
        r.ran(T);
        return;
    }
    let mut res = BTreeMap::new();
    let mut unfinished = Vec::new();
    for (vm, boot, taken, r) in &runs {
        let (part, done) = parse(&r.stdout);
        let busy: u64 = part.values().map(|o| o.secs).sum();
        let resets: f64 = part.values().map(|o| o.reset_secs).sum();
        say(&format!(
            "refvm_upstream: VM {vm} boot {boot}: {} jobs ({}), {busy} s in scripts, {resets:.1} \
             s in resets between jobs, {:.0} s in all",
            part.len(),
            taken
                .iter()
                .map(|t| format!("{} {}", t.job.script, t.job.tool))
                .collect::<Vec<_>>()
                .join(", "),
            r.elapsed.as_secs_f64()
        ));
        res.extend(part);
        if !done || (r.code != 0 && r.code != 3) {
            unfinished.push(format!(
                "VM {vm} boot {boot}: run-suite.sh did not finish (exit status {}): {}{}",
                r.code, r.stdout, r.stderr
            ));
        }
    }
    print_report(&sel, &res, "in the reference VM");
    for (_, _, _, r) in &runs {
        // Panics with the VM's output on a timeout or a VM that never reported.
        r.ran(T);
    }
    let lost: Vec<String> = queue
        .lock()
        .unwrap()
        .iter()
        .map(|j| format!("{} {}", j.script, j.tool))
        .collect();
    assert!(
        lost.is_empty(),
        "jobs no VM took (both VMs stopped early): {lost:?}"
    );
    assert!(unfinished.is_empty(), "{}", unfinished.join("\n"));
    if no_ratchet() {
        return;
    }
    let vm: Vec<&str> = RATCHET.iter().copied().filter(|n| !is_host(n)).collect();
    check_ratchet(&vm, &res);
}

/// How a script stands, from lukskit's run and real cryptsetup's (if it ran).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    /// lukskit passes: exit status 0, and no skip lines, or no more than real cryptsetup's.
    Pass,
    /// lukskit passes but skipped parts real cryptsetup ran.
    MoreSkips,
    /// Real cryptsetup does not pass it here: the environment is broken.
    ReferenceFails,
    /// lukskit does not pass it (and real cryptsetup, if it ran, does).
    NotYet,
    /// lukskit did not run it, or skipped parts and real cryptsetup did not run it.
    NotRun,
}

/// The verdict on a script from real cryptsetup's outcome `c` and lukskit's `l`. Real
/// cryptsetup's run is needed only where lukskit's [`needs_reference`]; where it ran anyway
/// (`LUKSKIT_UPSTREAM_REFERENCE=always`) a failure of it fails the script.
fn verdict(c: Option<&Outcome>, l: Option<&Outcome>) -> Verdict {
    let Some(l) = l else {
        return Verdict::NotRun;
    };
    if c.is_some_and(|c| !c.passed()) {
        return Verdict::ReferenceFails;
    }
    if !l.passed() {
        return Verdict::NotYet;
    }
    if l.skips == 0 {
        return Verdict::Pass;
    }
    match c {
        None => Verdict::NotRun,
        Some(c) if l.skips > c.skips => Verdict::MoreSkips,
        Some(_) => Verdict::Pass,
    }
}

/// Every script of `names` (ratchet scripts) passes with lukskit, with no skipped part that
/// real cryptsetup ran, in an environment where real cryptsetup passes it.
fn check_ratchet(names: &[&str], res: &BTreeMap<(String, String), Outcome>) {
    let mut bad = Vec::new();
    for name in names {
        let get = |t: &str| res.get(&(name.to_string(), t.to_string()));
        let (c, l) = (get("cryptsetup"), get("lukskit"));
        match (verdict(c, l), c, l) {
            (Verdict::Pass, _, _) => {}
            (Verdict::ReferenceFails, Some(c), l) => bad.push(format!(
                "{name}: real cryptsetup does not pass it ({}): the environment is broken, \
                 lukskit cannot be checked (lukskit: {}; cryptsetup's last output: {:?}; last \
                 commands: {:?})",
                c.summary(name),
                l.map_or("not run".to_string(), |l| l.summary(name)),
                c.out,
                c.cmds
            )),
            (Verdict::NotYet, _, Some(l)) => bad.push(format!(
                "{name}: lukskit regressed: {} (last output: {:?}; last commands: {:?})",
                l.summary(name),
                l.out,
                l.cmds
            )),
            (Verdict::MoreSkips, Some(c), Some(l)) => bad.push(format!(
                "{name}: lukskit skipped parts real cryptsetup ran ({} skip lines against {}): \
                 {:?}",
                l.skips, c.skips, l.out
            )),
            (v, _, Some(l)) if l.passed() => bad.push(format!(
                "{name}: lukskit printed {} skip lines and real cryptsetup's run to compare \
                 them with is missing ({v:?})",
                l.skips
            )),
            _ => bad.push(format!("{name}: not run")),
        }
    }
    assert!(
        bad.is_empty(),
        "ratchet scripts that no longer pass:\n{}",
        bad.join("\n")
    );
}

/// Lines of a script's output that say a part was skipped or is not available (as
/// run-suite.sh counts them).
fn skip_lines(out: &str) -> u64 {
    out.lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            [
                "skip",
                "n/a",
                "not supported",
                "unsupported",
                "not available",
            ]
            .iter()
            .any(|w| l.contains(w))
        })
        .count() as u64
}

/// One [`HOST`] script with one tool (`cryptsetup` or `lukskit`, through a `cryptsetup`
/// symlink in `$CRYPTSETUP_PATH`), from a fresh copy of the test directory, under `limit`.
fn run_on_host(src: &Path, work: &Path, script: &str, tool: &str, limit: u64) -> Outcome {
    let real = match tool {
        "cryptsetup" => common::cryptsetup_path().expect("cryptsetup is installed"),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_lukskit")),
    };
    let run = work.join(format!("{script}-{tool}"));
    let st = Command::new("cp")
        .arg("-a")
        .arg(src)
        .arg(&run)
        .status()
        .unwrap();
    assert!(st.success(), "cp -a {}", src.display());
    let bin = work.join(format!("bin-{tool}"));
    if !bin.exists() {
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink(&real, bin.join("cryptsetup")).unwrap();
    }
    let path = format!(
        "{}:{}",
        work.join("shims").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let t0 = std::time::Instant::now();
    let o = Command::new("timeout")
        .args([
            "-k",
            "5",
            &limit.to_string(),
            "bash",
            &format!("./{script}"),
        ])
        .current_dir(&run)
        .env("CRYPTSETUP_PATH", &bin)
        .env("PATH", path)
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let secs = t0.elapsed().as_secs();
    let _ = std::fs::remove_dir_all(&run);
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    let rc = o.status.code().unwrap_or(-1);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    Outcome {
        rc: if rc == 124 || rc == 137 { 124 } else { rc },
        secs,
        lines: text.lines().count() as u64,
        skips: skip_lines(&text),
        timed_out: rc == 124 || rc == 137,
        limit,
        out: lines[lines.len().saturating_sub(12)..]
            .iter()
            .map(|l| l.to_string())
            .collect(),
        cmds: Vec::new(),
        kmsg: Vec::new(),
        left: Vec::new(),
        dirty: Vec::new(),
        reset_secs: 0.0,
        fails: lines
            .iter()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                (l.contains("fail") || l.contains("wrong") || l.contains("mismatch"))
                    && !l.starts_with("failed backtrace")
            })
            .take(40)
            .map(|l| l.to_string())
            .collect(),
    }
}

/// The [`HOST`] scripts: no device-mapper needed, so they run on the host, each with real
/// cryptsetup and then with lukskit. Ratchet scripts among them must pass with both.
#[test]
fn host_scripts_against_cryptsetup_and_lukskit() {
    const T: &str = "refvm_upstream (host scripts)";
    let sel = host_selection();
    if sel.is_empty() {
        return;
    }
    let src = upstream_dir();
    if !src.join("compat-test").is_file() {
        skip_or_fail(
            T,
            &format!(
                "cryptsetup 2.6.1's test scripts are not at {}",
                src.display()
            ),
        );
        return;
    }
    if !common::have_cryptsetup(T) {
        return;
    }
    for tool in ["jq", "xz", "xxd", "timeout"] {
        if Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .map_or(true, |o| !o.status.success())
        {
            skip_or_fail(
                T,
                &format!("{tool} is missing (apt-get install jq xz-utils xxd)"),
            );
            return;
        }
    }
    let dir = common::tmp();
    // The jq of run-suite.sh: Debian's jq security update no longer accepts the NUL padding
    // luks2-validation-test's generators leave after the JSON area (the same for both tools).
    let suite =
        std::fs::read_to_string(refvm_common::refvm_dir().join("upstream/run-suite.sh")).unwrap();
    let start = suite
        .find("<<'JQ'\n")
        .expect("run-suite.sh has the jq shim")
        + 6;
    let end = start + suite[start..].find("\nJQ\n").unwrap();
    std::fs::create_dir(dir.path().join("shims")).unwrap();
    let jq = dir.path().join("shims/jq");
    std::fs::write(&jq, format!("{}\n", &suite[start..end])).unwrap();
    std::process::Command::new("chmod")
        .arg("755")
        .arg(&jq)
        .status()
        .unwrap();
    let mut res = BTreeMap::new();
    for (s, limit) in &sel {
        for tool in tools() {
            let o = run_on_host(&src, dir.path(), s, &tool, *limit);
            res.insert((s.clone(), tool), o);
        }
    }
    print_report(&sel, &res, "on the host (no device-mapper needed)");
    if no_ratchet() {
        return;
    }
    let names: Vec<&str> = RATCHET.iter().copied().filter(|n| is_host(n)).collect();
    check_ratchet(&names, &res);
}

/// The lists are consistent: every ratchet script runs by default, no script is in two lists.
#[test]
fn lists_are_consistent() {
    for r in RATCHET {
        assert!(
            DEFAULT.iter().any(|&(n, _)| n == *r) || is_host(r),
            "{r} is on the ratchet list but neither in DEFAULT nor in HOST"
        );
    }
    for (n, _) in HOST {
        assert!(
            !DEFAULT.iter().any(|&(d, _)| d == *n),
            "{n} is in DEFAULT and HOST"
        );
    }
    for (n, _, _) in SLOW {
        assert!(
            !DEFAULT.iter().any(|&(d, _)| d == *n),
            "{n} is in DEFAULT and SLOW"
        );
    }
    // The two VMs take the (script, tool) jobs from one queue: the worst case is every job
    // running to its limit, handed out as the queue does (longest first, to the VM that is free).
    let tools: Vec<String> = TOOLS.iter().map(|t| t.to_string()).collect();
    let sel: Vec<(String, u64)> = DEFAULT.iter().map(|&(n, l)| (n.to_string(), l)).collect();
    let order = queue_order(&sel, &tools);
    let per_vm = simulate(&order, VMS, |j| j.limit + JOB_OVERHEAD);
    let worst = per_vm.iter().map(|(t, _)| t).max().unwrap() + BOOT;
    // The limits are upper bounds; the default run must still fit CI at its worst.
    assert!(
        worst <= VM_TIME_CAP,
        "DEFAULT's worst case is {worst} s of VM time in one VM (cap {VM_TIME_CAP} s)"
    );
}

/// `LUKSKIT_UPSTREAM_SCRIPTS` entries: `name:secs` gives another time limit.
#[test]
fn script_entries_take_a_limit() {
    assert_eq!(split_limit("align-test2:3600"), ("align-test2", Some(3600)));
    assert_eq!(split_limit("mode-test"), ("mode-test", None));
    assert_eq!(split_limit("mode-test:x"), ("mode-test", None));
}

/// run-suite.sh's records are parsed as written.
#[test]
fn parses_the_records() {
    let out = "suite: env kernel x\n\
        suite: result a-test cryptsetup rc=0 secs=12 lines=40 skips=1 timeout=0 limit=60\n\
        suite: out a-test cryptsetup | [1] ok\n\
        suite: result a-test lukskit rc=2 secs=3 lines=7 skips=0 timeout=0 limit=60\n\
        suite: out a-test lukskit | FAILED backtrace:\n\
        suite: out a-test lukskit | 128 ./a-test\n\
        suite: fail a-test lukskit | x.img...Validation rejected correct value\n\
        suite: cmd a-test lukskit | $ cryptsetup luksDump x\n\
        suite: cmd a-test lukskit |   Device x is not a valid LUKS device.\n\
        suite: cmd a-test lukskit | => exit 1\n\
        suite: kmsg a-test lukskit | loops \n\
        suite: left a-test lukskit | run-files L_8:0\n\
        suite: reset a-test lukskit secs=1.5\n\
        suite: dirty a-test:60 lukskit | mappings x\n\
        suite: done\n";
    let (res, done) = parse(out);
    assert!(done);
    let c = &res[&("a-test".to_string(), "cryptsetup".to_string())];
    assert!(c.passed() && c.skips == 1 && c.secs == 12 && c.limit == 60);
    let l = &res[&("a-test".to_string(), "lukskit".to_string())];
    assert!(!l.passed());
    assert_eq!(l.stop_line("a-test"), Some(128));
    assert_eq!(l.cmds.len(), 3);
    assert_eq!(l.kmsg, ["loops "]);
    assert!(c.kmsg.is_empty());
    assert_eq!(l.fails, ["x.img...Validation rejected correct value"]);
    assert_eq!(l.left, ["run-files L_8:0"]);
    assert_eq!(l.dirty, ["mappings x"]);
    assert_eq!(l.reset_secs, 1.5);
    assert!(c.left.is_empty() && c.dirty.is_empty());
    assert_eq!(l.summary("a-test"), "FAIL rc=2 line 128 3s (7 lines)");
}

fn jobs(limits: &[(&str, u64)]) -> Vec<(String, u64)> {
    limits.iter().map(|&(n, l)| (n.to_string(), l)).collect()
}

/// The queue holds every script with every tool, the longest first, and keeps the order of
/// the selection and of the tools among equal limits.
#[test]
fn the_queue_puts_the_longest_jobs_first() {
    let tools = vec!["cryptsetup".to_string(), "lukskit".to_string()];
    let order = queue_order(
        &jobs(&[("a", 60), ("b", 600), ("c", 180), ("d", 600)]),
        &tools,
    );
    let got: Vec<(&str, &str, u64)> = order
        .iter()
        .map(|j| (j.script.as_str(), j.tool.as_str(), j.limit))
        .collect();
    assert_eq!(
        got,
        [
            ("b", "cryptsetup", 600),
            ("b", "lukskit", 600),
            ("d", "cryptsetup", 600),
            ("d", "lukskit", 600),
            ("c", "cryptsetup", 180),
            ("c", "lukskit", 180),
            ("a", "cryptsetup", 60),
            ("a", "lukskit", 60),
        ]
    );
}

/// A VM takes the next job when it is free (not in turns): while one VM runs a long job the
/// other runs all the short ones.
#[test]
fn a_free_vm_takes_the_next_job() {
    let order = queue_order(
        &jobs(&[
            ("long", 100),
            ("s1", 10),
            ("s2", 10),
            ("s3", 10),
            ("s4", 10),
        ]),
        &["lukskit".to_string()],
    );
    let per_vm = simulate(&order, 2, |j| j.limit);
    assert_eq!(per_vm, [(100, vec![0]), (40, vec![1, 2, 3, 4])]);
    // Three VMs: the third starts at once with the second job.
    let per_vm = simulate(&order, 3, |j| j.limit);
    assert_eq!(per_vm, [(100, vec![0]), (20, vec![1, 3]), (20, vec![2, 4])]);
}

/// The default run is balanced: both VMs' busy times (every job at its limit) differ by at
/// most the longest job, so the wall time is about half the sum of all jobs.
#[test]
fn the_default_run_is_balanced_over_the_vms() {
    let tools: Vec<String> = TOOLS.iter().map(|t| t.to_string()).collect();
    let sel: Vec<(String, u64)> = DEFAULT.iter().map(|&(n, l)| (n.to_string(), l)).collect();
    let order = queue_order(&sel, &tools);
    assert_eq!(order.len(), 2 * DEFAULT.len());
    let per_vm = simulate(&order, VMS, |j| j.limit);
    let total: u64 = order.iter().map(|j| j.limit).sum();
    assert_eq!(per_vm.iter().map(|(t, _)| t).sum::<u64>(), total);
    let longest = order[0].limit;
    let (max, min) = (
        per_vm.iter().map(|(t, _)| *t).max().unwrap(),
        per_vm.iter().map(|(t, _)| *t).min().unwrap(),
    );
    assert!(max - min <= longest, "{per_vm:?}");
    assert!(
        max <= total / 2 + longest / 2,
        "{max} s against {total} s in all"
    );
    // Every job runs once.
    let mut ran: Vec<usize> = per_vm.iter().flat_map(|(_, j)| j.clone()).collect();
    ran.sort_unstable();
    assert_eq!(ran, (0..order.len()).collect::<Vec<_>>());
}

/// Two guests played by threads against the host's side of the queue ([`serve_queue`], with
/// `on_demand` references), each in its own directory under `dir` as run-suite.sh does: it
/// creates want.N, waits for job.N and, until "stop", runs `job(vm, its directory, N, line)`
/// for the job's line, keeping what that returns. Returns, per VM, the jobs the host handed
/// out and what the guest kept.
fn play_guests(
    dir: &Path,
    queue: &std::sync::Mutex<VecDeque<Job>>,
    on_demand: bool,
    job: impl Fn(usize, &Path, u32, &str) -> String + Sync,
) -> (Vec<Vec<Taken>>, Vec<Vec<String>>) {
    let finished = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|sc| {
        let mut servers = Vec::new();
        let mut guests = Vec::new();
        for vm in 0..2 {
            let share = dir.join(format!("vm{vm}"));
            std::fs::create_dir(&share).unwrap();
            let (f, job) = (&finished, &job);
            let s2 = share.clone();
            servers.push(sc.spawn(move || serve_queue(&s2, queue, f, vm, on_demand)));
            guests.push(sc.spawn(move || {
                let mut got = Vec::new();
                for n in 1.. {
                    std::fs::write(share.join(format!("want.{n}")), "").unwrap();
                    let path = share.join(format!("job.{n}"));
                    while !path.exists() {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                    }
                    let line = std::fs::read_to_string(&path).unwrap();
                    if line.trim() == "stop" {
                        break;
                    }
                    got.push(job(vm, &share, n, line.trim()));
                }
                got
            }));
        }
        let guests: Vec<Vec<String>> = guests.into_iter().map(|g| g.join().unwrap()).collect();
        let served: Vec<Vec<Taken>> = servers.into_iter().map(|s| s.join().unwrap()).collect();
        (served, guests)
    })
}

/// The host's side of the queue against two guests played by threads (each creates want.N in
/// its own directory and reads job.N, as run-suite.sh does): every job goes to exactly one of
/// them, each gets "stop" when the queue is empty, and a slow guest takes fewer jobs.
#[test]
fn the_queue_hands_each_job_to_one_vm() {
    let dir = common::tmp();
    let tools = vec!["cryptsetup".to_string(), "lukskit".to_string()];
    let order = queue_order(
        &jobs(&[("a", 1), ("b", 2), ("c", 3), ("d", 4), ("e", 5)]),
        &tools,
    );
    let queue = std::sync::Mutex::new(order.iter().cloned().collect::<VecDeque<Job>>());
    let (served, guests) = play_guests(dir.path(), &queue, false, |vm, _, _, line| {
        // VM 1 is slow.
        std::thread::sleep(std::time::Duration::from_millis(if vm == 0 {
            50
        } else {
            1500
        }));
        line.to_string()
    });
    assert!(queue.lock().unwrap().is_empty());
    let mut all: Vec<String> = guests.concat();
    all.sort();
    let mut want: Vec<String> = order
        .iter()
        .map(|j| format!("{}:{} {}", j.script, j.limit, j.tool))
        .collect();
    want.sort();
    assert_eq!(all, want, "every job exactly once");
    for (vm, (s, g)) in served.iter().zip(&guests).enumerate() {
        let s: Vec<String> = s
            .iter()
            .map(|t| format!("{}:{} {}", t.job.script, t.job.limit, t.job.tool))
            .collect();
        assert_eq!(
            &s, g,
            "VM {vm}: what the host handed out is what the guest read"
        );
    }
    // The longest job went first, to whichever asked first; the slow guest took at most two
    // jobs while the fast one ran the rest.
    assert!(guests[1].len() <= 2, "{guests:?}");
    assert!(
        guests.iter().any(|g| g[0] == "e:5 cryptsetup"),
        "{guests:?}"
    );
}

/// Real cryptsetup's run is queued for a lukskit job that failed, timed out, printed skip
/// lines or left no readable result, and for nothing else.
#[test]
fn the_reference_runs_where_lukskit_needs_it() {
    let lk = Job {
        script: "mode-test".to_string(),
        tool: "lukskit".to_string(),
        limit: 3000,
    };
    let rec = |fields: &str| format!("suite: result mode-test lukskit {fields}\n");
    let clean = "rc=0 secs=450 lines=55 skips=0 timeout=0 limit=3000";
    assert_eq!(reference_job(&lk, &rec(clean)), None);
    let want = Some(Job {
        script: "mode-test".to_string(),
        tool: "cryptsetup".to_string(),
        limit: 3000,
    });
    for fields in [
        "rc=1 secs=12 lines=3 skips=0 timeout=0 limit=3000",
        "rc=0 secs=450 lines=55 skips=2 timeout=0 limit=3000",
        "rc=124 secs=3000 lines=40 skips=0 timeout=1 limit=3000",
        "rc=77 secs=1 lines=1 skips=1 timeout=0 limit=3000",
        "secs=450 lines=55 skips=0 timeout=0 limit=3000",
    ] {
        assert_eq!(reference_job(&lk, &rec(fields)), want, "{fields}");
    }
    // No result, or one of another job: the reference runs.
    assert_eq!(reference_job(&lk, ""), want);
    assert_eq!(
        reference_job(
            &lk,
            "suite: result compat-test lukskit rc=0 skips=0 timeout=0"
        ),
        want
    );
    // Real cryptsetup's own jobs call for nothing.
    let cs = Job {
        tool: "cryptsetup".to_string(),
        ..lk.clone()
    };
    assert_eq!(reference_job(&cs, &rec("rc=1 skips=0 timeout=0")), None);
}

/// The verdicts: a clean lukskit pass needs no reference; skip lines are judged against real
/// cryptsetup's; a failing reference means a broken environment whatever lukskit did.
#[test]
fn verdicts_follow_the_reference_only_where_needed() {
    let o = |rc: i32, skips: u64| Outcome {
        rc,
        skips,
        ..Outcome::default()
    };
    assert_eq!(verdict(None, Some(&o(0, 0))), Verdict::Pass);
    assert_eq!(verdict(Some(&o(0, 3)), Some(&o(0, 0))), Verdict::Pass);
    assert_eq!(verdict(Some(&o(0, 3)), Some(&o(0, 3))), Verdict::Pass);
    assert_eq!(verdict(Some(&o(0, 2)), Some(&o(0, 3))), Verdict::MoreSkips);
    assert_eq!(verdict(None, Some(&o(0, 3))), Verdict::NotRun);
    assert_eq!(verdict(Some(&o(0, 0)), Some(&o(1, 0))), Verdict::NotYet);
    assert_eq!(verdict(None, Some(&o(1, 0))), Verdict::NotYet);
    assert_eq!(
        verdict(Some(&o(1, 0)), Some(&o(1, 0))),
        Verdict::ReferenceFails
    );
    assert_eq!(
        verdict(Some(&o(1, 0)), Some(&o(0, 0))),
        Verdict::ReferenceFails
    );
    assert_eq!(verdict(Some(&o(0, 0)), None), Verdict::NotRun);
    let timed_out = Outcome {
        timed_out: true,
        ..o(0, 0)
    };
    assert_eq!(verdict(None, Some(&timed_out)), Verdict::NotYet);
}

/// The queue with references on demand, against two guests played by threads that leave a
/// result for each job before asking for the next (as run-suite.sh does): real cryptsetup's
/// job is handed out exactly for the scripts whose lukskit run failed or printed skip lines,
/// once each, and every job goes to exactly one guest.
#[test]
fn the_queue_adds_reference_jobs_on_demand() {
    let dir = common::tmp();
    let lukskit = vec!["lukskit".to_string()];
    let order = queue_order(
        &jobs(&[("pass", 5), ("fails", 4), ("skips", 3), ("clean", 2)]),
        &lukskit,
    );
    let queue = std::sync::Mutex::new(order.iter().cloned().collect::<VecDeque<Job>>());
    let (_, guests) = play_guests(dir.path(), &queue, true, |_, share, n, line| {
        let (entry, tool) = line.split_once(' ').expect("SCRIPT:SECS TOOL");
        let script = split_limit(entry).0.to_string();
        let fields = match (script.as_str(), tool) {
            ("fails", "lukskit") => "rc=1 skips=0 timeout=0",
            ("skips", "lukskit") => "rc=0 skips=2 timeout=0",
            _ => "rc=0 skips=0 timeout=0",
        };
        std::fs::write(
            share.join(format!("result.{n}")),
            format!("suite: result {script} {tool} {fields}\n"),
        )
        .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(60));
        format!("{script} {tool}")
    });
    assert!(queue.lock().unwrap().is_empty());
    let mut all = guests.concat();
    all.sort();
    assert_eq!(
        all,
        [
            "clean lukskit",
            "fails cryptsetup",
            "fails lukskit",
            "pass lukskit",
            "skips cryptsetup",
            "skips lukskit",
        ],
        "{guests:?}"
    );
    // The reference follows its lukskit job in the same guest (it is queued first, and the
    // guest that ran lukskit's job is the one asking).
    for g in &guests {
        for (i, j) in g.iter().enumerate() {
            if let Some(script) = j.strip_suffix(" cryptsetup") {
                assert_eq!(g[i - 1], format!("{script} lukskit"), "{guests:?}");
            }
        }
    }
}
