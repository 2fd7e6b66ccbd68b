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

/// `lukskit TOOL ARGS` or `cryptsetup ARGS`, run in `dir` (an encryption with a data shift
/// makes its temporary header in the current directory).
fn tool_in(dir: &std::path::Path, tool: &str, args: &[&str]) -> Run {
    let bin = if tool == "cryptsetup" {
        cryptsetup_path().expect("cryptsetup")
    } else {
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_lukskit"))
    };
    let o = Command::new(bin)
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The reproduction: `open`, mkfs, mount, then `reencrypt -q
/// --force-offline-reencrypt` of the image exited 0 and destroyed the file system. Every form
/// of an offline re-encryption is now refused with cryptsetup 2.6.1's words and exit code
/// while a lukskit mapping serves the image (or a loop device over it, or a block device),
/// nothing is written, and the file system is intact afterwards. Where cryptsetup can see the
/// holder (a block device a lukskit mapping holds, a mounted file system) it runs the same
/// commands here and must answer alike; it writes the re-encryption metadata before it
/// refuses, so lukskit runs first on each device and its header is checked unchanged.
#[test]
fn forced_offline_reencryption_never_runs_under_a_mapping_or_a_mount() {
    let test = "forced offline reencryption";
    if !capable(test) || !have_cryptsetup(test) || !have_e2fs(test) {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "k", b"secret");
    let dump = |dev: &str| lukskit(&["luksDump", dev], b"").ok("luksDump").stdout;
    let excl =
        |dev: &str| format!("Failed to open {dev} in exclusive mode (already mapped or mounted).");
    let legacy = |dev: &str| format!("Cannot exclusively open {dev}, device in use.");

    // 1. An image file served by a lukskit mapping, mounted.
    let img = sparse(d, "v.img", 48 << 20);
    lukskit(&fast(vec!["luksFormat", &img, "-d", &kf]), b"").ok("format");
    let mut m = Mapping::new("excl-reenc");
    lukskit(&["open", "-d", &kf, &img, &m.name], b"").ok("open");
    sh(&format!("mkfs.ext4 -q {}", m.dev()));
    m.mount(d);
    let file = m.mnt.as_ref().unwrap().join("data");
    std::fs::write(&file, pattern(1 << 20, 7)).unwrap();
    sh("sync");
    let before = dump(&img);
    for (args, code, message) in [
        (
            vec!["reencrypt", "--force-offline-reencrypt"],
            5,
            excl(&img),
        ),
        (
            vec![
                "reencrypt",
                "--force-offline-reencrypt",
                "--resilience",
                "none",
            ],
            5,
            excl(&img),
        ),
        (
            vec![
                "reencrypt",
                "--force-offline-reencrypt",
                "--decrypt",
                "--header",
                "out.hdr",
            ],
            1,
            legacy(&img),
        ),
    ] {
        let mut a = fast(args.clone());
        a.extend(["-d", &kf, &img]);
        assert_refused(
            &tool_in(d, "lukskit", &a),
            code,
            &message,
            &format!("{args:?} of a served image"),
        );
        assert!(
            !d.join("out.hdr").exists(),
            "{args:?}: a header file was made"
        );
        assert_eq!(dump(&img), before, "{args:?}: the header changed");
    }
    // A loop device over the served image is refused as well (it is the same data).
    let lo_img = Loop::attach(&img);
    let mut a = fast(vec!["reencrypt", "--force-offline-reencrypt"]);
    a.extend(["-d", &kf, &lo_img.0]);
    assert_refused(
        &lukskit(&a, b""),
        5,
        &excl(&lo_img.0),
        "a loop device over the served image",
    );
    // ... and so is a second open through it (the first round left this open).
    let second = Mapping::new("excl-reenc2");
    assert_refused(
        &lukskit(&["open", "-d", &kf, &lo_img.0, &second.name], b""),
        5,
        &format!(
            "Cannot use device {} which is in use (already mapped or mounted).",
            lo_img.0
        ),
        "a second open through a loop device over the served image",
    );
    drop(lo_img);
    assert_eq!(dump(&img), before, "the header changed");
    m.umount();
    lukskit(&["close", &m.name], b"").ok("close");
    lukskit(&["open", "-d", &kf, &img, &m.name], b"").ok("reopen");
    fsck(&m.dev(), "after the refused re-encryptions");
    m.mount(d);
    assert_eq!(
        std::fs::read(m.mnt.as_ref().unwrap().join("data")).unwrap(),
        pattern(1 << 20, 7),
        "the file written before survived"
    );
    m.umount();
    // Closed, the same forced run goes ahead.
    lukskit(&["close", &m.name], b"").ok("close again");
    let mut a = fast(vec!["reencrypt", "--force-offline-reencrypt"]);
    a.extend(["-d", &kf, &img]);
    lukskit(&a, b"").ok("forced offline run of the closed image");

    // 2. Block devices held by a lukskit mapping (its claim is the kernel's O_EXCL, which
    // cryptsetup sees): LUKS2 and LUKS1, each tool; and the image file behind the loop device.
    for kind in ["luks2", "luks1"] {
        let back = sparse(d, &format!("{kind}.img"), 48 << 20);
        let lo = Loop::attach(&back);
        lukskit(
            &fast(vec!["luksFormat", "--type", kind, &lo.0, "-d", &kf]),
            b"",
        )
        .ok("format");
        let m = Mapping::new(&format!("excl-{kind}"));
        lukskit(&["open", "-d", &kf, &lo.0, &m.name], b"").ok("open block device");
        let before = dump(&lo.0);
        let mut a = fast(vec!["reencrypt", "--force-offline-reencrypt"]);
        a.extend(["-d", &kf, &lo.0]);
        let ours = lukskit(&a, b"");
        assert_eq!(dump(&lo.0), before, "{kind}: lukskit changed the header");
        let mut f = fast(vec!["reencrypt", "--force-offline-reencrypt"]);
        f.extend(["-d", &kf, &back]);
        let file = lukskit(&f, b"");
        let theirs = cryptsetup(&a, b"").unwrap();
        let (code, message) = if kind == "luks2" {
            (5, excl(&lo.0))
        } else {
            (1, legacy(&lo.0))
        };
        assert_refused(
            &theirs,
            code,
            &message,
            &format!("cryptsetup, {kind} block device"),
        );
        assert_refused(
            &ours,
            code,
            &message,
            &format!("lukskit, {kind} block device"),
        );
        let file_message = if kind == "luks2" {
            excl(&back)
        } else {
            legacy(&back)
        };
        assert_refused(
            &file,
            code,
            &file_message,
            &format!("{kind}: the file behind the loop device"),
        );
        lukskit(&["close", &m.name], b"").ok("close");
    }

    // 3. Encryption and decryption of a mounted block device: a plaintext file system to
    // encrypt, and the same device as the data device of a detached header to decrypt.
    let fs = sparse(d, "fs.img", 48 << 20);
    let lo = Loop::attach(&fs);
    for tool in ["lukskit", "cryptsetup"] {
        // Made before the file system (the format does not touch the data device).
        let h = format!("{tool}.detached");
        lukskit(
            &fast(vec![
                "luksFormat",
                "--header",
                &d.join(&h).to_string_lossy(),
                &lo.0,
                "-d",
                &kf,
            ]),
            b"",
        )
        .ok("detached header");
    }
    sh(&format!("mkfs.ext4 -q {}", lo.0));
    let mnt = d.join("raw");
    std::fs::create_dir(&mnt).unwrap();
    sh(&format!("mount {} {}", lo.0, mnt.display()));
    let cases: [(&str, Vec<&str>, i32, String); 3] = [
        (
            "--encrypt --header",
            vec!["--encrypt", "--header", "TOOL.hdr"],
            5,
            excl(&lo.0),
        ),
        (
            "--encrypt --reduce-device-size",
            vec!["--encrypt", "--reduce-device-size", "8M"],
            1,
            format!(
                "{}\nFailed to initialize LUKS2 reencryption in metadata.",
                excl(&lo.0)
            ),
        ),
        (
            "--decrypt --header (detached)",
            vec!["--decrypt", "--header", "TOOL.detached"],
            5,
            excl(&lo.0),
        ),
    ];
    let hdr_before = dump(&d.join("lukskit.detached").to_string_lossy());
    for (what, args, code, message) in &cases {
        for tool in ["lukskit", "cryptsetup"] {
            let mut a = fast(vec!["reencrypt", "--force-offline-reencrypt"]);
            let args: Vec<String> = args.iter().map(|s| s.replace("TOOL", tool)).collect();
            a.extend(args.iter().map(String::as_str));
            a.extend(["-d", &kf, &lo.0]);
            assert_refused(
                &tool_in(d, tool, &a),
                *code,
                message,
                &format!("{tool} {what} of a mounted device"),
            );
        }
        assert!(
            !d.join("lukskit.hdr").exists(),
            "{what}: lukskit made a header file"
        );
    }
    assert_eq!(
        dump(&d.join("lukskit.detached").to_string_lossy()),
        hdr_before,
        "lukskit changed the detached header"
    );
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("LUKS2-temp-"))
        .collect();
    assert!(left.is_empty(), "temporary headers left: {left:?}");
    sh(&format!("umount {}", mnt.display()));
    fsck(&lo.0, "the mounted file system");
}

/// Another user (here `nobody`) who may only read an image holds an open-file-description
/// read lock on it, as anyone with read access can, until dropped.
struct StrangersReadLock(std::process::Child);

impl StrangersReadLock {
    fn take(file: &str) -> StrangersReadLock {
        use std::io::BufRead;
        let script = "import fcntl,os,struct,sys,time\n\
             fd=os.open(sys.argv[1],os.O_RDONLY)\n\
             fcntl.fcntl(fd,fcntl.F_OFD_SETLK,struct.pack('hhqqi',fcntl.F_RDLCK,0,0,0,0))\n\
             print('locked',flush=True)\n\
             time.sleep(600)\n";
        let mut child = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(["/usr/bin/python3", "-c", script, file])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked", "the stranger could not lock {file}");
        StrangersReadLock(child)
    }
}

impl Drop for StrangersReadLock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue 36 item 7: a user who may only read an image cannot stop root from opening, formatting
/// or re-encrypting it by holding a read lock on it; root's own claims still exclude each other
/// while that lock is held.
#[test]
fn a_readers_lock_does_not_stop_root_and_root_claims_still_exclude_each_other() {
    if !capable("reader's lock") || !have_tool("reader's lock", "setpriv") {
        return;
    }
    let dir = tmp();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(dir.path(), mode).unwrap();
    let img = sparse(dir.path(), "v.img", 32 << 20);
    let kf = write_file(dir.path(), "k", b"secret");
    let stranger = StrangersReadLock::take(&img);
    lukskit(&fast(vec!["luksFormat", &img, "-d", &kf]), b"").ok("luksFormat under a reader's lock");
    let m = Mapping::new("excl-rdlk");
    lukskit(&["open", "-d", &kf, &img, &m.name], b"").ok("open under a reader's lock");
    let other = Mapping::new("excl-rdlk2");
    assert_refused(
        &lukskit(&["open", "-d", &kf, &img, &other.name], b""),
        5,
        &format!("Cannot use device {img} which is in use (already mapped or mounted)."),
        "second open beside the reader's lock",
    );
    assert_refused(
        &lukskit(&fast(vec!["luksFormat", &img, "-d", &kf]), b""),
        1,
        &format!("Cannot exclusively open {img}, device in use."),
        "luksFormat of the open image beside the reader's lock",
    );
    lukskit(&["close", &m.name], b"").ok("close");
    lukskit(
        &fast(vec![
            "reencrypt",
            "--force-offline-reencrypt",
            &img,
            "-d",
            &kf,
        ]),
        b"",
    )
    .ok("offline re-encryption under a reader's lock");
    drop(stranger);
    lukskit(&["open", "--test-passphrase", "-d", &kf, &img], b"").ok("still opens");
}
