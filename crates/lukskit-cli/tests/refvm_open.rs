//! A file system on a volume opened by lukskit (FUSE + loop device, no device-mapper) is the
//! same file system when the real kernel opens the volume with cryptsetup and dm-crypt, and
//! the other way round:
//!
//! * lukskit formats a LUKS2 volume, `lukskit open`, `mkfs.ext4 /dev/mapper/NAME`, writes files,
//!   `lukskit close`; in the reference VM cryptsetup opens it, the kernel mounts it, the files'
//!   SHA-256 must match and `e2fsck -fn` must be clean.
//! * in the VM cryptsetup formats a LUKS1 volume and the kernel writes ext4 with files; lukskit
//!   opens it on the host, `e2fsck -fn` must be clean and the files must match.
//!
//! Fails without root, /dev/fuse, loop devices or mkfs.ext4, or where the VM is unavailable
//! (see refvm_smoke.rs), unless `LUKSKIT_ALLOW_SKIP=1` lets it skip with a `SKIP:` line.

mod common;
mod refvm_common;

use std::path::Path;
use std::process::Command;

const PASS: &[u8] = b"correct-horse-16";

fn sh(cmd: &str) -> (bool, String) {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn host_ready() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("needs root (FUSE mounts and loop devices)".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Err("/dev/fuse is missing (modprobe fuse; apt-get install fuse3)".into());
    }
    for (tool, package) in [
        ("losetup", "mount"),
        ("mkfs.ext4", "e2fsprogs"),
        ("e2fsck", "e2fsprogs"),
        ("mount", "mount"),
        ("sha256sum", "coreutils"),
    ] {
        if !sh(&format!("command -v {tool}")).0 {
            return Err(format!(
                "{tool} is not installed (apt-get install {package})"
            ));
        }
    }
    Ok(())
}

/// Closes the mapping (and unmounts) whatever happens.
struct Mapping {
    name: String,
    mnt: String,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        let _ = sh(&format!("mountpoint -q {0} && umount {0}", self.mnt));
        let _ = common::lukskit(&["close", &self.name], b"");
    }
}

fn open(img: &str, kf: &str, name: &str, mnt: &str) -> Mapping {
    common::lukskit(&["open", "-d", kf, img, name], b"").ok("lukskit open");
    Mapping {
        name: name.into(),
        mnt: mnt.into(),
    }
}

#[test]
fn kernel_and_lukskit_share_file_systems() {
    const T: &str = "refvm_open";
    if let Err(why) = host_ready() {
        common::skip_or_fail(T, &why);
        return;
    }
    if !refvm_common::vm_ready(T) {
        return;
    }
    let dir = common::tmp();
    let d = dir.path();
    let kf = common::write_file(d, "kf", PASS);
    let mnt = d.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mnt = mnt.to_str().unwrap().to_string();
    let name = format!("lkvm{}", std::process::id());

    // lukskit writes a file system.
    let a = common::sparse(d, "a.img", 64 << 20);
    common::lukskit(
        &[
            "luksFormat",
            "-q",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            "-d",
            &kf,
            &a,
        ],
        b"",
    )
    .ok("luksFormat");
    let ours;
    {
        let _m = open(&a, &kf, &name, &mnt);
        let dev = format!("/dev/mapper/{name}");
        let (ok, out) = sh(&format!("mkfs.ext4 -q -F {dev} && mount {dev} {mnt}"));
        assert!(ok, "mkfs/mount on {dev}: {out}");
        let (ok, out) = sh(&format!(
            "cd {mnt} && echo 'written by lukskit' > hello && \
             head -c 2621440 /dev/urandom > blob && sync && sha256sum hello blob"
        ));
        assert!(ok, "writing files: {out}");
        ours = out;
        let (ok, out) = sh(&format!("umount {mnt}"));
        assert!(ok, "umount: {out}");
    }
    assert_ne!(
        common::lukskit(&["status", &name], b"").code,
        0,
        "mapping still active after close"
    );

    // The kernel reads it, and writes a file system of its own on B.
    let b = common::sparse(d, "b.img", 64 << 20);
    let mut key_disk = PASS.to_vec();
    key_disk.resize(4096, 0);
    let key = common::write_file(d, "key.img", &key_disk);
    let script = refvm_common::refvm_dir().join("open.sh");
    // One boot, two 64 MiB volumes opened, checked and written: ~30 s on an idle host here.
    let r = refvm_common::run_vm(
        T,
        refvm_common::timeout_for(60),
        &[script.as_os_str(), a.as_ref(), b.as_ref(), key.as_ref()],
        false,
    );
    if !r.ran(T) {
        return;
    }
    assert_eq!(r.code, 0, "open.sh in the VM: {}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("open: ok"), "{}", r.stdout);
    assert!(
        r.stdout.contains("a: fsck clean"),
        "kernel's e2fsck of lukskit's file system: {}",
        r.stdout
    );
    let kernel_a: String = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("a: "))
        .filter(|l| !l.contains("fsck"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        kernel_a, ours,
        "the kernel sees other files than lukskit wrote"
    );
    let kernel_b: String = r
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("b: "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(kernel_b.lines().count(), 2, "{}", r.stdout);

    // lukskit reads the kernel's file system.
    let _m = open(&b, &kf, &name, &mnt);
    let dev = format!("/dev/mapper/{name}");
    let (ok, out) = sh(&format!("e2fsck -fn {dev}"));
    assert!(
        ok,
        "e2fsck of the kernel's file system through lukskit: {out}"
    );
    let (ok, out) = sh(&format!("mount -o ro {dev} {mnt}"));
    assert!(ok, "mount: {out}");
    let (ok, out) = sh(&format!("cd {mnt} && sha256sum hello blob"));
    assert!(ok, "{out}");
    assert_eq!(
        out, kernel_b,
        "lukskit sees other files than the kernel wrote"
    );
}
