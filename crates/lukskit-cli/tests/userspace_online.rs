//! `resize` and online `reencrypt` of userspace mappings (FUSE file + loop device, NBD
//! export), on the host:
//!
//! * `resize` shrinks and grows a FUSE + loop mapping with ext4 on it (resize2fs online,
//!   e2fsck clean, files intact), grows to the whole device after the image grew, and
//!   refuses what cryptsetup 2.6's `crypt_resize` refuses with its messages; an NBD export
//!   gives the new size to new connections (nbdinfo) and says so;
//! * `reencrypt` (new key and cipher) of a volume served by a FUSE + loop mapping or an NBD
//!   export runs online while fio writes and verifies (crc32c) through the mapping; the
//!   result is checked with real cryptsetup's luksDump and its volume key (decrypted by
//!   Python's `cryptography`), and through lukskit;
//! * a re-encryption killed inside a hot zone (crash injection: `_exit` with no cleanup at
//!   its Nth write or sync, as `kill -9` would) and a real `kill -9` leave the mapping
//!   serving correctly (holding I/O where needed) until `reencrypt --resume-only` finishes
//!   it; a writer started meanwhile completes, and every byte is intact.
//!
//! Needs root, /dev/fuse and loop devices, fio, e2fsprogs, nbdinfo, cryptsetup and Python's
//! `cryptography`; fails without them unless `LUKSKIT_ALLOW_SKIP=1`.

mod common;
use common::mapping::*;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
const MIB: u64 = 1 << 20;

/// A LUKS2 image of `size` bytes (16 MiB header) with key file "key".
fn luks2_image(dir: &Path, size: u64, extra: &[&str]) -> (String, String) {
    let img = sparse(dir, "img", size);
    let key = write_file(dir, "key", b"online pass");
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(extra);
    args.extend_from_slice(&[&img, &key]);
    lukskit(&args, b"").ok("luksFormat");
    (img, key)
}

fn blockdev_size(dev: &str) -> u64 {
    sh(&format!("blockdev --getsize64 {dev}"))
        .trim()
        .parse()
        .unwrap()
}

fn status_size(name: &str) -> u64 {
    let st = lukskit(&["status", name], b"").ok("status").stdout;
    st.lines()
        .find_map(|l| l.trim().strip_prefix("size:"))
        .and_then(|v| v.trim().split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no size in {st}"))
}

fn fs_blocks(dev: &str) -> u64 {
    let out = sh(&format!("dumpe2fs -h {dev} 2>/dev/null"));
    out.lines()
        .find_map(|l| l.strip_prefix("Block count:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no block count in {out}"))
}

/// `close` NAME, then wait (at most 30 s) until its state directory is gone: under load
/// the FUSE unmount of a closed mapping can finish after `close` returned (seen here once,
/// not specific to this file's features), and a reopen then finds the name taken.
fn close_and_wait(name: &str) {
    lukskit(&["close", name], b"").ok("close");
    let dir = format!("/run/lukskit/{name}");
    for _ in 0..300 {
        if !Path::new(&dir).exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{dir} still there 30 s after close");
}

#[test]
fn resize_fuse_loop_shrink_grow_with_ext4_and_refusals() {
    let t = "resize_fuse_loop";
    if !capable(t) || !have_tool(t, "mkfs.ext4") || !have_tool(t, "resize2fs") {
        return;
    }
    let d = tmp();
    // 16 MiB header + 24 MiB data.
    let (img, key) = luks2_image(d.path(), 40 * MIB, &[]);
    let mut m = Mapping::new("resize");
    lukskit(&["open", &img, &m.name, "-d", &key], b"").ok("open");
    assert_eq!(blockdev_size(&m.dev()), 24 * MIB);

    // Shrink to 8 MiB: the loop device, the FUSE file and status follow.
    lukskit(&["resize", &m.name, "--size", "16384"], b"").ok("resize --size");
    assert_eq!(blockdev_size(&m.dev()), 8 * MIB);
    assert_eq!(
        std::fs::metadata(format!("/run/lukskit/{}/device", m.name))
            .unwrap()
            .len(),
        8 * MIB
    );
    assert_eq!(status_size(&m.name), 16384);
    sh(&format!("mkfs.ext4 -q -b 4096 {}", m.dev()));
    m.mount(d.path());
    let mnt = m.mnt.clone().unwrap();
    let first = pattern(3 * MIB as usize, 1);
    std::fs::write(mnt.join("first"), &first).unwrap();
    sh("sync");

    // The image grows by 16 MiB; resize with no size takes the whole device (40 MiB of
    // data) while the file system is mounted, and ext4 grows into it. (Online growth by
    // resize2fs needs CAP_SYS_RESOURCE, which containers often lack: ext4 is grown
    // unmounted, through the same loop device.)
    sh(&format!("truncate -s {} {img}", 56 * MIB));
    lukskit(&["resize", &m.name], b"").ok("resize to the device");
    assert_eq!(blockdev_size(&m.dev()), 40 * MIB);
    assert_eq!(status_size(&m.name), 40 * MIB / 512);
    m.umount();
    sh(&format!("e2fsck -fy {} 2>&1", m.dev()));
    sh(&format!("resize2fs {} 2>&1", m.dev()));
    assert_eq!(fs_blocks(&m.dev()), 40 * MIB / 4096);
    m.mount(d.path());
    // More than the 8 MiB file system could hold.
    let second = pattern(12 * MIB as usize, 2);
    std::fs::write(mnt.join("second"), &second).unwrap();
    m.umount();
    // -y, not -n: resize2fs refuses to shrink a file system mounted after its last check
    // ("Please run 'e2fsck -f' first", s_lastcheck < s_mtime), and only a check that may
    // write records its time. With -n the test failed whenever the mount above ended in a
    // later second than the previous check (seen under load, 2026-11-25).
    sh(&format!("e2fsck -fy {} 2>&1", m.dev()));

    // Shrink the file system, then the mapping under it, to 20 MiB.
    sh(&format!("resize2fs {} 20M 2>&1", m.dev()));
    lukskit(&["resize", &m.name, "--device-size", "20M"], b"").ok("resize --device-size");
    assert_eq!(blockdev_size(&m.dev()), 20 * MIB);
    sh(&format!("e2fsck -fn {} 2>&1", m.dev()));
    m.mount(d.path());
    assert!(std::fs::read(mnt.join("first")).unwrap() == first);
    assert!(std::fs::read(mnt.join("second")).unwrap() == second);
    m.umount();

    // Refusals, in cryptsetup 2.6's words (crypt_resize, device_block_adjust).
    let r = lukskit(
        &["resize", &m.name, "--size", &(41 * MIB / 512).to_string()],
        b"",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.stderr.trim(), format!("Device {img} is too small."));
    let r = lukskit(&["resize", &m.name, "--size", "9"], b"");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stderr.trim(),
        "Device size is not aligned to requested sector size."
    );
    assert_eq!(
        blockdev_size(&m.dev()),
        20 * MIB,
        "a refused resize changed the size"
    );
    lukskit(&["luksSuspend", &m.name], b"").ok("luksSuspend");
    let r = lukskit(&["resize", &m.name], b"");
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(r.stderr.contains("is suspended"), "{}", r.stderr);
    lukskit(&["luksResume", &m.name, "-d", &key], b"").ok("luksResume");

    // After a close, the volume opens at the whole device with the data intact.
    close_and_wait(&m.name);
    lukskit(&["open", &img, &m.name, "-d", &key], b"").ok("reopen");
    assert_eq!(blockdev_size(&m.dev()), 40 * MIB);
    m.mount(d.path());
    assert!(std::fs::read(mnt.join("second")).unwrap() == second);
    m.umount();

    // Not while the header is marked for re-encryption (cryptsetup's requirement check).
    let mut args = vec!["reencrypt", "-q", "--init-only", &img, "-d", &key];
    args.extend_from_slice(&FAST);
    lukskit(&args, b"").ok("reencrypt --init-only");
    let r = lukskit(&["resize", &m.name, "--size", "16384"], b"");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stderr.trim(),
        "Operation incompatible with device marked for LUKS2 reencryption. Aborting."
    );
    assert_eq!(blockdev_size(&m.dev()), 40 * MIB);
}

#[test]
fn resize_nbd_export_new_connections_see_the_new_size() {
    let t = "resize_nbd";
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip_or_fail(t, "needs root (state in /run/lukskit)");
        return;
    }
    if !have_tool(t, "nbdinfo") {
        return;
    }
    let d = tmp();
    let (img, key) = luks2_image(d.path(), 32 * MIB, &[]);
    let m = Mapping::new("resize-nbd");
    let sock = format!("{}/nbd.sock", d.path().display());
    lukskit(
        &[
            "open",
            "--nbd",
            &format!("unix:{sock}"),
            "-d",
            &key,
            &img,
            &m.name,
        ],
        b"",
    )
    .ok("open --nbd");
    let size = || -> u64 {
        sh(&format!("nbdinfo --size 'nbd+unix:///?socket={sock}'"))
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(size(), 16 * MIB);
    let r = lukskit(&["resize", &m.name, "--size", "8192"], b"").ok("resize");
    assert!(
        r.stderr.contains("new size for new connections"),
        "no note about connected clients: {}",
        r.stderr
    );
    assert_eq!(size(), 4 * MIB);
    assert_eq!(status_size(&m.name), 8192);
    lukskit(&["resize", &m.name], b"").ok("resize back");
    assert_eq!(size(), 16 * MIB);
}

/// `dir/fio.log` and a spawned fio job writing 4 KiB blocks at random into the first
/// `region` bytes of `target` (`io` bytes in all, O_DIRECT) and verifying them (crc32c,
/// fatal) as it goes and at the end.
fn spawn_fio(target: &str, region: u64, io: u64, dir: &Path) -> std::process::Child {
    Command::new("fio")
        .args([
            "--name=online",
            &format!("--filename={target}"),
            "--rw=randwrite",
            "--bs=4k",
            "--direct=1",
            "--ioengine=psync",
            &format!("--size={region}"),
            &format!("--io_size={io}"),
            "--verify=crc32c",
            "--verify_backlog=512",
            "--verify_fatal=1",
            "--do_verify=1",
            "--randrepeat=0",
            "--verify_state_save=0",
            &format!("--output={}/fio.log", dir.display()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fio")
}

/// Wait until `child` has written something (it runs).
fn wait_started(child: &mut std::process::Child) {
    let io = format!("/proc/{}/io", child.id());
    loop {
        assert!(
            child.try_wait().unwrap().is_none(),
            "fio ended before the re-encryption started"
        );
        let wrote = std::fs::read_to_string(&io).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("write_bytes:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
        });
        if wrote.is_some_and(|w| w > 0) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn finish_fio(child: std::process::Child, dir: &Path) {
    let o = child.wait_with_output().unwrap();
    let log = std::fs::read_to_string(dir.join("fio.log")).unwrap_or_default();
    assert!(
        o.status.success(),
        "fio verify failed: {}\n{log}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!log.contains("verify: bad"), "{log}");
}

/// The new volume is what cryptsetup sees: no re-encryption left, the new cipher, and the
/// plaintext `want` at data offset `at` decrypted with cryptsetup's volume key by Python.
fn check_with_cryptsetup(img: &str, key: &str, cipher: &str, at: u64, want: &[u8]) {
    let dump = cryptsetup(&["luksDump", img], b"")
        .expect("cryptsetup")
        .ok("cryptsetup luksDump")
        .stdout;
    assert!(!dump.contains("online-reencrypt"), "{dump}");
    assert!(dump.contains(&format!("cipher: {cipher}")), "{dump}");
    assert_eq!(
        dump.matches("crypt\n").count(),
        1,
        "one data segment expected: {dump}"
    );
    let vk = volume_key_with("cryptsetup", img, key, &[]);
    let vk: Vec<u8> = (0..vk.len() / 2)
        .map(|i| u8::from_str_radix(&vk[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let mode = if cipher.contains("xts") { "xts" } else { "cbc" };
    // The first and the last 2 MiB (the Python helper is slow on large ranges).
    let chunk = (2 * MIB as usize).min(want.len());
    for from in [0, want.len() - chunk] {
        let pos = at + from as u64;
        let Some(plain) = python_decrypt(
            mode,
            &vk,
            4096,
            16 * MIB + pos,
            img,
            pos / 512,
            chunk / 4096,
        ) else {
            return;
        };
        assert!(
            plain[..] == want[from..from + chunk],
            "cryptsetup's volume key does not decrypt the data lukskit re-encrypted online \
             (at {pos})"
        );
    }
}

fn reencrypt_args<'a>(img: &'a str, key: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["reencrypt", "-q", img, "-d", key];
    a.extend_from_slice(&FAST);
    a.extend_from_slice(extra);
    a
}

#[test]
fn online_reencrypt_fuse_loop_under_fio_verify() {
    let t = "online_fuse";
    if !capable(t) || !have_tool(t, "fio") || !have_cryptsetup(t) {
        return;
    }
    let d = tmp();
    // 16 MiB header + 48 MiB data: fio works in the first 16 MiB, a fixed pattern sits
    // in the rest.
    let (img, key) = luks2_image(d.path(), 64 * MIB, &[]);
    let m = Mapping::new("online-fuse");
    lukskit(&["open", &img, &m.name, "-d", &key], b"").ok("open");
    let fixed = pattern(32 * MIB as usize, 5);
    write_direct(&m.dev(), 16 * MIB, &fixed).unwrap();
    let mut fio = spawn_fio(&m.dev(), 16 * MIB, 12 * MIB, d.path());
    wait_started(&mut fio);
    let args = reencrypt_args(
        &img,
        &key,
        &[
            "--cipher",
            "aes-cbc-essiv:sha256",
            "--key-size",
            "256",
            "--hotzone-size",
            "1M",
        ],
    );
    lukskit(&args, b"").ok("online reencrypt");
    let running = fio.try_wait().unwrap().is_none();
    finish_fio(fio, d.path());
    eprintln!("fio still running when the re-encryption ended: {running}");
    // The serving process logged the run (issue 35 item 1): its start, every 10 % and its
    // end, in order (to the system log where /dev/log is, else to the mapping's log file).
    if !Path::new("/dev/log").exists() {
        let log = std::fs::read_to_string(format!("/run/lukskit/{}/log", m.name)).unwrap();
        let mut at = 0;
        let mut want = vec![format!("info: {}: re-encryption started (0 % done", m.name)];
        want.extend(
            (1..=10).map(|t| format!("info: {}: re-encryption {} % done (", m.name, t * 10)),
        );
        want.push(format!("info: {}: re-encryption finished", m.name));
        for w in &want {
            let Some(i) = log[at..].find(w.as_str()) else {
                panic!("{w:?} missing or out of order in the log:\n{log}");
            };
            at += i + w.len();
        }
        assert_eq!(
            log.matches("re-encryption").count(),
            want.len(),
            "one line per tenth:\n{log}"
        );
    }
    // The mapping serves the new key and cipher now.
    let st = lukskit(&["status", &m.name], b"").ok("status").stdout;
    assert!(st.contains("cipher:  aes-cbc-essiv:sha256"), "{st}");
    assert!(st.contains("keysize: 256 bits"), "{st}");
    assert!(read_direct(&m.dev(), 16 * MIB, fixed.len()) == fixed);
    // Suspend and resume work with the new key.
    lukskit(&["luksSuspend", &m.name], b"").ok("luksSuspend");
    lukskit(&["luksResume", &m.name, "-d", &key], b"").ok("luksResume");
    let fio_region = read_direct(&m.dev(), 0, 16 * MIB as usize);
    close_and_wait(&m.name);
    check_with_cryptsetup(&img, &key, "aes-cbc-essiv:sha256", 16 * MIB, &fixed);
    check_with_cryptsetup(&img, &key, "aes-cbc-essiv:sha256", 0, &fio_region);
    lukskit(&["open", &img, &m.name, "-d", &key], b"").ok("reopen");
    assert!(read_direct(&m.dev(), 16 * MIB, fixed.len()) == fixed);
    assert!(read_direct(&m.dev(), 0, 16 * MIB as usize) == fio_region);
}

#[test]
fn online_reencrypt_nbd_export_under_read_write_checks() {
    let t = "online_nbd";
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        skip_or_fail(t, "needs root (state in /run/lukskit)");
        return;
    }
    if !have_tool(t, "fio") || !have_tool(t, "nbdcopy") || !have_cryptsetup(t) {
        return;
    }
    let d = tmp();
    let dir = d.path().display().to_string();
    let (img, key) = luks2_image(d.path(), 48 * MIB, &[]);
    let m = Mapping::new("online-nbd");
    let sock = format!("{dir}/nbd.sock");
    let uri = format!("nbd+unix:///?socket={sock}");
    lukskit(
        &[
            "open",
            "--nbd",
            &format!("unix:{sock}"),
            "-d",
            &key,
            &img,
            &m.name,
        ],
        b"",
    )
    .ok("open --nbd");
    let plain = pattern(32 * MIB as usize, 9);
    std::fs::write(d.path().join("plain"), &plain).unwrap();
    sh(&format!("nbdcopy {dir}/plain '{uri}'"));
    // fio's nbd engine is not in every build: a reader and a writer through nbdcopy loop
    // over the export while it re-encrypts: every round reads the whole export back (the
    // second half must be the fixed pattern, the first half the last one written) and
    // writes a new first half.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let (uri2, dir2) = (uri.clone(), dir.clone());
    let plain2 = plain.clone();
    let started = std::sync::Arc::new(std::sync::Barrier::new(2));
    let started2 = started.clone();
    let worker = std::thread::spawn(move || {
        let half = plain2.len() / 2;
        let mut rounds = 0u32;
        let mut last = plain2[..half].to_vec();
        loop {
            sh(&format!("nbdcopy '{uri2}' {dir2}/back"));
            if rounds == 0 {
                started2.wait();
            }
            let back = std::fs::read(format!("{dir2}/back")).unwrap();
            assert!(
                back[half..] == plain2[half..],
                "second half differs in round {rounds}"
            );
            assert!(
                back[..half] == last[..],
                "first half differs in round {rounds}"
            );
            last = pattern(half, 100 + u64::from(rounds));
            std::fs::write(format!("{dir2}/half"), &last).unwrap();
            sh(&format!("nbdcopy {dir2}/half '{uri2}'"));
            rounds += 1;
            if stop2.load(std::sync::atomic::Ordering::SeqCst) {
                return (rounds, last);
            }
        }
    });
    started.wait();
    let args = reencrypt_args(
        &img,
        &key,
        &[
            "--cipher",
            "aes-xts-plain64",
            "--key-size",
            "256",
            "--hotzone-size",
            "1M",
        ],
    );
    lukskit(&args, b"").ok("online reencrypt of the NBD export");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (rounds, last) = worker.join().expect("reader/writer over NBD failed");
    assert!(rounds >= 1);
    sh(&format!("nbdcopy '{uri}' {dir}/final"));
    let fin = std::fs::read(d.path().join("final")).unwrap();
    lukskit(&["close", &m.name], b"").ok("close");
    let half = plain.len() / 2;
    assert!(fin[..half] == last[..] && fin[half..] == plain[half..]);
    check_with_cryptsetup(&img, &key, "aes-xts-plain64", 0, &fin);
}

/// Reencrypt `img` online (mapping `m`) with crash injection `crash` (`write:N` /
/// `sync:N`), then check a writer started on the mapping meanwhile completes once
/// `--resume-only` finishes, and that every byte is intact.
fn crash_then_resume(d: &Path, img: &str, key: &str, m: &Mapping, crash: &str, seed: u64) -> bool {
    let base = pattern(40 * MIB as usize, seed);
    write_direct(&m.dev(), 0, &base).unwrap();
    // Initialized first (nothing online about it), so that the crash points count the
    // writes and syncs of the run itself.
    lukskit(
        &reencrypt_args(img, key, &["--init-only", "--resilience", "checksum"]),
        b"",
    )
    .ok("reencrypt --init-only");
    let args = reencrypt_args(img, key, &["--resume-only", "--hotzone-size", "1M"]);
    let r = lukskit_env(&args, b"", &[("LUKSKIT_CRASH_AT", crash)]);
    if r.code == 0 {
        // The crash point lies beyond this run's writes: nothing to recover.
        return false;
    }
    assert_eq!(r.code, 86, "{crash}: {}", r.stderr);
    // A writer on the live mapping (it may wait: the serving process holds I/O while the
    // hot zone is unresolved).
    let fresh = pattern(4 * MIB as usize, seed + 1);
    let fresh_path = write_file(d, "fresh", &fresh);
    let mut writer = Command::new("dd")
        .args([
            &format!("if={fresh_path}"),
            &format!("of={}", m.dev()),
            "bs=1M",
            "seek=20",
            "oflag=direct",
            "conv=notrunc",
            "status=none",
        ])
        .spawn()
        .unwrap();
    let r = lukskit(&reencrypt_args(img, key, &["--resume-only"]), b"");
    assert_eq!(r.code, 0, "{crash}: resume-only: {}", r.stderr);
    assert!(writer.wait().unwrap().success(), "{crash}: writer failed");
    let mut want = base;
    want[20 * MIB as usize..24 * MIB as usize].copy_from_slice(&fresh);
    let got = read_direct(&m.dev(), 0, want.len());
    if got != want {
        let bad: Vec<usize> = (0..want.len() / 4096)
            .filter(|i| got[i * 4096..(i + 1) * 4096] != want[i * 4096..(i + 1) * 4096])
            .collect();
        panic!(
            "{crash}: data differs after the resumed online re-encryption: {} blocks of 4 KiB, \
             first {:?}, last {:?}",
            bad.len(),
            bad.first(),
            bad.last()
        );
    }
    let dump = lukskit(&["luksDump", img], b"").ok("luksDump").stdout;
    assert!(!dump.contains("online-reencrypt"), "{crash}: {dump}");
    true
}

/// The JSON metadata of the primary LUKS2 header of `img` (`None` while it is being
/// rewritten and does not parse).
fn primary_json(img: &str) -> Option<serde_json::Value> {
    use std::io::Read;
    let mut buf = vec![0u8; 16384];
    std::fs::File::open(img).ok()?.read_exact(&mut buf).ok()?;
    let json = &buf[4096..];
    let end = json.iter().position(|b| *b == 0).unwrap_or(json.len());
    serde_json::from_slice(&json[..end]).ok()
}

#[test]
fn online_reencrypt_killed_then_resume_only() {
    let t = "online_kill";
    if !capable(t) || !have_cryptsetup(t) {
        return;
    }
    let d = tmp();
    // 16 MiB header + 40 MiB data: 40 hot zones of 1 MiB.
    let (img, key) = luks2_image(d.path(), 56 * MIB, &[]);
    let m = Mapping::new("online-kill");
    lukskit(&["open", &img, &m.name, "-d", &key], b"").ok("open");
    // Crash points: inside the first hot zones (before and after its data write, at its
    // syncs) and later ones.
    let mut tried = 0;
    let points = [
        "write:1", "write:2", "write:3", "write:4", "write:5", "write:6", "sync:1", "sync:2",
        "sync:3", "write:45", "sync:31",
    ];
    for (i, crash) in points.iter().enumerate() {
        if crash_then_resume(d.path(), &img, &key, &m, crash, 10 + i as u64) {
            tried += 1;
        }
    }
    assert_eq!(tried, points.len(), "some crash points were not reached");

    // A real kill -9 while it runs, once the header shows it went past the first hot zone.
    let base = pattern(40 * MIB as usize, 77);
    write_direct(&m.dev(), 0, &base).unwrap();
    // 640 hot zones of 64 KiB.
    let args = reencrypt_args(&img, &key, &["--hotzone-size", "64K"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lukskit"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut killed_mid_way = false;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        // Past the first hot zone: the primary header's JSON (read directly, so that the
        // poll is quick) has the requirement and a first data segment of fixed size.
        let past_first = primary_json(&img).is_some_and(|j| {
            j["config"]["requirements"]["mandatory"]
                .as_array()
                .is_some_and(|r| r.iter().any(|v| v == "online-reencrypt-v2"))
                && j["segments"]["0"]["size"]
                    .as_str()
                    .is_some_and(|s| s != "dynamic")
        });
        if past_first {
            // SAFETY: kill of the child we spawned.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            child.wait().unwrap();
            killed_mid_way = lukskit(&["luksDump", &img], b"")
                .stdout
                .contains("online-reencrypt");
            break;
        }
    }
    assert!(killed_mid_way, "the re-encryption ended before kill -9");
    let r = lukskit(&reencrypt_args(&img, &key, &["--resume-only"]), b"");
    assert_eq!(r.code, 0, "resume-only after kill -9: {}", r.stderr);
    assert!(read_direct(&m.dev(), 0, base.len()) == base);
    close_and_wait(&m.name);
    let dump = cryptsetup(&["luksDump", &img], b"")
        .expect("cryptsetup")
        .ok("cryptsetup luksDump")
        .stdout;
    assert!(!dump.contains("online-reencrypt"), "{dump}");
    lukskit(&["open", &img, &m.name, "-d", &key], b"").ok("reopen");
    assert!(read_direct(&m.dev(), 0, base.len()) == base);
    let vk = volume_key_with("cryptsetup", &img, &key, &[]);
    let vk: Vec<u8> = (0..vk.len() / 2)
        .map(|i| u8::from_str_radix(&vk[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    if let Some(p) = python_decrypt("xts", &vk, 4096, 16 * MIB, &img, 0, 512) {
        assert!(p[..] == base[..2 * MIB as usize]);
    }
}

/// `reencrypt --reduce-device-size` (a data shift) of a volume served by a FUSE + loop
/// mapping: lukskit runs that under a kernel mapping or offline only, and refuses it here
/// before it writes anything: the header's bytes and the mapping's data are as before.
#[test]
fn online_reencrypt_with_a_data_shift_of_a_userspace_mapping_refused_untouched() {
    let t = "online_fuse_shift";
    if !capable(t) {
        return;
    }
    let d = tmp();
    let (img, key) = luks2_image(d.path(), 64 * MIB, &[]);
    let m = Mapping::new("online-fuse-shift");
    lukskit(&["open", &img, &m.name, "-d", &key], b"").ok("open");
    let data = pattern(4 * MIB as usize, 11);
    write_direct(&m.dev(), 0, &data).unwrap();
    let header = std::fs::read(&img).unwrap()[..16 * MIB as usize].to_vec();
    let args = reencrypt_args(&img, &key, &["--reduce-device-size", "8M"]);
    let r = lukskit(&args, b"");
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "Online re-encryption with a data shift (--reduce-device-size) of a lukskit \
             userspace mapping is not supported; close it first or use \
             --force-offline-reencrypt."
        ),
        "{}",
        r.stderr
    );
    assert!(std::fs::read(&img).unwrap()[..16 * MIB as usize] == header[..]);
    assert!(read_direct(&m.dev(), 0, data.len()) == data);
    close_and_wait(&m.name);
}
