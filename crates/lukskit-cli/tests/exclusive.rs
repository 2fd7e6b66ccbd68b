//! Exclusive use of devices: a volume that is open (by lukskit, or through the kernel by
//! anyone: a mount, a loop device, a mapping) is never opened a second time, formatted or
//! converted under it, with cryptsetup 2.6's messages and exit codes (checked against real
//! cryptsetup here where it can run without device-mapper, and in the reference VM against
//! real dm-crypt mappings by refvm_open.rs):
//!
//! * `open`: "Cannot use device X which is in use (already mapped or mounted)." (exit 5);
//! * `luksFormat`: "Cannot exclusively open X, device in use." (exit 1);
//! * `convert`: "Cannot convert device X which is still in use." (exit 5).
//!
//! Header updates that cryptsetup allows on an active volume (luksAddKey, ...) still work.

mod common;
use common::mapping::{capable, have_tool, Mapping};
use common::*;
use std::process::Command;

const FAST: [&str; 5] = [
    "-q",
    "--pbkdf",
    "pbkdf2",
    "--pbkdf-force-iterations",
    "1000",
];

fn fast(mut v: Vec<&str>) -> Vec<&str> {
    v.extend_from_slice(&FAST);
    v
}

fn sh(cmd: &str) -> String {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        o.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// A loop device over a file, detached when dropped.
struct Loop(String);

impl Loop {
    fn attach(file: &str) -> Loop {
        Loop(sh(&format!("losetup --find --show {file}")))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

fn assert_refused(r: &Run, code: i32, message: &str, what: &str) {
    assert_eq!(
        (r.code, r.stderr.trim()),
        (code, message),
        "{what}: stdout {}",
        r.stdout
    );
}

#[test]
fn an_open_image_is_not_opened_again_formatted_or_converted() {
    if !capable("exclusive image") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "v.img", 32 << 20);
    let kf = write_file(dir.path(), "k", b"secret");
    let kf2 = write_file(dir.path(), "k2", b"second");
    lukskit(&fast(vec!["luksFormat", &img, "-d", &kf]), b"").ok("format");
    let mut m = Mapping::new("excl-img");
    lukskit(&["open", "-d", &kf, &img, &m.name], b"").ok("first open");
    sh(&format!("mkfs.ext4 -q {}", m.dev()));
    m.mount(dir.path());
    let file = m.mnt.as_ref().unwrap().join("data");
    std::fs::write(&file, b"written through the first mapping").unwrap();
    sh("sync");

    let in_use = format!("Cannot use device {img} which is in use (already mapped or mounted).");
    let other = Mapping::new("excl-img2");
    for extra in [vec![], vec!["--readonly"], vec!["--no-loop"]] {
        let mut a = vec!["open", "-d", &kf, &img, &other.name];
        a.extend(extra.iter());
        assert_refused(&lukskit(&a, b""), 5, &in_use, &format!("open {extra:?}"));
    }
    let sock = dir.path().join("nbd.sock");
    let nbd = format!("unix:{}", sock.display());
    assert_refused(
        &lukskit(&["open", "-d", &kf, "--nbd", &nbd, &img, &other.name], b""),
        5,
        &in_use,
        "open --nbd",
    );
    assert_refused(
        &lukskit(&fast(vec!["luksFormat", &img, "-d", &kf]), b""),
        1,
        &format!("Cannot exclusively open {img}, device in use."),
        "luksFormat",
    );
    assert_refused(
        &lukskit(&["convert", "-q", "--type", "luks1", &img], b""),
        5,
        &format!("Cannot convert device {img} which is still in use."),
        "convert",
    );
    assert_refused(
        &lukskit(&fast(vec!["image", "encrypt", "-d", &kf, &kf2, &img]), b""),
        1,
        &format!("Cannot exclusively open {img}, device in use."),
        "image encrypt onto an open image",
    );
    // Header updates that cryptsetup allows on an active volume go through.
    lukskit(&fast(vec!["luksAddKey", &img, "-d", &kf, &kf2]), b"").ok("luksAddKey while open");

    // The data written through the mapping survived every refused attempt.
    m.umount();
    lukskit(&["close", &m.name], b"").ok("close");
    lukskit(&["open", "-d", &kf2, &img, &m.name], b"").ok("reopen with the added key");
    m.mount(dir.path());
    assert_eq!(
        std::fs::read(m.mnt.as_ref().unwrap().join("data")).unwrap(),
        b"written through the first mapping"
    );
    m.umount();
    lukskit(&["close", &m.name], b"").ok("close again");
    // Free again: a second name opens now.
    lukskit(&["open", "-d", &kf, &img, &other.name], b"").ok("open after close");
    lukskit(&["close", &other.name], b"").ok("close second");
}

#[test]
fn an_open_block_device_is_claimed_exclusively() {
    if !capable("exclusive block device") {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "v.img", 32 << 20);
    let kf = write_file(dir.path(), "k", b"secret");
    let lo = Loop::attach(&img);
    lukskit(&fast(vec!["luksFormat", &lo.0, "-d", &kf]), b"").ok("format");
    let m = Mapping::new("excl-blk");
    lukskit(&["open", "-d", &kf, &lo.0, &m.name], b"").ok("open");
    let other = Mapping::new("excl-blk2");
    assert_refused(
        &lukskit(&["open", "-d", &kf, &lo.0, &other.name], b""),
        5,
        &format!(
            "Cannot use device {} which is in use (already mapped or mounted).",
            lo.0
        ),
        "second open of the block device",
    );
    assert_refused(
        &lukskit(&fast(vec!["luksFormat", &lo.0, "-d", &kf]), b""),
        1,
        &format!("Cannot exclusively open {}, device in use.", lo.0),
        "luksFormat of an open block device",
    );
    // The kernel sees the claim too: mounting the ciphertext device is refused.
    let mnt = dir.path().join("raw");
    std::fs::create_dir(&mnt).unwrap();
    let st = Command::new("mount")
        .args([lo.0.as_str(), mnt.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!st.status.success(), "the kernel mounted a claimed device");
    lukskit(&["close", &m.name], b"").ok("close");
}

/// Devices that the kernel holds for others: a mounted file system and a file attached to a
/// loop device. For a mounted block device real cryptsetup runs here too, and both must say
/// the same.
#[test]
fn devices_held_by_the_kernel_are_refused_like_cryptsetup() {
    if !capable("kernel-held devices")
        || !have_tool("kernel-held devices", "mkfs.ext4")
        || !have_cryptsetup("kernel-held devices")
    {
        return;
    }
    let dir = tmp();
    let img = sparse(dir.path(), "fs.img", 32 << 20);
    let kf = write_file(dir.path(), "k", b"secret");
    let lo = Loop::attach(&img);
    sh(&format!("mkfs.ext4 -q {}", lo.0));
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    sh(&format!("mount {} {}", lo.0, mnt.display()));
    let ours = lukskit(&fast(vec!["luksFormat", &lo.0, "-d", &kf]), b"");
    let theirs = cryptsetup(&fast(vec!["luksFormat", &lo.0, "-d", &kf]), b"").unwrap();
    let key32 = write_file(dir.path(), "k32", &[0x5a; 32]);
    let plain = lukskit(
        &[
            "open",
            "--type",
            "plain",
            "-d",
            &key32,
            &lo.0,
            "lkt-excl-plain",
        ],
        b"",
    );
    sh(&format!("umount {}", mnt.display()));
    assert_eq!(
        (ours.code, ours.stderr.trim()),
        (theirs.code, theirs.stderr.trim()),
        "luksFormat of a mounted device: lukskit against cryptsetup"
    );
    assert_eq!(theirs.code, 1, "cryptsetup refuses a mounted device");
    assert_refused(
        &plain,
        5,
        &format!(
            "Cannot use device {} which is in use (already mapped or mounted).",
            lo.0
        ),
        "plain open of a mounted device",
    );

    // An image file that a loop device is attached to (as cryptsetup's own activation of an
    // image does) is in use as well.
    let img2 = sparse(dir.path(), "v.img", 32 << 20);
    lukskit(&fast(vec!["luksFormat", &img2, "-d", &kf]), b"").ok("format image");
    let lo2 = Loop::attach(&img2);
    let looped = Mapping::new("excl-looped");
    assert_refused(
        &lukskit(&["open", "-d", &kf, &img2, &looped.name], b""),
        5,
        &format!("Cannot use device {img2} which is in use (already mapped or mounted)."),
        "open of an image attached to a loop device",
    );
    // luksFormat of that image, though, goes ahead as with cryptsetup (upstream's
    // compat-test2 [43] formats the file its idle losetup device is attached to).
    let theirs = cryptsetup(&fast(vec!["-q", "luksFormat", &img2, "-d", &kf]), b"").unwrap();
    let ours = lukskit(&fast(vec!["-q", "luksFormat", &img2, "-d", &kf]), b"");
    assert_eq!(
        (ours.code, ours.stderr.trim()),
        (theirs.code, theirs.stderr.trim()),
        "luksFormat of an image with an idle loop device: lukskit against cryptsetup"
    );
    assert_eq!(theirs.code, 0, "cryptsetup formats it");
    drop(lo2);
}

/// The lock file of a block device (`/run/cryptsetup/L_<major>:<minor>`) and the
/// re-encryption lock (`LN_LUKS2-reencryption-<uuid>`) are removed by their last holder, as
/// cryptsetup 2.6.1 removes them: after header commands and a re-encryption of a loop
/// device, neither tool leaves a lock file behind.
#[test]
fn lock_files_are_removed_by_their_last_holder() {
    if !capable("lock files") || !have_cryptsetup("lock files") {
        return;
    }
    let dir = tmp();
    let kf = write_file(dir.path(), "k", b"secret");
    for tool in ["cryptsetup", "lukskit"] {
        let img = sparse(dir.path(), &format!("{tool}.img"), 32 << 20);
        let lo = Loop::attach(&img);
        let rdev = sh(&format!("stat -L -c '%t %T' {}", lo.0));
        let (maj, min) = rdev.split_once(' ').unwrap();
        let (maj, min) = (
            u32::from_str_radix(maj, 16).unwrap(),
            u32::from_str_radix(min, 16).unwrap(),
        );
        let lock = format!("/run/cryptsetup/L_{maj}:{min}");
        let _ = std::fs::remove_file(&lock);
        let run = |args: Vec<&str>| {
            if tool == "cryptsetup" {
                cryptsetup(&args, b"").unwrap()
            } else {
                lukskit(&args, b"")
            }
        };
        run(fast(vec![
            "luksFormat",
            "--type",
            "luks2",
            &lo.0,
            "-d",
            &kf,
        ]))
        .ok("luksFormat");
        run(vec!["luksDump", &lo.0]).ok("luksDump");
        run(fast(vec!["luksAddKey", &lo.0, "-d", &kf, &kf])).ok("luksAddKey");
        let uuid = run(vec!["luksUUID", &lo.0]).ok("luksUUID").stdout;
        let reenc = format!("/run/cryptsetup/LN_LUKS2-reencryption-{}", uuid.trim());
        run(fast(vec![
            "reencrypt",
            "--init-only",
            "-S",
            "0",
            &lo.0,
            "-d",
            &kf,
        ]))
        .ok("reencrypt --init-only");
        assert!(
            !std::path::Path::new(&lock).exists(),
            "{tool} left {lock} behind"
        );
        assert!(
            !std::path::Path::new(&reenc).exists(),
            "{tool} left {reenc} behind"
        );
    }
}
