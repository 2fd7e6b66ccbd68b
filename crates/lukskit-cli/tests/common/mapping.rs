//! Mappings made by `lukskit open` in tests: whether this machine can make them, and a
//! guard that closes them (resuming, or killing the server as a last resort) when dropped.

use super::{lukskit, skip_or_fail};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// True when this machine can open mappings (root, /dev/fuse, loop devices); otherwise
/// [`skip_or_fail`] with what is missing.
pub fn capable(test: &str) -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip_or_fail(
            test,
            "needs root (mappings need FUSE mounts and loop devices)",
        );
        return false;
    }
    for (p, how) in [
        ("/dev/fuse", "modprobe fuse (apt-get install fuse3)"),
        ("/dev/loop-control", "modprobe loop"),
    ] {
        if !Path::new(p).exists() {
            skip_or_fail(test, &format!("{p} is missing ({how})"));
            return false;
        }
    }
    true
}

/// The Debian package that provides `tool`, for the message of a missing one.
fn package_of(tool: &str) -> &str {
    match tool {
        "e2fsck" | "mkfs.ext4" | "resize2fs" => "e2fsprogs",
        "losetup" => "mount",
        "nbdcopy" | "nbdinfo" => "libnbd-bin",
        "qemu-img" | "qemu-io" | "qemu-nbd" => "qemu-utils",
        "openssl" => "openssl",
        "script" => "bsdutils",
        "tpm2_pcrextend" | "tpm2_getcap" | "tpm2_create" => "tpm2-tools",
        "systemd-cryptenroll" => "systemd",
        "softhsm2-util" => "softhsm2",
        "pkcs11-tool" => "opensc",
        "certtool" => "gnutls-bin",
        "clevis" => "clevis",
        other => other,
    }
}

/// True when `tool` is on the PATH; otherwise [`skip_or_fail`].
pub fn have_tool(test: &str, tool: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip_or_fail(
            test,
            &format!(
                "{tool} is not installed (apt-get install {})",
                package_of(tool)
            ),
        );
    }
    ok
}

/// An open mapping (or one about to be opened): closed, with its mount point unmounted,
/// when dropped.
pub struct Mapping {
    pub name: String,
    /// Where [`Mapping::mount`] mounted the device.
    pub mnt: Option<PathBuf>,
}

impl Mapping {
    /// The mapping name for `test` (unique to this process).
    pub fn new(test: &str) -> Mapping {
        Mapping {
            name: format!("lkt-{test}-{}", std::process::id()),
            mnt: None,
        }
    }
    /// `/dev/mapper/NAME`.
    pub fn dev(&self) -> String {
        format!("/dev/mapper/{}", self.name)
    }
    /// The serving process, from the mapping's state file.
    pub fn pid(&self) -> i32 {
        let s = std::fs::read_to_string(format!("/run/lukskit/{}/state.json", self.name))
            .expect("state file");
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        v["pid"].as_i64().expect("pid in state file") as i32
    }
    /// Mount the device on `dir/mnt`.
    pub fn mount(&mut self, dir: &Path) {
        let m = dir.join("mnt");
        std::fs::create_dir_all(&m).unwrap();
        sh(&format!("mount {} {}", self.dev(), m.display()));
        self.mnt = Some(m);
    }
    /// Unmount what [`Mapping::mount`] mounted.
    pub fn umount(&mut self) {
        if let Some(m) = self.mnt.take() {
            sh(&format!("umount {}", m.display()));
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if let Some(m) = self.mnt.take() {
            let _ = Command::new("umount").arg("-l").arg(&m).status();
        }
        if Path::new(&format!("/run/lukskit/{}", self.name)).exists() {
            let r = lukskit(&["close", &self.name], b"");
            if r.code != 0 {
                let _ = lukskit(&["luksResume", &self.name, "-d", "/dev/null"], b"");
                if let Ok(s) =
                    std::fs::read_to_string(format!("/run/lukskit/{}/state.json", self.name))
                {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&s) {
                        if let Some(pid) = v["pid"].as_i64() {
                            // SAFETY: kill with a pid read from our own state file.
                            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                }
                let _ = lukskit(&["close", &self.name], b"");
            }
        }
    }
}

/// Run `cmd` with `sh -c`, panicking with its output unless it succeeds; returns stdout.
pub fn sh(cmd: &str) -> String {
    let o = Command::new("sh").args(["-c", cmd]).output().unwrap();
    assert!(
        o.status.success(),
        "{cmd} failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}
