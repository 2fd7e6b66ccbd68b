//! A user who is not root (here `nobody`, through `setpriv`) opens an image they own as a
//! FUSE file (`open --no-loop`), with the mapping's state under `$XDG_RUNTIME_DIR/lukskit/`
//! (or `/tmp/lukskit-UID/`), writes and reads it, sees it in `status` and closes it; what
//! needs root (a loop device and `/dev/mapper/NAME`, the kernel backend) is refused with a
//! message that says so. Claims still keep root's and the user's opens of one image apart.

mod common;
use common::mapping::{capable, have_tool, sh};
use common::*;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

/// `nobody`'s user and group ids.
fn nobody() -> (u32, u32) {
    let id = |flag: &str| -> u32 { sh(&format!("id {flag} nobody")).trim().parse().unwrap() };
    (id("-u"), id("-g"))
}

/// Run `lukskit args` as `nobody` (no supplementary groups), with `XDG_RUNTIME_DIR` set to
/// `xdg` (or unset).
fn as_nobody(xdg: Option<&Path>, args: &[&str]) -> Run {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        env!("CARGO_BIN_EXE_lukskit"),
    ])
    .args(args)
    .env_remove("XDG_RUNTIME_DIR");
    if let Some(x) = xdg {
        c.env("XDG_RUNTIME_DIR", x);
    }
    run(c, b"", &[])
}

/// Run a shell command line as `nobody`.
fn sh_as_nobody(cmd: &str) -> Run {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=nobody",
        "--regid=nogroup",
        "--clear-groups",
        "sh",
        "-c",
        cmd,
    ]);
    run(c, b"", &[])
}

fn chown_r(p: &Path) {
    let (u, g) = nobody();
    sh(&format!("chown -R {u}:{g} {}", p.display()));
}

/// Closes the user's mapping (both state locations) and root's when the test ends, passed or
/// not.
struct Cleanup<'a> {
    xdg: &'a Path,
    name: String,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = as_nobody(Some(self.xdg), &["close", &self.name]);
        let _ = as_nobody(None, &["close", &self.name]);
        let _ = lukskit(&["close", &format!("{}-root", self.name)], b"");
    }
}

fn fuse_mounted(path: &Path) -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(path.to_str().unwrap()))
}

#[test]
fn a_user_opens_their_image_as_a_fuse_file() {
    const T: &str = "nonroot_fuse_file";
    if !capable(T) || !have_tool(T, "setpriv") || !have_tool(T, "fusermount3") {
        return;
    }
    let dir = tmp();
    let home = dir.path().join("home");
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&xdg).unwrap();
    let (img, key) = lukskit_luks2_image(&home, 32 << 20, b"secret");
    let data = home.join("data");
    std::fs::write(&data, pattern(1 << 20, 35)).unwrap();
    chown_r(dir.path());
    sh(&format!("chmod 700 {} {}", home.display(), xdg.display()));
    let name = format!("lkt-user-{}", std::process::id());
    let state = xdg.join("lukskit").join(&name);
    let fuse = state.join("device");
    let _cleanup = Cleanup {
        xdg: &xdg,
        name: name.clone(),
    };

    // What needs root is refused, saying so and what to do instead; nothing is left behind.
    let r = as_nobody(Some(&xdg), &["open", &img, &name, "-d", &key]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("A loop device and /dev/mapper/{name} needs root."))
            && r.stderr.contains("open --no-loop"),
        "{}",
        r.stderr
    );
    let r = as_nobody(
        Some(&xdg),
        &["open", "--backend", "kernel", &img, &name, "-d", &key],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("The kernel backend (device-mapper) needs root."),
        "{}",
        r.stderr
    );
    assert!(!state.exists(), "a refused open left {}", state.display());

    // The FUSE file, the state in the user's runtime directory.
    as_nobody(Some(&xdg), &["open", "--no-loop", &img, &name, "-d", &key]).ok("open --no-loop");
    let m = std::fs::symlink_metadata(xdg.join("lukskit")).unwrap();
    assert!(m.is_dir() && m.uid() == nobody().0 && m.mode() & 0o777 == 0o700);
    assert!(fuse_mounted(&fuse), "{} is not mounted", fuse.display());
    let st = as_nobody(Some(&xdg), &["status", &name]).ok("status");
    assert!(
        st.stdout
            .contains(&format!("  fuse file: {}\n", fuse.display()))
            && st.stdout.contains(&format!("  device:  {img}\n")),
        "{}",
        st.stdout
    );
    sh_as_nobody(&format!(
        "dd if={} of={} bs=64k conv=notrunc,fsync status=none",
        data.display(),
        fuse.display()
    ))
    .ok("write through the FUSE file");

    // The image is in use: root cannot open it beside the user's mapping.
    let r = lukskit(
        &[
            "open",
            "--no-loop",
            &img,
            &format!("{name}-root"),
            "-d",
            &key,
        ],
        b"",
    );
    assert_eq!(r.code, 5, "root opened an image in use: {}", r.stderr);

    as_nobody(Some(&xdg), &["close", &name]).ok("close");
    assert!(!fuse_mounted(&fuse), "{} still mounted", fuse.display());
    assert!(!state.exists(), "close left {}", state.display());

    // Persisted: opened again (without XDG_RUNTIME_DIR: /tmp/lukskit-UID), read back.
    let tmp_state = Path::new(&format!("/tmp/lukskit-{}", nobody().0)).join(&name);
    as_nobody(None, &["open", "--no-loop", &img, &name, "-d", &key]).ok("open again");
    let back = sh_as_nobody(&format!(
        "cmp -n {} {} {}",
        1 << 20,
        data.display(),
        tmp_state.join("device").display()
    ));
    let closed = as_nobody(None, &["close", &name]);
    assert_eq!(back.code, 0, "read back: {}{}", back.stdout, back.stderr);
    closed.ok("close again");

    // Root's mapping of the image keeps the user out the same way.
    let root_name = format!("{name}-root");
    lukskit(&["open", "--no-loop", &img, &root_name, "-d", &key], b"").ok("root open");
    let r = as_nobody(Some(&xdg), &["open", "--no-loop", &img, &name, "-d", &key]);
    let _ = lukskit(&["close", &root_name], b"");
    assert_eq!(
        r.code, 5,
        "the user opened an image root has open: {}",
        r.stderr
    );
}

/// A state directory that is not the user's alone (a symbolic link to elsewhere, one owned
/// by someone else) is refused before anything is put there, and before a passphrase is
/// read (none is given here).
#[test]
fn a_user_state_directory_must_be_theirs_alone() {
    const T: &str = "nonroot_state_dir";
    if !capable(T) || !have_tool(T, "setpriv") || !have_tool(T, "fusermount3") {
        return;
    }
    let dir = tmp();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let (img, _key) = lukskit_luks2_image(&home, 32 << 20, b"secret");
    let link = dir.path().join("link");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&link).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, link.join("lukskit")).unwrap();
    chown_r(dir.path());
    // Owned by root, writable by the user: not theirs.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(foreign.join("lukskit")).unwrap();
    sh(&format!(
        "chmod 777 {} {}",
        foreign.display(),
        foreign.join("lukskit").display()
    ));
    let name = format!("lkt-userdir-{}", std::process::id());
    for xdg in [&link, &foreign] {
        let r = as_nobody(Some(xdg), &["open", "--no-loop", &img, &name]);
        assert_eq!(r.code, 1, "{}: {}", xdg.display(), r.stderr);
        assert!(
            r.stderr.contains(&format!(
                "Cannot keep mapping state in {}: it must be a directory of yours alone",
                xdg.join("lukskit").display()
            )),
            "{}",
            r.stderr
        );
    }
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert!(!foreign.join("lukskit").join(&name).exists());
}
