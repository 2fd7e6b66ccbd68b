//! Boots that prove the encrypted-root deployments of the README: Debian's kernel under QEMU
//! (tests/refvm/run.sh `--initrd`) with its root file system on LUKS2 on an md RAID-1 of two
//! disks, unlocked by an initramfs that Debian's own `mkinitramfs` built
//! (tests/refvm/boot/build.sh, cached by a hash of its inputs):
//!
//! - lukskit's initramfs-tools hook with a key file (`key`), with LVM on top of the LUKS2
//!   volume (`lvm`), and with one RAID disk missing (`degraded`: the same initramfs as `key`,
//!   booted with one disk);
//! - lukskit's hook with a software TPM attached (`tpm`: swtpm, run.sh `--tpm`): the root's
//!   systemd-tpm2 token (enrolled by systemd-cryptenroll with PCR 7) unlocks it with no
//!   keyboard, and a second volume whose token no longer matches PCR 7 falls back to the
//!   passphrase typed on the serial console; in the same boot the real root's init runs
//!   systemd 252's own tools (systemd-cryptsetup, cryptsetup with systemd's token plugin,
//!   systemd-cryptenroll) on volumes that `lukskit token enroll-tpm2` enrolled in that guest;
//! - lukskit's hook with `--backend userspace` (`fuse`): the root is served by lukskit's own
//!   process (FUSE file + loop device, as on a kernel without dm-crypt), which must keep
//!   serving after `switch_root`, marked as a systemd root-storage daemon (`@` in argv[0]);
//! - Debian's own `cryptroot` hook (cryptsetup-initramfs) with lukskit installed as
//!   `/sbin/cryptsetup` (`debian_cryptroot`).
//!
//! The volumes are made by Debian's cryptsetup, mdadm and lvm in the reference VM. The real
//! root's init prints a marker read from the root file system (random per disk build), the
//! root mount, the device-mapper names and UUIDs and `/proc/mdstat`, then powers off; each
//! test checks all of them and which tool unlocked (the initramfs' listing, the console).
//! Every boot writes to throw-away snapshots of the cached disks (`--snapshot`).
//!
//! Alone: `cargo test -p lukskit-cli --test refvm_boot -- --nocapture` (the first run builds a
//! Debian chroot with mmdebstrap, the disks in the VM and the initramfs images: a few minutes;
//! each boot then takes 30-90 s under TCG).

mod refvm_common;

use lukskit_testkit::skip_or_fail;
use refvm_common::{refvm_dir, run_vm, say, timeout_for, VmRun};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What build.sh made: the directories of the disks and of the initramfs images.
struct Built {
    disks: PathBuf,
    /// The TPM-enrolled copies of the disks (`t1.img`, `t2.img`, `tc.img`) and the software
    /// TPM's state (`state/`).
    tpm: PathBuf,
    initrds: PathBuf,
    /// The dracut image (`dracut.img`, `dracut.list`).
    dracut: PathBuf,
    /// The check disk of systemd's tools (`check.img`: the systemd chroot with lukskit and
    /// `tests/refvm/boot/systemd-check.sh`) and its two LUKS2 volumes (`v1.img`, `v2.img`).
    check: PathBuf,
    lukskit: PathBuf,
}

/// The static lukskit and everything build.sh makes, once per test process; `None` (after
/// [`skip_or_fail`]) when the VM or the Debian mirror cannot be had here.
fn built(test: &str) -> Option<&'static Built> {
    static BUILT: OnceLock<Result<Built, String>> = OnceLock::new();
    let r = BUILT.get_or_init(|| {
        // The static binary (an initramfs has no libc of ours), in a directory of its own so
        // that static_binaries.rs building at the same time never replaces it under us.
        let out = repo().join("target/static-bin-boot");
        let t0 = Instant::now();
        let o = Command::new("bash")
            .arg(repo().join("scripts/build-static.sh"))
            .arg("x86_64")
            .env("LUKSKIT_STATIC_OUT", &out)
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/build-static.sh");
        say(&format!(
            "refvm_boot: scripts/build-static.sh x86_64 took {:.0} s",
            t0.elapsed().as_secs_f64()
        ));
        assert!(
            o.status.success(),
            "scripts/build-static.sh x86_64 failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let lukskit = out.join("lukskit-x86_64");
        let t0 = Instant::now();
        let o = Command::new("bash")
            .arg(refvm_dir().join("boot/build.sh"))
            .arg(&lukskit)
            .stdin(Stdio::null())
            .output()
            .expect("run tests/refvm/boot/build.sh");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        say(&format!(
            "refvm_boot: tests/refvm/boot/build.sh took {:.0} s",
            t0.elapsed().as_secs_f64()
        ));
        if o.status.code() == Some(77) {
            return Err(stderr);
        }
        assert!(
            o.status.success(),
            "tests/refvm/boot/build.sh failed ({}): {}{stderr}",
            o.status,
            String::from_utf8_lossy(&o.stdout)
        );
        let vars: HashMap<String, String> = String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Ok(Built {
            disks: PathBuf::from(&vars["DISKS"]),
            tpm: PathBuf::from(&vars["TPM"]),
            initrds: PathBuf::from(&vars["INITRDS"]),
            dracut: PathBuf::from(&vars["DRACUT"]),
            check: PathBuf::from(&vars["CHECK"]),
            lukskit,
        })
    });
    match r {
        Ok(b) => Some(b),
        Err(why) => {
            skip_or_fail(test, &format!("cannot build the boot images here: {why}"));
            None
        }
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// `KEY=value` lines of the disks' params file.
fn param(b: &Built, key: &str) -> String {
    read(&b.disks.join("params"))
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_string))
        .unwrap_or_else(|| panic!("{key} not in params"))
}

/// The files of an initramfs image (from its `lsinitramfs -l` listing).
fn listing(b: &Built, image: &str) -> Vec<String> {
    listed(&b.initrds.join(format!("{image}.list")))
}

/// The paths of an `ls -l` style listing (`lsinitramfs -l`, dracut's `lsinitrd`).
fn listed(list: &Path) -> Vec<String> {
    read(list)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(8).map(str::to_string))
        .collect()
}

/// One boot: the initramfs `image` with `disks` (names in the disks directory), the kernel
/// command line `append`, and the passphrase typed at lukskit's prompt when `typed`.
fn boot(
    test: &str,
    b: &Built,
    image: &str,
    disks: &[&str],
    append: &str,
    typed: bool,
) -> Option<VmRun> {
    let answers: &[(&str, PathBuf)] = &[("Enter passphrase for", b.disks.join("passphrase"))];
    boot_with(
        test,
        &b.initrds.join(format!("{image}.img")),
        &disks.iter().map(|d| b.disks.join(d)).collect::<Vec<_>>(),
        append,
        if typed { answers } else { &[] },
        None,
        120,
    )
}

/// One boot of `initrd` with the disk images `disks`, the kernel command line `append`, each
/// `(prompt, file)` of `answers` typed in order once its prompt is on the console, and a
/// software TPM with a throw-away copy of the state directory `tpm` when given; `expected`: the
/// seconds the boot takes on a loaded host here (the timeout is four times that).
fn boot_with(
    test: &str,
    initrd: &Path,
    disks: &[PathBuf],
    append: &str,
    answers: &[(&str, PathBuf)],
    tpm: Option<&Path>,
    expected: u64,
) -> Option<VmRun> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--initrd".into(),
        initrd.into(),
        "--snapshot".into(),
        "--append".into(),
        // panic=5: a failing initramfs reboots (and qemu stops) instead of waiting in a shell.
        format!("{append} ro panic=5").into(),
    ];
    for (prompt, file) in answers {
        args.push("--answer".into());
        args.push(format!("{prompt}={}", file.display()).into());
    }
    // The TPM's state changes as the guest uses it: each boot gets its own copy.
    let state = tpm.map(|dir| {
        let copy = tempfile::tempdir().expect("a directory for the TPM state");
        for f in std::fs::read_dir(dir).expect("read the TPM state") {
            let f = f.unwrap().path();
            std::fs::copy(&f, copy.path().join(f.file_name().unwrap()))
                .unwrap_or_else(|e| panic!("copy {}: {e}", f.display()));
        }
        copy
    });
    if let Some(s) = &state {
        args.push("--tpm".into());
        args.push(s.path().into());
    }
    args.extend(disks.iter().map(|d| d.as_os_str().to_owned()));
    let a: Vec<&std::ffi::OsStr> = args.iter().map(|s| s.as_os_str()).collect();
    // A boot is ~30-90 s under TCG here (udev, module loading, the 30 s wait of a degraded
    // array); four times that on a loaded host.
    let r = run_vm(test, timeout_for(expected), &a, false);
    if !r.ran(test) {
        return None;
    }
    Some(r)
}

/// What the real root's init printed.
struct Seen {
    marker: Option<String>,
    root: Option<String>,
    /// `(name, DM UUID)` of each device-mapper device.
    dm: Vec<(String, String)>,
    /// `(name, read-only)` of each device-mapper device (`ro=` of its line).
    dm_ro: Vec<(String, bool)>,
    mdstat: String,
    /// `(pid, argv[0])` of the processes marked with `@` after switch_root.
    procs: Vec<(String, String)>,
}

fn seen(console: &str) -> Seen {
    let mut s = Seen {
        marker: None,
        root: None,
        dm: Vec::new(),
        dm_ro: Vec::new(),
        mdstat: String::new(),
        procs: Vec::new(),
    };
    for l in console.lines() {
        let l = l.trim_end_matches('\r');
        if let Some(v) = l.strip_prefix("LUKSKIT-BOOT-MARKER ") {
            s.marker = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("LUKSKIT-BOOT-ROOT ") {
            s.root = Some(v.trim().to_string());
        } else if let Some(v) = l.strip_prefix("LUKSKIT-BOOT-DM ") {
            let mut w = v.split_whitespace();
            let name = w.next().unwrap_or("").to_string();
            s.dm.push((name.clone(), w.next().unwrap_or("").to_string()));
            if let Some(ro) = w.next().and_then(|x| x.strip_prefix("ro=")) {
                s.dm_ro.push((name, ro == "1"));
            }
        } else if let Some(v) = l.strip_prefix("LUKSKIT-BOOT-PROC ") {
            if let Some((pid, a)) = v.split_once(' ') {
                s.procs.push((pid.to_string(), a.to_string()));
            }
        } else if let Some(v) = l.strip_prefix("LUKSKIT-BOOT-MDSTAT ") {
            s.mdstat.push_str(v);
            s.mdstat.push('\n');
        }
    }
    s
}

/// The checks every boot must pass: the real root's init ran from the right file system on
/// the right mapping of the right LUKS2 volume, on an md RAID-1 (`legs` of 2 active).
fn check_root(
    test: &str,
    b: &Built,
    r: &VmRun,
    root: &str,
    luks_uuid: &str,
    crypt_name: &str,
    legs: usize,
) -> Seen {
    let s = seen(&r.stdout);
    let marker = read(&b.disks.join("marker"));
    assert_eq!(
        s.marker.as_deref(),
        Some(marker.trim()),
        "{test}: the real root's init did not print the marker of the root file system \
         (it never ran, or ran from something else); console:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    assert_eq!(
        s.root.as_deref(),
        Some(format!("{root} ext4").as_str()),
        "{test}: root mount"
    );
    let want_uuid = format!("CRYPT-LUKS2-{}-{crypt_name}", luks_uuid.replace('-', ""));
    assert!(
        s.dm.iter().any(|(n, u)| n == crypt_name && *u == want_uuid),
        "{test}: no dm-crypt mapping {crypt_name} with UUID {want_uuid}: {:?}",
        s.dm
    );
    let state = if legs == 2 { "[2/2] [UU]" } else { "[2/1]" };
    assert!(
        s.mdstat.contains("raid1") && s.mdstat.contains(state),
        "{test}: /proc/mdstat does not show a RAID-1 with {legs} of 2 disks ({state}):\n{}",
        s.mdstat
    );
    s
}

/// lukskit's hook made the image: lukskit, its table and boot scripts, no cryptsetup.
fn check_lukskit_image(test: &str, files: &[String], key: Option<&str>) {
    for want in [
        "usr/sbin/lukskit",
        "etc/lukskit/crypttab",
        "scripts/local-top/lukskit",
        "scripts/local-block/lukskit",
    ] {
        assert!(
            files.iter().any(|f| f == want),
            "{test}: {want} is not in the initramfs"
        );
    }
    assert!(
        !files.iter().any(|f| f.ends_with("sbin/cryptsetup")),
        "{test}: cryptsetup is in the initramfs: it could have unlocked instead of lukskit"
    );
    match key {
        Some(k) => assert!(
            files.iter().any(|f| f == k),
            "{test}: key file {k} not in the initramfs"
        ),
        None => assert!(
            !files.iter().any(|f| f.starts_with("etc/lukskit/keys")),
            "{test}: a key file is in the initramfs of a passphrase-only entry"
        ),
    }
}

#[test]
fn lukskit_hook_unlocks_raid1_luks2_root_with_key_file() {
    let t = "refvm_boot key";
    let Some(b) = built(t) else { return };
    check_lukskit_image(
        t,
        &listing(b, "key"),
        Some("etc/lukskit/keys/cryptroot.key"),
    );
    let Some(r) = boot(
        t,
        b,
        "key",
        &["a1.img", "a2.img"],
        "root=/dev/mapper/cryptroot",
        false,
    ) else {
        return;
    };
    assert!(
        r.stdout.contains("cryptroot: opened."),
        "{t}: lukskit did not report the unlock:\n{}",
        r.stdout
    );
    check_root(
        t,
        b,
        &r,
        "/dev/mapper/cryptroot",
        &param(b, "LUKS_A"),
        "cryptroot",
        2,
    );
}

/// The root unlocked by the TPM with no keyboard, as Debian users enrol it
/// (`systemd-cryptenroll --tpm2-device=auto --tpm2-pcrs=7`, crypttab `none
/// luks,tpm2-device=auto`): QEMU has a software TPM whose PCR 7 holds what the firmware
/// measured, and the root's token was sealed to that value. In the same boot, a second volume
/// (`cryptplain`, taken into the initramfs with `initramfs`) has a token sealed to another
/// PCR 7 value, as after a firmware or Secure Boot change: its token must fail with lukskit's
/// line and its passphrase be asked on the serial console and typed there. Were the root's
/// prompt to appear, a wrong passphrase is typed at it, so that the boot fails at once.
#[test]
fn lukskit_hook_unlocks_root_with_tpm_and_asks_passphrase_when_pcr7_changed() {
    let t = "refvm_boot tpm";
    let Some(b) = built(t) else { return };
    let files = listing(b, "tpm");
    check_lukskit_image(t, &files, None);
    assert!(
        files.iter().any(|f| f == "etc/lukskit/options"),
        "{t}: etc/lukskit/options (--verbose) is not in the initramfs"
    );
    // The TPM drivers the kernel has as modules (Debian's amd64 kernel has tpm_tis and tpm_crb
    // built in; the rest of drivers/char/tpm is modules).
    assert!(
        files
            .iter()
            .any(|f| f.contains("/kernel/drivers/char/tpm/") && f.ends_with(".ko")),
        "{t}: the hook put no TPM driver modules into the initramfs"
    );
    let dir = tempfile::tempdir().expect("a directory for the wrong passphrase");
    let tab = dir.path().join("wrong-passphrase");
    std::fs::write(&tab, "not the passphrase").expect("write the wrong passphrase");
    let answers = [
        ("Enter passphrase for /dev/vdc", b.disks.join("passphrase")),
        ("Enter passphrase for /dev/md", tab.clone()),
        ("Enter passphrase for /dev/md", tab.clone()),
        ("Enter passphrase for /dev/md", tab),
    ];
    // After the root's init has reported, it runs the checks of systemd's tools from the check
    // disk (/dev/vdd) on the volumes /dev/vde and /dev/vdf: see check_systemd_tools.
    let disks = [
        b.tpm.join("t1.img"),
        b.tpm.join("t2.img"),
        b.tpm.join("tc.img"),
        b.check.join("check.img"),
        b.check.join("v1.img"),
        b.check.join("v2.img"),
    ];
    let Some(r) = boot_with(
        t,
        &b.initrds.join("tpm.img"),
        &disks,
        "root=/dev/mapper/cryptroot lukskit.check=/dev/vdd",
        &answers,
        Some(&b.tpm.join("state")),
        180,
    ) else {
        return;
    };
    // run.sh's exit status after a TPM boot (until 2026-11-29 its swtpm cleanup made it 1).
    assert_eq!(r.code, 0, "{t}: run.sh: {}", r.stderr);
    let console = &r.stdout;
    // The two volumes in crypttab order: cryptplain's token fails and its passphrase (keyslot
    // 1) is typed; the root opens with its TPM token's keyslot (2), no prompt for it.
    let plain = console
        .find("Token 0 (systemd-tpm2) cannot unlock")
        .unwrap_or_else(|| {
            panic!("{t}: lukskit did not say that cryptplain's token cannot unlock:\n{console}")
        });
    let prompt = console[plain..]
        .find("Enter passphrase for /dev/vdc")
        .map(|i| plain + i)
        .unwrap_or_else(|| {
            panic!("{t}: no passphrase prompt for cryptplain after its token failed:\n{console}")
        });
    let plain_open = console[prompt..]
        .find("cryptplain: opened.")
        .map(|i| prompt + i)
        .unwrap_or_else(|| panic!("{t}: cryptplain was not opened:\n{console}"));
    assert!(
        console[prompt..plain_open].contains("Key slot 1 unlocked."),
        "{t}: cryptplain was not opened by its passphrase keyslot (1):\n{console}"
    );
    assert!(
        !console.contains("Enter passphrase for /dev/md"),
        "{t}: the root's passphrase was asked: its TPM token did not unlock it:\n{console}"
    );
    let root_open = console[plain_open..]
        .find("cryptroot: opened.")
        .map(|i| plain_open + i)
        .unwrap_or_else(|| panic!("{t}: lukskit did not report the root's unlock:\n{console}"));
    assert!(
        console[plain_open..root_open].contains("Key slot 2 unlocked."),
        "{t}: the root was not opened by the TPM token's keyslot (2):\n{console}"
    );
    assert!(
        !console[plain_open..root_open].contains("cannot unlock"),
        "{t}: the root's token failed:\n{console}"
    );
    let s = check_root(
        t,
        b,
        &r,
        "/dev/mapper/cryptroot",
        &param(b, "LUKS_A"),
        "cryptroot",
        2,
    );
    let want_c = format!(
        "CRYPT-LUKS2-{}-cryptplain",
        param(b, "LUKS_C").replace('-', "")
    );
    assert!(
        s.dm.iter().any(|(n, u)| n == "cryptplain" && *u == want_c),
        "{t}: no dm-crypt mapping cryptplain with UUID {want_c}: {:?}",
        s.dm
    );
    check_systemd_tools(t, console);
}

/// The steps of tests/refvm/boot/systemd-check.sh that must say `ok` for each volume (`v2`
/// has the PIN, and its attach without `$PIN` must be refused).
const SYSTEMD_STEPS: &[&str] = &[
    "enroll",
    "systemd-cryptsetup-attach",
    "write",
    "systemd-cryptsetup-detach",
    "cryptsetup-token-open",
    "read",
    "cryptsetup-close",
    "systemd-cryptenroll-wipe",
    "sealed-enroll",
    "sealed-blob-file",
    "sealed-token-remove",
    "systemd-cryptsetup-sealed",
    "sealed-write",
    "systemd-cryptsetup-sealed-detach",
    "lukskit-crypttab-sealed",
    "sealed-read",
    "lukskit-crypttab-sealed-close",
];

/// systemd 252's own tools on lukskit's enrolments, in the TPM boot's guest (the real root's
/// init runs tests/refvm/boot/systemd-check.sh from the check disk, chrooted into a Debian
/// system with systemd): two LUKS2 volumes enrolled there by `lukskit token enroll-tpm2
/// --tpm2-device=auto --tpm2-pcrs=7` (v2 `--tpm2-with-pin=yes`) open with no passphrase with
/// `systemd-cryptsetup attach … tpm2-device=auto,headless=1` (v2 with systemd's `$PIN`, and not
/// without it) and with `cryptsetup open --token-only` through systemd's token plugin (v2 with
/// the PIN typed at "Enter token PIN:"), the block written through systemd's mapping reads back
/// through cryptsetup's, and `systemd-cryptenroll --wipe-slot=tpm2` removes lukskit's token and
/// its keyslot (the LUKS2 JSON before and after). Then the same volume with a sealed key file
/// instead of a token (the token's `tpm2-blob`, the token removed): `systemd-cryptsetup attach
/// NAME DEV BLOB tpm2-device=auto,tpm2-pcrs=7[,tpm2-pin=yes]` and `lukskit crypttab open` of
/// the same line both open it, and a block written through systemd's mapping reads back
/// through lukskit's.
fn check_systemd_tools(t: &str, console: &str) {
    let lines: Vec<&str> = console
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.starts_with("LUKSKIT-BOOT-CHECK"))
        .collect();
    let report = lines
        .iter()
        .filter(|l| !l.starts_with("LUKSKIT-BOOT-CHECK-JSON"))
        .copied()
        .collect::<Vec<_>>()
        .join("\n");
    say(&format!(
        "{t}: systemd's tools on lukskit's enrolments:\n{report}"
    ));
    // `ls /dev/tpmrm0 /dev/tpm0` in the guest (sorted by ls).
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("LUKSKIT-BOOT-CHECK-TPM /dev/tpm0 /dev/tpmrm0")),
        "{t}: the check saw no TPM in the guest:\n{report}\nconsole:\n{console}"
    );
    for vol in ["v1", "v2"] {
        let mut steps = SYSTEMD_STEPS.to_vec();
        if vol == "v2" {
            steps.push("systemd-cryptsetup-no-pin");
        }
        for step in steps {
            let want = format!("LUKSKIT-BOOT-CHECK {vol} {step} ok");
            assert!(
                lines.iter().any(|l| l.starts_with(&want)),
                "{t}: {vol}: step {step} did not pass:\n{report}\nconsole:\n{console}"
            );
        }
        if vol == "v2" {
            // Refused because the PIN was not given (headless: systemd asks nobody), not for
            // another reason.
            assert!(
                lines.iter().any(|l| l
                    .starts_with("LUKSKIT-BOOT-CHECK-LOG v2 systemd-cryptsetup-no-pin:")
                    && l.contains("PIN")),
                "{t}: v2: systemd-cryptsetup without $PIN was not refused for the PIN:\n{report}"
            );
        }
        let json = |label: &str| -> serde_json::Value {
            let prefix = format!("LUKSKIT-BOOT-CHECK-JSON {vol} {label} ");
            let text = lines
                .iter()
                .find_map(|l| l.strip_prefix(prefix.as_str()))
                .unwrap_or_else(|| panic!("{t}: no {label} JSON of {vol}:\n{report}"));
            serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("{t}: {vol} {label} JSON: {e}: {text}"))
        };
        let keyslots = |j: &serde_json::Value| -> Vec<String> {
            let mut k: Vec<String> = j["keyslots"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            k.sort();
            k
        };
        let enrolled = json("enrolled");
        let tokens = enrolled["tokens"].as_object().expect("tokens");
        assert_eq!(
            tokens.len(),
            1,
            "{t}: {vol}: tokens after enrolment: {enrolled}"
        );
        let tok = tokens.values().next().unwrap();
        assert_eq!(tok["type"], "systemd-tpm2", "{t}: {vol}: {tok}");
        assert_eq!(
            tok["keyslots"],
            serde_json::json!(["1"]),
            "{t}: {vol}: {tok}"
        );
        assert_eq!(
            tok["tpm2-pcrs"],
            serde_json::json!([7]),
            "{t}: {vol}: {tok}"
        );
        assert_eq!(tok["tpm2-pin"], vol == "v2", "{t}: {vol}: {tok}");
        assert_eq!(keyslots(&enrolled), ["0", "1"], "{t}: {vol}: {enrolled}");
        let wiped = json("wiped");
        assert_eq!(
            wiped["tokens"],
            serde_json::json!({}),
            "{t}: {vol}: systemd-cryptenroll --wipe-slot=tpm2 left a token: {wiped}"
        );
        assert_eq!(
            keyslots(&wiped),
            ["0"],
            "{t}: {vol}: systemd-cryptenroll --wipe-slot=tpm2 left the keyslot: {wiped}"
        );
    }
    assert!(
        lines.contains(&"LUKSKIT-BOOT-CHECK-EXIT 0"),
        "{t}: the check script failed:\n{report}"
    );
}

#[test]
fn lukskit_hook_unlocks_lvm_on_luks2_on_raid1() {
    let t = "refvm_boot lvm";
    let Some(b) = built(t) else { return };
    check_lukskit_image(t, &listing(b, "lvm"), Some("etc/lukskit/keys/cryptlvm.key"));
    let Some(r) = boot(
        t,
        b,
        "lvm",
        &["b1.img", "b2.img"],
        "root=/dev/mapper/vg0-root",
        false,
    ) else {
        return;
    };
    assert!(
        r.stdout.contains("cryptlvm: opened."),
        "{t}: lukskit did not report the unlock:\n{}",
        r.stdout
    );
    let s = check_root(
        t,
        b,
        &r,
        "/dev/mapper/vg0-root",
        &param(b, "LUKS_B"),
        "cryptlvm",
        2,
    );
    assert!(
        s.dm.iter()
            .any(|(n, u)| n == "vg0-root" && u.starts_with("LVM-")),
        "{t}: no LVM mapping vg0-root: {:?}",
        s.dm
    );
}

#[test]
fn lukskit_hook_serves_root_from_userspace_across_switch_root() {
    let t = "refvm_boot fuse";
    let Some(b) = built(t) else { return };
    check_lukskit_image(
        t,
        &listing(b, "fuse"),
        Some("etc/lukskit/keys/cryptroot.key"),
    );
    let files = listing(b, "fuse");
    assert!(
        files.iter().any(|f| f == "etc/lukskit/options"),
        "{t}: no etc/lukskit/options"
    );
    let Some(r) = boot(
        t,
        b,
        "fuse",
        &["a1.img", "a2.img"],
        "root=/dev/mapper/cryptroot",
        false,
    ) else {
        return;
    };
    assert!(
        r.stdout.contains("cryptroot: opened."),
        "{t}: lukskit did not report the unlock:\n{}",
        r.stdout
    );
    let s = seen(&r.stdout);
    let marker = read(&b.disks.join("marker"));
    assert_eq!(
        s.marker.as_deref(),
        Some(marker.trim()),
        "{t}: the real root's init did not print the marker of the root file system; console:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    // The root is /dev/mapper/cryptroot, lukskit's link to the loop device over the serving
    // process's FUSE file: there is no device-mapper mapping at all.
    assert_eq!(
        s.root.as_deref(),
        Some("/dev/mapper/cryptroot ext4"),
        "{t}: root mount; console:\n{}",
        r.stdout
    );
    assert!(
        s.dm.is_empty(),
        "{t}: a device-mapper mapping exists (the root should be served by lukskit's process): {:?}",
        s.dm
    );
    assert!(
        s.mdstat.contains("[2/2] [UU]"),
        "{t}: mdstat:\n{}",
        s.mdstat
    );
    // The serving process survived switch_root, marked for systemd's shutdown.
    assert!(
        s.procs.iter().any(|(_, a)| a == "@lukskit: cryptroot"),
        "{t}: no serving process '@lukskit: cryptroot' after switch_root: {:?}",
        s.procs
    );
}

#[test]
fn lukskit_hook_unlocks_degraded_raid1() {
    let t = "refvm_boot degraded";
    let Some(b) = built(t) else { return };
    // Only the second disk: mdadm's boot script starts the array degraded 2/3 into
    // initramfs-tools' 30 s wait for the root, and lukskit's local-block step unlocks it.
    let Some(r) = boot(
        t,
        b,
        "key",
        &["a2.img"],
        "root=/dev/mapper/cryptroot",
        false,
    ) else {
        return;
    };
    assert!(
        r.stdout.contains("cryptroot: waiting for UUID="),
        "{t}: the source was there at once (the array should start late, degraded):\n{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("cryptroot: opened."),
        "{t}: lukskit did not report the unlock:\n{}",
        r.stdout
    );
    check_root(
        t,
        b,
        &r,
        "/dev/mapper/cryptroot",
        &param(b, "LUKS_A"),
        "cryptroot",
        1,
    );
}

#[test]
fn debian_cryptroot_hook_with_lukskit_as_cryptsetup() {
    let t = "refvm_boot debian_cryptroot";
    let Some(b) = built(t) else { return };
    let files = listing(b, "debian");
    for want in [
        "cryptroot/crypttab",
        "scripts/local-top/cryptroot",
        "cryptroot/keyfiles/cryptroot.key",
    ] {
        assert!(
            files.iter().any(|f| f == want),
            "{t}: {want} is not in the initramfs"
        );
    }
    assert!(
        !files.iter().any(|f| f == "scripts/local-top/lukskit"),
        "{t}: lukskit's own boot script is in Debian's image"
    );
    // The cryptsetup Debian's hook copied in is the lukskit binary.
    let facts = read(&b.initrds.join("debian.facts"));
    let sha = sha256_hex(&std::fs::read(&b.lukskit).expect("read the static lukskit"));
    assert!(
        facts.contains(&format!("cryptsetup-sha256 {sha}")),
        "{t}: /sbin/cryptsetup in the initramfs is not the lukskit binary: {facts}"
    );
    let Some(r) = boot(
        t,
        b,
        "debian",
        &["a1.img", "a2.img"],
        "root=/dev/mapper/cryptroot",
        false,
    ) else {
        return;
    };
    // Debian's cryptroot script says so after `cryptsetup open` succeeded.
    assert!(
        r.stdout.contains("cryptroot: set up successfully"),
        "{t}: Debian's cryptroot did not report the unlock:\n{}",
        r.stdout
    );
    check_root(
        t,
        b,
        &r,
        "/dev/mapper/cryptroot",
        &param(b, "LUKS_A"),
        "cryptroot",
        2,
    );
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(data))
}

/// dracut: Debian's `dracut` (059, with systemd in the initramfs, as the distributions that use
/// dracut have it) builds the image with lukskit's module from the Debian package. One boot
/// unlocks two volumes: the root, LUKS2 on the md RAID-1, from the image's crypttab with its
/// key file (named by `rd.luks.uuid=luks-UUID` on the command line); and a LUKS2 volume on a
/// plain disk (no RAID) from the command line alone (`rd.luks.name=UUID=cryptplain`,
/// `rd.luks.options=UUID=readonly`), whose passphrase is typed on the serial console at
/// systemd's password agent. That disk has a systemd-tpm2 token sealed to another PCR 7 than
/// the VM's software TPM has (`tc.img` of the TPM disks): lukskit tries it first and must say
/// that it cannot unlock before the passphrase is asked.
#[test]
fn dracut_module_unlocks_raid1_root_and_plain_disk() {
    let t = "refvm_boot dracut";
    let Some(b) = built(t) else { return };
    let files = listed(&b.dracut.join("dracut.list"));
    for want in [
        "usr/sbin/lukskit",
        "usr/sbin/lukskit-dracut",
        "etc/lukskit/crypttab",
        "etc/lukskit/keys/cryptroot.key",
        "usr/lib/dracut/hooks/cmdline/30-parse-lukskit.sh",
        "usr/bin/systemd-ask-password",
    ] {
        assert!(
            files.iter().any(|f| f == want),
            "{t}: {want} is not in the dracut image"
        );
    }
    for not in ["sbin/cryptsetup", "systemd-cryptsetup"] {
        assert!(
            !files.iter().any(|f| f.ends_with(not)),
            "{t}: {not} is in the dracut image: it could have unlocked instead of lukskit"
        );
    }
    let luks_a = param(b, "LUKS_A");
    let luks_c = param(b, "LUKS_C");
    let Some(r) = boot_with(
        t,
        &b.dracut.join("dracut.img"),
        &[
            b.disks.join("a1.img"),
            b.disks.join("a2.img"),
            b.tpm.join("tc.img"),
        ],
        &format!(
            "root=/dev/mapper/cryptroot rd.luks.uuid=luks-{luks_a} \
             rd.luks.name={luks_c}=cryptplain rd.luks.options={luks_c}=readonly"
        ),
        &[("Enter passphrase for", b.disks.join("passphrase"))],
        Some(&b.tpm.join("state")),
        120,
    ) else {
        return;
    };
    let console = &r.stdout;
    let token = console
        .find("cryptplain: Token 0 (systemd-tpm2) cannot unlock")
        .unwrap_or_else(|| {
            panic!("{t}: lukskit did not try cryptplain's TPM token first:\n{console}")
        });
    assert!(
        console[token..].contains("Enter passphrase for /dev/vdc (cryptplain)"),
        "{t}: lukskit's passphrase prompt for the plain disk did not appear after its token failed:\n{console}"
    );
    for name in ["cryptroot", "cryptplain"] {
        assert!(
            console.contains(&format!("{name}: opened.")),
            "{t}: lukskit did not report the unlock of {name}:\n{console}"
        );
    }
    let s = check_root(t, b, &r, "/dev/mapper/cryptroot", &luks_a, "cryptroot", 2);
    let want_c = format!("CRYPT-LUKS2-{}-cryptplain", luks_c.replace('-', ""));
    assert!(
        s.dm.iter().any(|(n, u)| n == "cryptplain" && *u == want_c),
        "{t}: no dm-crypt mapping cryptplain with UUID {want_c}: {:?}",
        s.dm
    );
    assert!(
        s.dm_ro.contains(&("cryptplain".to_string(), true))
            && s.dm_ro.contains(&("cryptroot".to_string(), false)),
        "{t}: cryptplain should be read-only (rd.luks.options=UUID=readonly), cryptroot not: {:?}",
        s.dm_ro
    );
}
