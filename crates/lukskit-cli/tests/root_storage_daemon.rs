//! The serving process of a root file system (FUSE + loop, where the kernel has no dm-crypt)
//! follows systemd's root-storage-daemon convention: its `argv[0]` starts with `@`, so that
//! systemd's shutdown and `systemd-shutdown`'s final kill leave it running (the root stays
//! readable until the end). lukskit marks it so when it runs in an initramfs, or when
//! `LUKSKIT_ROOT_STORAGE_DAEMON=1` says so (`0` never).
//!
//! The sweep below applies systemd's rule (src/shared/killall.c: a process is spared when it
//! is owned by root and its command line starts with `@`; every other one gets SIGTERM, then
//! SIGKILL) to the serving processes of this test only, never to other processes of the host.
//!
//! Needs root, /dev/fuse and loop devices (fails without them unless LUKSKIT_ALLOW_SKIP=1).

mod common;
use common::mapping::*;
use common::*;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{Duration, Instant};

fn argv0(pid: i32) -> Vec<u8> {
    let c = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline of the serving process");
    c.split(|&b| b == 0).next().unwrap_or_default().to_vec()
}

/// systemd's `ignore_proc()` for a user-space process: spared when owned by root and its
/// command line starts with `@`.
fn systemd_spares(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let uid0 = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next())
        == Some("0");
    uid0 && argv0(pid).first() == Some(&b'@')
}

fn alive(pid: i32) -> bool {
    // A zombie is gone for our purpose.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// SIGTERM, wait, SIGKILL to every process of `pids` that systemd would not spare, as
/// systemd-shutdown's killall does; returns the ones it signalled.
fn sweep(pids: &[i32]) -> Vec<i32> {
    let victims: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|&p| !systemd_spares(p))
        .collect();
    for &p in &victims {
        // SAFETY: kill with pids of serving processes this test started.
        unsafe { libc::kill(p, libc::SIGTERM) };
    }
    let t0 = Instant::now();
    while victims.iter().any(|&p| alive(p)) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
    }
    for &p in &victims {
        if alive(p) {
            // SAFETY: as above.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    victims
}

fn open_with(m: &Mapping, img: &str, key: &str, daemon: &str) {
    lukskit_env(
        &["open", img, &m.name, "-d", key],
        b"",
        &[("LUKSKIT_ROOT_STORAGE_DAEMON", daemon)],
    )
    .ok("open");
}

#[test]
fn root_serving_process_is_marked_and_survives_shutdown_sweep() {
    let t = "root_storage_daemon";
    if !capable(t) {
        return;
    }
    let d = tmp();
    let mut imgs = Vec::new();
    for n in ["root", "other"] {
        let img = sparse(d.path(), n, 24 << 20);
        let key = write_file(d.path(), &format!("{n}.key"), b"secret pass");
        let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
        args.extend_from_slice(&FAST);
        args.extend_from_slice(&[&img, &key]);
        lukskit(&args, b"").ok("luksFormat");
        imgs.push((img, key));
    }
    let root = Mapping::new("rsd-root");
    let other = Mapping::new("rsd-other");
    open_with(&root, &imgs[0].0, &imgs[0].1, "1");
    open_with(&other, &imgs[1].0, &imgs[1].1, "0");
    let (pr, po) = (root.pid(), other.pid());
    assert_eq!(
        String::from_utf8_lossy(&argv0(pr)),
        format!("@lukskit: {}", root.name),
        "the root's serving process carries systemd's '@' mark"
    );
    assert_eq!(
        String::from_utf8_lossy(&argv0(po)),
        format!("lukskit: {}", other.name),
        "another volume's serving process does not"
    );
    // Data written through the root's mapping before the sweep.
    let data: Vec<u8> = (0..8192u32).map(|i| (i * 7 + 3) as u8).collect();
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(root.dev())
            .unwrap();
        f.seek(SeekFrom::Start(4096)).unwrap();
        f.write_all(&data).unwrap();
        f.sync_all().unwrap();
    }
    let killed = sweep(&[pr, po]);
    assert_eq!(
        killed,
        vec![po],
        "systemd's rule signals only the unmarked one"
    );
    assert!(alive(pr), "the root's serving process survived the sweep");
    assert!(!alive(po), "the other serving process was killed");
    // The root is still served: read back through the kernel (loop device over the FUSE
    // file), bypassing the page cache.
    sh("echo 3 > /proc/sys/vm/drop_caches");
    let mut back = vec![0u8; data.len()];
    {
        let mut f = std::fs::File::open(root.dev()).unwrap();
        f.seek(SeekFrom::Start(4096)).unwrap();
        f.read_exact(&mut back).unwrap();
    }
    assert_eq!(back, data, "the root's mapping still reads after the sweep");
    assert!(Path::new(&root.dev()).exists());
}
