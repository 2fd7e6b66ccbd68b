//! The static binaries of `scripts/build-static.sh` (x86_64 and aarch64 musl):
//!
//! * both are ELF executables of their machine with no program interpreter and no `NEEDED`
//!   library (read from the ELF headers here, not from `file`), stripped and small;
//! * the x86_64 one runs on the host: it opens a LUKS2 volume that cryptsetup formatted
//!   (userspace backend: FUSE + loop, root) and writes known data into it;
//! * the aarch64 one dumps the same header under qemu-user exactly as the x86_64 one does, and
//!   in `qemu-system-aarch64` with Debian's arm64 kernel (`tests/refvm/run-arm64.sh`) it opens
//!   the volume through the kernel's dm-crypt and through its own engine (FUSE + loop), reads
//!   the host's data back, writes new data that dm-crypt then reads identically, and closes;
//!   the host finally decrypts what the arm64 engine wrote.
//!
//! Needs rustup (the musl targets), cryptsetup, root with /dev/fuse and loop devices,
//! qemu-user and qemu-system-arm (`scripts/test.sh` installs them; run-arm64.sh installs
//! qemu-system-arm itself when root); fails without them unless `LUKSKIT_ALLOW_SKIP=1`.

mod refvm_common;

use lukskit_testkit::skip_or_fail;
use refvm_common::{say, timeout_for, VmRun, EXIT_UNAVAILABLE};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Instant;

/// ELF `e_machine` values.
const EM_X86_64: u16 = 62;
const EM_AARCH64: u16 = 183;
/// Upper bound for a stripped static binary: a guard against the size jumping unnoticed (debug
/// info, a profile change: tens of MB), not a target. x86_64 was 5,728,584 bytes when the guard
/// was set at 6 MiB, 6,300,296 on 2026-11-27 after the features since (the AES-XTS kernels for
/// VAES with 256-bit registers, re-encryption, FUSE over io_uring); aarch64 4,935,968.
const MAX_SIZE: u64 = 8 << 20;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Both static binaries, built once per test process by `scripts/build-static.sh all`.
fn binaries() -> &'static (PathBuf, PathBuf) {
    static BUILT: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = repo().join("target/static-bin");
        let t0 = Instant::now();
        let o = Command::new("bash")
            .arg(repo().join("scripts/build-static.sh"))
            .arg("all")
            .env("LUKSKIT_STATIC_OUT", &out)
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/build-static.sh");
        say(&format!(
            "static: scripts/build-static.sh all took {:.0} s",
            t0.elapsed().as_secs_f64()
        ));
        assert!(
            o.status.success(),
            "scripts/build-static.sh all failed ({}): {}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (out.join("lukskit-x86_64"), out.join("lukskit-aarch64"))
    })
}

fn u16le(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// What the ELF headers of a 64-bit little-endian executable say about linking.
#[derive(Debug)]
struct ElfFacts {
    machine: u16,
    /// A PT_INTERP program header (a dynamic loader) is present.
    interp: bool,
    /// DT_NEEDED entries of the dynamic section (their string table offsets).
    needed: usize,
    /// A .symtab section is present (not stripped).
    symtab: bool,
}

fn elf_facts(path: &Path) -> ElfFacts {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    assert_eq!(&b[..4], b"\x7fELF", "{}: not an ELF file", path.display());
    assert_eq!(b[4], 2, "{}: not a 64-bit ELF", path.display());
    assert_eq!(b[5], 1, "{}: not little-endian", path.display());
    let machine = u16le(&b, 18);
    let (phoff, phentsize, phnum) = (
        u64le(&b, 32) as usize,
        u16le(&b, 54) as usize,
        u16le(&b, 56) as usize,
    );
    let (shoff, shentsize, shnum) = (
        u64le(&b, 40) as usize,
        u16le(&b, 58) as usize,
        u16le(&b, 60) as usize,
    );
    let mut interp = false;
    let mut needed = 0;
    for i in 0..phnum {
        let ph = &b[phoff + i * phentsize..phoff + (i + 1) * phentsize];
        match u32le(ph, 0) {
            3 => interp = true, // PT_INTERP
            2 => {
                // PT_DYNAMIC: Elf64_Dyn entries (d_tag, d_val) up to DT_NULL.
                let (off, size) = (u64le(ph, 8) as usize, u64le(ph, 32) as usize);
                for d in b[off..off + size].chunks_exact(16) {
                    match u64le(d, 0) {
                        0 => break,
                        1 => needed += 1, // DT_NEEDED
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let symtab = (0..shnum).any(|i| u32le(&b, shoff + i * shentsize + 4) == 2); // SHT_SYMTAB
    ElfFacts {
        machine,
        interp,
        needed,
        symtab,
    }
}

/// Checks the ELF facts of a static binary and returns its size.
fn check_static(path: &Path, machine: u16) -> u64 {
    let f = elf_facts(path);
    assert_eq!(f.machine, machine, "{}: {f:?}", path.display());
    assert!(!f.interp, "{}: has a program interpreter", path.display());
    assert_eq!(f.needed, 0, "{}: needs shared libraries", path.display());
    assert!(!f.symtab, "{}: not stripped", path.display());
    let size = std::fs::metadata(path).unwrap().len();
    assert!(
        size <= MAX_SIZE,
        "{}: {size} bytes, more than {MAX_SIZE}: what made it grow?",
        path.display()
    );
    size
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(prog: &Path, args: &[&str]) -> Out {
    let o = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", prog.display()));
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn ok(o: Out, what: &str) -> Out {
    assert_eq!(o.code, 0, "{what}: stdout={} stderr={}", o.stdout, o.stderr);
    o
}

fn have_tool(test: &str, tool: &str, package: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        skip_or_fail(
            test,
            &format!("{tool} is not installed (apt-get install {package})"),
        );
    }
    found
}

fn cryptsetup() -> Option<PathBuf> {
    [
        "/usr/sbin/cryptsetup",
        "/sbin/cryptsetup",
        "/usr/bin/cryptsetup",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// Root, /dev/fuse and loop devices for the userspace backend on the host.
fn can_map(test: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip_or_fail(
            test,
            "needs root (mappings need FUSE mounts and loop devices)",
        );
        return false;
    }
    for p in ["/dev/fuse", "/dev/loop-control"] {
        if !Path::new(p).exists() {
            skip_or_fail(test, &format!("{p} is missing (modprobe fuse / loop)"));
            return false;
        }
    }
    true
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        v.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    v.truncate(len);
    v
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(data))
}

#[test]
fn x86_64_static_binary_is_static_and_runs() {
    let (x86, _) = binaries();
    let size = check_static(x86, EM_X86_64);
    say(&format!("static: lukskit-x86_64 is {size} bytes"));
    let v = ok(run(x86, &["--version"]), "lukskit-x86_64 --version");
    assert!(v.stdout.starts_with("lukskit "), "{}", v.stdout);
}

/// The static binary cannot load PKCS#11 modules (no dynamic loader): a systemd-pkcs11 token
/// is refused in one line and the key file opens the volume.
#[test]
fn x86_64_static_binary_refuses_pkcs11_tokens_in_one_line() {
    let test = "x86_64_static_binary_refuses_pkcs11_tokens_in_one_line";
    let Some(cs) = cryptsetup() else {
        skip_or_fail(
            test,
            "cryptsetup is not installed (apt-get install cryptsetup-bin)",
        );
        return;
    };
    let (x86, _) = binaries();
    let d = tempfile::tempdir().unwrap();
    let img = d.path().join("img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let key = d.path().join("key");
    std::fs::write(&key, b"pass").unwrap();
    let (img_s, key_s) = (img.to_str().unwrap(), key.to_str().unwrap());
    ok(
        run(
            &cs,
            &[
                "luksFormat",
                "-q",
                "--type",
                "luks2",
                "--pbkdf",
                "pbkdf2",
                "--pbkdf-force-iterations",
                "1000",
                "-d",
                key_s,
                img_s,
            ],
        ),
        "cryptsetup luksFormat",
    );
    let token = d.path().join("token.json");
    std::fs::write(
        &token,
        r#"{"type":"systemd-pkcs11","keyslots":["0"],"pkcs11-uri":"pkcs11:token=lukskit;id=%01","pkcs11-key":"AAECAwQFBgcICQoLDA0ODw=="}"#,
    )
    .unwrap();
    ok(
        run(
            x86,
            &[
                "token",
                "import",
                "--json-file",
                token.to_str().unwrap(),
                img_s,
            ],
        ),
        "token import",
    );
    let o = ok(
        run(
            x86,
            &["open", "--test-passphrase", "-v", "-d", key_s, img_s],
        ),
        "open --test-passphrase",
    );
    assert_eq!(
        o.stderr,
        "Token 0 (systemd-pkcs11) cannot unlock: this static lukskit cannot load PKCS#11 \
         modules (no dynamic loader); use the dynamically linked lukskit or the passphrase.\n"
    );
    assert!(o.stdout.contains("Key slot 0 unlocked."), "{}", o.stdout);
}

#[test]
fn aarch64_static_binary_opens_cryptsetup_volume_in_arm64_vm() {
    let t = "static aarch64 in the arm64 VM";
    let (x86, arm) = binaries();
    let size = check_static(arm, EM_AARCH64);
    say(&format!("static: lukskit-aarch64 is {size} bytes"));
    if std::env::var("LUKSKIT_REFVM").as_deref() == Ok("0") {
        skip_or_fail(t, "LUKSKIT_REFVM=0 turns the VMs off");
        return;
    }
    let Some(cs) = cryptsetup() else {
        skip_or_fail(
            t,
            "cryptsetup is not installed (apt-get install cryptsetup-bin)",
        );
        return;
    };
    if !can_map(t) || !have_tool(t, "qemu-aarch64", "qemu-user") {
        return;
    }
    let d = tempfile::Builder::new()
        .prefix("lukskit-static")
        .tempdir()
        .unwrap();
    let vol = d.path().join("vol.img");
    let key = d.path().join("key");
    std::fs::write(&key, pattern(64, 7)).unwrap();
    std::fs::File::create(&vol)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let (vol_s, key_s) = (vol.to_str().unwrap(), key.to_str().unwrap());
    // cryptsetup's defaults (LUKS2, aes-xts-plain64, 512-bit key, argon2id) with a cheap
    // Argon2 cost for the TCG guest.
    ok(
        run(
            &cs,
            &[
                "luksFormat",
                "-q",
                "--type",
                "luks2",
                "--pbkdf",
                "argon2id",
                "--pbkdf-memory",
                "32768",
                "--pbkdf-force-iterations",
                "4",
                "--key-file",
                key_s,
                vol_s,
            ],
        ),
        "cryptsetup luksFormat",
    );

    // The x86_64 static binary writes 8 MiB of known data through a userspace mapping.
    let a = pattern(8 << 20, 1);
    let name = format!("lkt-static-{}", std::process::id());
    ok(
        run(
            x86,
            &["open", "--backend", "userspace", "-d", key_s, vol_s, &name],
        ),
        "lukskit-x86_64 open --backend userspace",
    );
    let wrote = (|| -> std::io::Result<()> {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/dev/mapper/{name}"))?;
        f.write_all(&a)?;
        f.sync_all()
    })();
    ok(run(x86, &["close", &name]), "lukskit-x86_64 close");
    wrote.expect("write through the x86_64 static binary's mapping");

    // Under qemu-user the aarch64 binary reads the header exactly as the x86_64 one does.
    let dump_x86 = ok(run(x86, &["luksDump", vol_s]), "lukskit-x86_64 luksDump").stdout;
    let o = Command::new("qemu-aarch64")
        .arg(arm)
        .args(["luksDump", vol_s])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "qemu-aarch64 lukskit-aarch64 luksDump: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), dump_x86);
    let o = Command::new("qemu-aarch64")
        .arg(arm)
        .args(["open", "--test-passphrase", "-d", key_s, vol_s])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "qemu-aarch64 lukskit-aarch64 open --test-passphrase: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The arm64 VM: Debian's arm64 kernel, the aarch64 binary, the volume as /dev/vda.
    let timeout = timeout_for(240);
    let t0 = Instant::now();
    let out = Command::new("bash")
        .arg(repo().join("tests/refvm/run-arm64.sh"))
        .args(["--timeout", &timeout.to_string(), "--copy"])
        .arg(format!("{key_s}:/refvm/files/key"))
        .arg(repo().join("tests/refvm/arm64/open.sh"))
        .arg(&vol)
        .env("LUKSKIT_BIN", arm)
        .stdin(Stdio::null())
        .output()
        .expect("run tests/refvm/run-arm64.sh");
    let r = VmRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: t0.elapsed(),
        timeout: Some(timeout),
    };
    say(&format!(
        "refvm-arm64: {t}: the VM run took {:.1} s (timeout {timeout} s, exit status {})",
        r.elapsed.as_secs_f64(),
        r.code
    ));
    if r.code == EXIT_UNAVAILABLE {
        skip_or_fail(
            t,
            &format!(
                "the arm64 VM is not available: {} (it needs qemu-system-arm, cpio, kmod, \
                 dpkg-deb and the Debian mirror or a warm cache)",
                r.stderr.trim()
            ),
        );
        return;
    }
    if !r.ran(t) {
        return;
    }
    assert_eq!(r.code, 0, "guest script failed: {}\n{}", r.stdout, r.stderr);
    let get = |k: &str| -> String {
        r.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")))
            .unwrap_or_else(|| panic!("no `{k}:` line in {}", r.stdout))
            .to_string()
    };
    assert_eq!(get("arch"), "aarch64");
    assert_eq!(get("wrong key"), "exit 2", "{}", r.stderr);
    assert!(
        r.stdout.contains("status k:   type:    LUKS2")
            && r.stdout.contains("status k:   cipher:  aes-xts-plain64"),
        "{}",
        r.stdout
    );
    let want_a = sha256_hex(&a);
    assert_eq!(get("kernel A"), want_a, "dm-crypt reads the host's data");
    assert_eq!(get("userspace A"), want_a, "the arm64 engine reads it");
    assert_eq!(get("kernel A again"), want_a);
    let b = get("B");
    assert_eq!(
        get("kernel B"),
        b,
        "dm-crypt reads what the arm64 engine wrote"
    );
    assert_eq!(get("left in /dev/mapper"), ".");
    assert_eq!(get("arm64"), "done");

    // And the host's x86_64 binary decrypts what the arm64 engine wrote.
    let plain = d.path().join("plain.raw");
    ok(
        run(
            x86,
            &[
                "image",
                "decrypt",
                "-q",
                "-d",
                key_s,
                vol_s,
                plain.to_str().unwrap(),
            ],
        ),
        "lukskit-x86_64 image decrypt",
    );
    let p = std::fs::read(&plain).unwrap();
    assert_eq!(sha256_hex(&p[..8 << 20]), want_a);
    assert_eq!(sha256_hex(&p[8 << 20..12 << 20]), b);
}

/// The arm64 VM's build directory (`$CACHE/vm`: kernel, busybox, module tree) after
/// `run-arm64.sh --prepare`, with the kernel version; `None` after [`skip_or_fail`] when the VM cannot be had here.
fn arm64_vm_cache(test: &str) -> Option<(PathBuf, String)> {
    let o = Command::new("bash")
        .arg(repo().join("tests/refvm/run-arm64.sh"))
        .arg("--prepare")
        .stdin(Stdio::null())
        .output()
        .expect("run tests/refvm/run-arm64.sh --prepare");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    match o.status.code() {
        Some(0) => {}
        Some(EXIT_UNAVAILABLE) => {
            skip_or_fail(
                test,
                &format!("the arm64 VM is not available: {}", stderr.trim()),
            );
            return None;
        }
        _ => panic!("run-arm64.sh --prepare failed: {stdout}{stderr}"),
    }
    // "refvm-arm64: ready: kernel KVER, cache DIR"
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("refvm-arm64: ready: kernel "))
        .unwrap_or_else(|| panic!("unexpected --prepare output: {stdout}"));
    let (kver, cache) = line.split_once(", cache ").unwrap();
    Some((PathBuf::from(cache), kver.to_string()))
}

fn sh(cmd: &str) {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        o.status.success(),
        "{cmd}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A board's own ramdisk (a busybox tree packed with cpio, gzip-compressed, with an /init of
/// its own) gets lukskit and an unlock step from `scripts/initramfs-add-lukskit.sh`; Debian's
/// arm64 kernel boots it, it unlocks a LUKS2 root that cryptsetup formatted (key file in the
/// ramdisk), mounts it and `switch_root`s into the root's own init, which prints a marker that
/// only that file system holds, that it runs as PID 1 and what `/` is.
#[test]
fn board_ramdisk_unlocks_luks2_root_and_switches_root() {
    board_ramdisk(
        "board ramdisk with lukskit, key file (arm64 VM)",
        Unlock::KeyFile,
    );
}

/// The same with no key file in the ramdisk: the passphrase is typed on the serial console
/// when lukskit's prompt appears there.
#[test]
fn board_ramdisk_unlocks_with_passphrase_typed_on_console() {
    board_ramdisk(
        "board ramdisk with lukskit, typed passphrase (arm64 VM)",
        Unlock::Typed,
    );
}

/// The same with no key file and a TPM: the root has a `systemd-tpm2` token (sealed to PCR 7
/// by `lukskit token enroll-tpm2` on the host against a software TPM whose state the board then
/// has), the ramdisk is made with `--tpm2-device auto`, and the root unlocks with nothing
/// typed. Debian's arm64 kernel has no driver for QEMU's TPM of the `virt` machine
/// (`tpm-tis-device` needs `tpm_tis`, CONFIG_TCG_TIS, which it does not build), so the board's
/// TPM is Debian's arm64 swtpm inside the guest behind the kernel's vTPM proxy
/// (`tpm_vtpm_proxy`, `swtpm chardev --vtpm-proxy`): the kernel's TPM core and resource manager
/// give it `/dev/tpm0` and `/dev/tpmrm0`, started by a small `/init.tpm` (`rdinit=`) before the
/// ramdisk's /init. Nothing extends PCR 7 there, so it is zero at enrolment and at boot.
#[test]
fn board_ramdisk_unlocks_with_tpm2_token_no_keyboard() {
    board_ramdisk(
        "board ramdisk with lukskit, TPM2 token (arm64 VM)",
        Unlock::Tpm,
    );
}

/// How the board ramdisk's root is unlocked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unlock {
    /// A key file in the ramdisk.
    KeyFile,
    /// The passphrase typed at lukskit's prompt on the serial console.
    Typed,
    /// The root's systemd-tpm2 token, with the board's (software) TPM.
    Tpm,
}

/// Debian's arm64 swtpm with the libraries it loads, unpacked into the ramdisk tree `board`
/// (downloaded with `run-arm64.sh --download`), and `/init.tpm`: loads `tpm_vtpm_proxy`, starts
/// swtpm on the state in `/tpm` behind the vTPM proxy, waits for `/dev/tpmrm0`, then runs the
/// ramdisk's `/init`. `None` after [`skip_or_fail`] when the packages cannot be had.
fn board_swtpm(t: &str, dir: &Path, board: &str) -> Option<()> {
    let debs = dir.join("swtpm-debs");
    let o = Command::new("bash")
        .arg(repo().join("tests/refvm/run-arm64.sh"))
        .arg("--download")
        .arg(&debs)
        .args([
            "swtpm",
            "swtpm-libs",
            "libtpms0",
            "libseccomp2",
            "libssl3",
            "libc6",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run tests/refvm/run-arm64.sh --download");
    if o.status.code() == Some(EXIT_UNAVAILABLE) {
        skip_or_fail(
            t,
            &format!(
                "arm64 swtpm packages not available: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        );
        return None;
    }
    assert!(
        o.status.success(),
        "run-arm64.sh --download swtpm ...: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    sh(&format!(
        "set -e; for f in {debs}/*.deb; do dpkg-deb -x \"$f\" {board}; done
         rm -rf {board}/usr/share {board}/usr/lib/aarch64-linux-gnu/gconv \
                {board}/usr/lib/aarch64-linux-gnu/engines-3 {board}/usr/lib/aarch64-linux-gnu/ossl-modules
         test -x {board}/usr/bin/swtpm
         mkdir -p {board}/tpm
         cat >{board}/init.tpm <<'INIT'
#!/bin/sh
# The board's TPM (a test stand-in for its TPM chip and driver): swtpm behind the kernel's vTPM
# proxy, then the ramdisk's own /init.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
modprobe tpm_vtpm_proxy || echo \"init.tpm: modprobe tpm_vtpm_proxy failed\"
LD_LIBRARY_PATH=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu/swtpm \
    /usr/bin/swtpm chardev --vtpm-proxy --tpm2 --tpmstate dir=/tpm --daemon ||
    echo \"init.tpm: swtpm failed\"
n=0
while [ ! -e /dev/tpmrm0 ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n + 1)); done
echo \"init.tpm: $(ls /dev/tpmrm0 2>&1) after $n waits of 0.1 s\"
exec /init
INIT
         chmod 755 {board}/init.tpm",
        debs = debs.display(),
    ));
    Some(())
}

/// `lukskit token enroll-tpm2 --tpm2-pcrs=7` of `vol` (passphrase in `key`) by the host's
/// static lukskit against a software TPM (`swtpm socket`, PCR 7 at zero after TPM2_Startup)
/// whose state is then put into the ramdisk tree `board` as `/tpm`.
fn enroll_board_tpm(dir: &Path, board: &str, x86: &Path, vol: &str, key: &str) {
    let state = dir.join("tpm-state");
    std::fs::create_dir_all(&state).unwrap();
    let sock = dir.join("tpm.sock");
    let ctrl = dir.join("tpm.ctrl");
    let mut swtpm = Command::new("swtpm")
        .args(["socket", "--tpm2", "--flags", "startup-clear", "--tpmstate"])
        .arg(format!("dir={}", state.display()))
        .arg("--server")
        .arg(format!("type=unixio,path={}", sock.display()))
        .arg("--ctrl")
        .arg(format!("type=unixio,path={}", ctrl.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start swtpm (apt-get install swtpm swtpm-tools)");
    let t0 = Instant::now();
    while !(sock.exists() && ctrl.exists()) {
        assert!(
            t0.elapsed().as_secs() < 10,
            "swtpm did not create its sockets"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let enrolled = run(
        x86,
        &[
            "token",
            "enroll-tpm2",
            &format!("--tpm2-device=swtpm:path={}", sock.display()),
            "--tpm2-pcrs=7",
            "--key-file",
            key,
            vol,
        ],
    );
    // A clean shutdown writes the state.
    let stopped = Command::new("swtpm_ioctl")
        .arg("--unix")
        .arg(&ctrl)
        .arg("-s")
        .status();
    if !matches!(stopped, Ok(s) if s.success()) {
        let _ = swtpm.kill();
    }
    let _ = swtpm.wait();
    ok(enrolled, "lukskit-x86_64 token enroll-tpm2");
    sh(&format!(
        "set -e; cp {state}/* {board}/tpm/",
        state = state.display()
    ));
}

fn board_ramdisk(t: &str, unlock: Unlock) {
    let typed = unlock == Unlock::Typed;
    let tpm = unlock == Unlock::Tpm;
    let (x86, arm) = binaries();
    if std::env::var("LUKSKIT_REFVM").as_deref() == Ok("0") {
        skip_or_fail(t, "LUKSKIT_REFVM=0 turns the VMs off");
        return;
    }
    let Some(cs) = cryptsetup() else {
        skip_or_fail(
            t,
            "cryptsetup is not installed (apt-get install cryptsetup-bin)",
        );
        return;
    };
    if !can_map(t) || !have_tool(t, "mkfs.ext4", "e2fsprogs") || !have_tool(t, "cpio", "cpio") {
        return;
    }
    let Some((cache, kver)) = arm64_vm_cache(t) else {
        return;
    };
    let d = tempfile::Builder::new()
        .prefix("lukskit-board")
        .tempdir()
        .unwrap();
    let p = |n: &str| d.path().join(n).to_str().unwrap().to_string();

    // The board's ramdisk: busybox, the kernel's modules, an /init that would start a shell.
    let board = p("board");
    sh(&format!(
        "set -e; mkdir -p {board}/bin {board}/sbin {board}/dev {board}/proc {board}/sys \
         {board}/lib/modules {board}/etc
         cp {bb} {board}/bin/busybox
         for a in sh mount umount mkdir cat echo ls sleep modprobe mdev findfs grep rm \
                  switch_root poweroff; do ln -s busybox {board}/bin/$a; done
         cp -a {cache}/modules/lib/modules/{kver} {board}/lib/modules/
         mknod -m 600 {board}/dev/console c 5 1
         printf '#!/bin/sh\\necho board init; exec sh\\n' >{board}/init; chmod 755 {board}/init
         (cd {board} && find . -mindepth 1 | cpio -o -H newc -R 0:0 --quiet) | gzip -9n >{out}",
        bb = cache.join("busybox").display(),
        cache = cache.display(),
        out = p("board.cpio.gz"),
    ));

    // The real root: busybox and an init that proves where it runs.
    let marker = format!(
        "real-root-{}",
        sha256_hex(&pattern(32, 99))[..16].to_owned()
    );
    let root = p("root");
    sh(&format!(
        "set -e; mkdir -p {root}/bin {root}/sbin {root}/dev {root}/proc {root}/sys {root}/run \
         {root}/etc
         cp {bb} {root}/bin/busybox; ln -s busybox {root}/bin/sh
         echo {marker} >{root}/etc/marker
         cat >{root}/sbin/init <<'INIT'
#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
echo \"REAL-ROOT-INIT: $(/bin/busybox cat /etc/marker) pid $$\"
echo \"REAL-ROOT-MOUNT: $(/bin/busybox grep ' / ' /proc/mounts | /bin/busybox cut -d' ' -f1-3)\"
/bin/busybox sync
/bin/busybox poweroff -f
INIT
         chmod 755 {root}/sbin/init
         mkfs.ext4 -q -F -b 4096 -d {root} {img} 24M",
        bb = cache.join("busybox").display(),
        img = p("root.raw"),
    ));

    // LUKS2 by cryptsetup; the x86_64 static binary copies the file system into it.
    let (vol, key) = (p("vol.img"), p("key"));
    if typed || tpm {
        // What is typed: one line, which lukskit reads without its end of line.
        std::fs::write(&key, b"board passphrase 42").unwrap();
    } else {
        std::fs::write(&key, pattern(64, 3)).unwrap();
    }
    std::fs::File::create(&vol)
        .unwrap()
        .set_len(48 << 20)
        .unwrap();
    ok(
        run(
            &cs,
            &[
                "luksFormat",
                "-q",
                "--type",
                "luks2",
                "--pbkdf",
                "argon2id",
                "--pbkdf-memory",
                "32768",
                "--pbkdf-force-iterations",
                "4",
                "--key-file",
                &key,
                &vol,
            ],
        ),
        "cryptsetup luksFormat",
    );
    // One name per test: the board tests run in parallel in one process.
    let name = format!("lkt-board-{}-{}", std::process::id(), unlock as u8);
    ok(
        run(
            x86,
            &["open", "--backend", "userspace", "-d", &key, &vol, &name],
        ),
        "lukskit-x86_64 open",
    );
    let copied = Command::new("dd")
        .arg(format!("if={}", p("root.raw")))
        .arg(format!("of=/dev/mapper/{name}"))
        .args(["bs=1M", "conv=fsync", "status=none"])
        .status();
    ok(run(x86, &["close", &name]), "lukskit-x86_64 close");
    assert!(copied.unwrap().success(), "dd into the mapping");
    if tpm {
        if !have_tool(t, "swtpm", "swtpm") || !have_tool(t, "swtpm_ioctl", "swtpm-tools") {
            return;
        }
        if board_swtpm(t, d.path(), &board).is_none() {
            return;
        }
        enroll_board_tpm(d.path(), &board, x86, &vol, &key);
        // The board's ramdisk again, with swtpm, its state and /init.tpm.
        sh(&format!(
            "set -e; (cd {board} && find . -mindepth 1 | cpio -o -H newc -R 0:0 --quiet) | gzip -9n >{out}",
            out = p("board.cpio.gz"),
        ));
    }

    // The script adds lukskit and the unlock step.
    let o = Command::new("bash")
        .arg(repo().join("scripts/initramfs-add-lukskit.sh"))
        .arg("--lukskit")
        .arg(arm)
        .args(["--root", "/dev/vda"])
        .args(match unlock {
            Unlock::KeyFile => vec!["--key-file", key.as_str()],
            Unlock::Typed => vec![],
            // One try: were the token to fail, the wrong passphrase typed below ends the boot.
            // The emulated board is slow (its TPM is swtpm under TCG, on a loaded CI machine
            // 2-3 times slower than here): the wait for it is generous, init.tpm's too.
            Unlock::Tpm => vec![
                "--tpm2-device",
                "auto",
                "--tpm-wait",
                "120",
                "--open-options",
                "--verbose --tries 1",
            ],
        })
        .arg("--modules")
        .arg("virtio_pci virtio_blk dm_mod dm_crypt xts aes_ce_blk crc32c_generic ext4")
        .args([&p("board.cpio.gz"), &p("ramdisk.cpio.gz")])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "initramfs-add-lukskit.sh: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );

    let wrong = p("wrong");
    std::fs::write(&wrong, b"not the passphrase").unwrap();
    let timeout = timeout_for(200);
    let t0 = Instant::now();
    let out = Command::new("bash")
        .arg(repo().join("tests/refvm/run-arm64.sh"))
        .args([
            "--timeout",
            &timeout.to_string(),
            "--initrd",
            &p("ramdisk.cpio.gz"),
            // A failed unlock powers off at once rather than waiting in a shell until the
            // timeout.
            "--append",
            if tpm {
                "lukskit.fallback=halt rdinit=/init.tpm"
            } else {
                "lukskit.fallback=halt"
            },
        ])
        .args(match unlock {
            Unlock::KeyFile => vec![],
            Unlock::Typed => vec![
                "--answer".to_string(),
                format!("Enter passphrase for /dev/vda: ={key}"),
            ],
            Unlock::Tpm => vec![
                "--answer".to_string(),
                format!("Enter passphrase for /dev/vda: ={wrong}"),
            ],
        })
        .arg(&vol)
        .env_remove("LUKSKIT_BIN")
        .stdin(Stdio::null())
        .output()
        .expect("run tests/refvm/run-arm64.sh");
    let r = VmRun {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: t0.elapsed(),
        timeout: Some(timeout),
    };
    say(&format!(
        "refvm-arm64: {t}: the VM run took {:.1} s (timeout {timeout} s, exit status {})",
        r.elapsed.as_secs_f64(),
        r.code
    ));
    if !r.ran(t) {
        return;
    }
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // The whole console, then its lines without the kernel's (the ramdisk's and lukskit's
    // own): a long console is cut in the middle by CI's report, the end of a message is kept.
    let console = &format!(
        "{}\n--- the console without the kernel's lines:\n{}",
        r.stdout,
        r.stdout
            .lines()
            .filter(|l| !l.starts_with('['))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        console.contains("lukskit-initramfs: root unlocked and mounted"),
        "the root was not unlocked and mounted: {console}"
    );
    assert!(
        console.contains(&format!("REAL-ROOT-INIT: {marker} pid 1")),
        "the real root's init did not run as PID 1: {console}"
    );
    assert!(
        console.contains("REAL-ROOT-MOUNT: /dev/mapper/cryptroot / ext4"),
        "{console}"
    );
    assert!(!console.contains("board init"), "{console}");
    assert_eq!(
        console.contains("Enter passphrase for /dev/vda:"),
        typed,
        "a prompt exactly when the passphrase is to be typed: {console}"
    );
    if tpm {
        assert!(
            console.contains("New TPM device: /dev/tpm0")
                && console.contains("init.tpm: /dev/tpmrm0"),
            "the board's TPM did not come up: {console}"
        );
        // Keyslot 0: the passphrase; 1: the token's, added by enroll-tpm2.
        assert!(
            console.contains("Key slot 1 unlocked."),
            "the root was not opened by the TPM token's keyslot (1): {console}"
        );
        assert!(!console.contains("cannot unlock"), "{console}");
    }
}
