//! TrueCrypt/VeraCrypt (cryptsetup's TCRYPT): `tcryptDump`, `open --test-passphrase --type
//! tcrypt` and `open --type tcrypt` against cryptsetup 2.6.1 and tcplay, on the shared
//! TrueCrypt/VeraCrypt images (../shared/testdata/other-formats, see its README: passphrases,
//! key files, PIM, the file systems' UUIDs DEAD-BABE and CAFE-BABE) and on volumes made by
//! `tcplay -c` here.
//!
//! cryptsetup decrypts TCRYPT headers with the kernel's crypto API (AF_ALG) for every cipher
//! but AES-XTS; on a host without it (this one: no algif_skcipher) it answers "Required
//! kernel crypto interface not available." as soon as its table reaches another cipher. The
//! dumps are compared byte for byte wherever cryptsetup can make them; the other images are
//! checked against tcplay (`tcplay -i`) where it reads them, and all through the file system
//! inside (blkid on the mapping).
//!
//! The open tests need root, /dev/fuse and loop devices (`capable`).

mod common;

use common::mapping::*;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const PASS: &[u8] = b"aaaaaaaaaaaa\n";
const HIDDEN_PASS: &[u8] = b"bbbbbbbbbbbb\n";
const NO_AF_ALG: &str = "Required kernel crypto interface not available.";

/// The shared TrueCrypt/VeraCrypt images unpacked into a new temporary directory (None after
/// `skip_or_fail` when the shared test data is absent).
fn images(test: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let d = tmp();
    if !unpack_other_formats(test, "tcrypt-images.tar.xz", d.path()) {
        return None;
    }
    let dir = d.path().join("tcrypt");
    Some((d, dir))
}

/// What an image's name and the README say about it: the hash and first cipher (to limit
/// the tries), and the options its secrets need.
struct Image {
    name: &'static str,
    hash: &'static str,
    cipher: &'static str,
    extra: &'static [&'static str],
}

const IMAGES: &[Image] = &[
    Image {
        name: "tc_1-sha1-cbc-aes",
        hash: "sha1",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "tc_2-ripemd160-cbc-aes-twofish",
        hash: "ripemd160",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "tc_2-ripemd160-lrw-aes",
        hash: "ripemd160",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "tc_3-ripemd160-xts-aes",
        hash: "ripemd160",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "tc_4-sha512-xts-aes",
        hash: "sha512",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "tc_4-sha512-xts-aes-hidden",
        hash: "sha512",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "tc_5-sha512-xts-serpent-twofish-aes",
        hash: "sha512",
        cipher: "serpent",
        extra: &[],
    },
    Image {
        name: "vc_1-sha256-xts-aes",
        hash: "sha256",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "vc_1-sha512-xts-aes",
        hash: "sha512",
        cipher: "aes",
        extra: &[],
    },
    Image {
        name: "vc_1-sha512-xts-camellia",
        hash: "sha512",
        cipher: "camellia",
        extra: &[],
    },
    Image {
        name: "vck_1-sha512-xts-aes",
        hash: "sha512",
        cipher: "aes",
        extra: &["-d", "keyfile1", "-d", "keyfile2"],
    },
    Image {
        name: "vcpim_1-sha256-xts-aes",
        hash: "sha256",
        cipher: "aes",
        extra: &["--veracrypt-pim", "1234"],
    },
    Image {
        name: "sys_vc_1-sha256-xts-aes",
        hash: "sha256",
        cipher: "aes",
        extra: &["--tcrypt-system"],
    },
];

/// Run `args` in `dir` (the images' key files are named relative to it).
fn in_dir(tool: &str, dir: &Path, args: &[&str], stdin: &[u8]) -> Run {
    let exe = if tool == "cryptsetup" {
        cryptsetup_path().expect("cryptsetup")
    } else {
        PathBuf::from(env!("CARGO_BIN_EXE_lukskit"))
    };
    let mut cmd = Command::new(exe);
    cmd.current_dir(dir).args(args);
    run_in(cmd, stdin)
}

fn run_in(mut cmd: Command, stdin: &[u8]) -> Run {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let o = child.wait_with_output().unwrap();
    Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The value of `Key:\tvalue` lines of a dump.
fn field<'a>(dump: &'a str, key: &str) -> Option<&'a str> {
    dump.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(|v| v.trim_start_matches(':').trim())
}

#[test]
fn shared_images_dump_as_cryptsetup_or_as_named() {
    let t = "tcrypt_dump_shared";
    if !have_cryptsetup(t) {
        return;
    }
    let Some((_d, dir)) = images(t) else { return };
    let mut byte_for_byte = 0;
    for img in IMAGES {
        let mut args = vec!["tcryptDump", img.name, "-h", img.hash, "-c", img.cipher];
        args.extend_from_slice(img.extra);
        let ours = in_dir("lukskit", &dir, &args, PASS);
        let theirs = in_dir("cryptsetup", &dir, &args, PASS);
        if theirs.stderr.contains(NO_AF_ALG) {
            // cryptsetup cannot decrypt it on this host: the dump must say what the README
            // and the name say (hash, chain with the named cipher, mode).
            assert_eq!(ours.code, 0, "{}: {}", img.name, ours.stderr);
            assert_eq!(
                field(&ours.stdout, "PBKDF2 hash"),
                Some(img.hash),
                "{}",
                img.name
            );
            let chain = field(&ours.stdout, "Cipher chain").unwrap();
            let named: Vec<&str> = img
                .name
                .split('-')
                .skip(3)
                .filter(|w| *w != "hidden")
                .collect();
            let mut chain_words: Vec<&str> = chain.split('-').collect();
            let mut named_sorted = named.clone();
            chain_words.sort_unstable();
            named_sorted.sort_unstable();
            assert_eq!(chain_words, named_sorted, "{}: chain {chain}", img.name);
            let mode = field(&ours.stdout, "Cipher mode").unwrap();
            let named_mode = img.name.split('-').nth(2).unwrap();
            assert!(mode.starts_with(named_mode), "{}: mode {mode}", img.name);
            let magic = if img.name.starts_with("tc_") {
                "TCRYPT"
            } else {
                "VERACRYPT"
            };
            assert!(
                ours.stdout
                    .starts_with(&format!("{magic} header information for {}\n", img.name)),
                "{}",
                ours.stdout
            );
            continue;
        }
        assert_eq!(
            (ours.code, &ours.stdout, &ours.stderr),
            (theirs.code, &theirs.stdout, &theirs.stderr),
            "{}",
            img.name
        );
        byte_for_byte += 1;
    }
    // On this host cryptsetup dumps the AES images whose first tried cipher decrypts (tc_3,
    // tc_4, tc_4-hidden's outer volume, vc_1-sha256, vcpim, sys_vc): never none of them.
    assert!(
        byte_for_byte >= 6,
        "only {byte_for_byte} dumps compared byte for byte"
    );
}

#[test]
fn hidden_volume_volume_key_and_errors_as_cryptsetup() {
    let t = "tcrypt_hidden_vk_errors";
    if !have_cryptsetup(t) {
        return;
    }
    let Some((_d, dir)) = images(t) else { return };
    let same = |args: &[&str], stdin: &[u8]| {
        let ours = in_dir("lukskit", &dir, args, stdin);
        let theirs = in_dir("cryptsetup", &dir, args, stdin);
        assert_eq!(
            (ours.code, &ours.stdout, &ours.stderr),
            (theirs.code, &theirs.stdout, &theirs.stderr),
            "{args:?}"
        );
        ours
    };
    let hidden = "tc_4-sha512-xts-aes-hidden";
    let r = same(
        &[
            "tcryptDump",
            "--tcrypt-hidden",
            hidden,
            "-h",
            "sha512",
            "-c",
            "aes",
        ],
        HIDDEN_PASS,
    );
    assert_eq!(
        field(&r.stdout, "MK offset"),
        Some("157696"),
        "{}",
        r.stdout
    );
    // --dump-volume-key (no terminal: no question) and with --batch-mode.
    for batch in [false, true] {
        let mut args = vec![
            "tcryptDump",
            "--dump-volume-key",
            "tc_4-sha512-xts-aes",
            "-h",
            "sha512",
            "-c",
            "aes",
        ];
        if batch {
            args.push("--batch-mode");
        }
        let r = same(&args, PASS);
        assert!(r.stdout.contains("MK dump:\t"), "{}", r.stdout);
    }
    let r = same(
        &[
            "tcryptDump",
            "--tcrypt-hidden",
            "--dump-volume-key",
            hidden,
            "-h",
            "sha512",
            "-c",
            "aes",
        ],
        HIDDEN_PASS,
    );
    assert!(r.stdout.contains("Payload offset:\t308"), "{}", r.stdout);
    // A passphrase longer than TrueCrypt's 64 bytes (checked before any decryption).
    let long = [vec![b'a'; 65], b"\n".to_vec()].concat();
    let r = same(
        &["tcryptDump", "--disable-veracrypt", "tc_4-sha512-xts-aes"],
        &long,
    );
    assert_eq!(r.code, 2);
    let r = same(
        &[
            "open",
            "--test-passphrase",
            "--type",
            "tcrypt",
            "--disable-veracrypt",
            "tc_4-sha512-xts-aes",
        ],
        &long,
    );
    assert_eq!(r.code, 2);
    // A device too small for the header (cryptsetup: exit 1, no message), and a missing one.
    std::fs::write(dir.join("small.img"), [0u8; 100]).unwrap();
    for args in [
        &["tcryptDump", "small.img"][..],
        &["tcryptDump", "--tcrypt-hidden", "small.img"][..],
        &["open", "--test-passphrase", "--type", "tcrypt", "small.img"][..],
        &["tcryptDump", "missing.img"][..],
    ] {
        assert_ne!(same(args, PASS).code, 0, "{args:?}");
    }
    // The backup headers near the end of the device.
    same(
        &[
            "tcryptDump",
            "--tcrypt-backup",
            "tc_4-sha512-xts-aes",
            "-h",
            "sha512",
            "-c",
            "aes",
        ],
        PASS,
    );
    let r = same(
        &[
            "tcryptDump",
            "--tcrypt-backup",
            "--tcrypt-hidden",
            hidden,
            "-h",
            "sha512",
            "-c",
            "aes",
        ],
        HIDDEN_PASS,
    );
    assert_eq!(
        field(&r.stdout, "MK offset"),
        Some("157696"),
        "{}",
        r.stdout
    );
    // --veracrypt-query-pim: the PIM as a second line, refused as cryptsetup refuses it.
    for pim in ["", "0", "abc", "4294967296", "-1"] {
        let stdin = format!("aaaaaaaaaaaa\n{pim}\n");
        let r = same(
            &[
                "tcryptDump",
                "vcpim_1-sha256-xts-aes",
                "-h",
                "sha256",
                "--veracrypt-query-pim",
            ],
            stdin.as_bytes(),
        );
        assert_eq!(r.code, 1, "{pim:?}");
    }
    // test-passphrase: right one.
    same(
        &[
            "open",
            "--test-passphrase",
            "--type",
            "tcrypt",
            "tc_4-sha512-xts-aes",
            "-h",
            "sha512",
            "-c",
            "aes",
        ],
        PASS,
    );
    // A wrong passphrase: cryptsetup's answer where it can give one.
    for args in [
        &[
            "tcryptDump",
            "tc_4-sha512-xts-aes",
            "-h",
            "sha512",
            "--disable-veracrypt",
        ][..],
        &[
            "open",
            "--test-passphrase",
            "--type",
            "tcrypt",
            "tc_4-sha512-xts-aes",
            "-h",
            "sha512",
        ][..],
    ] {
        let ours = in_dir("lukskit", &dir, args, b"wrong\n");
        assert_eq!(
            (ours.code, ours.stderr.as_str()),
            (2, "No device header detected with this passphrase.\n"),
            "{args:?}"
        );
        let theirs = in_dir("cryptsetup", &dir, args, b"wrong\n");
        if !theirs.stderr.contains(NO_AF_ALG) {
            assert_eq!(
                (ours.code, &ours.stderr),
                (theirs.code, &theirs.stderr),
                "{args:?}"
            );
        }
    }
}

#[test]
fn key_files_and_pim_must_be_the_right_ones() {
    let t = "tcrypt_keyfiles_pim";
    let Some((_d, dir)) = images(t) else { return };
    let test = |args: &[&str]| {
        let mut a = vec!["open", "--test-passphrase", "--type", "tcrypt"];
        a.extend_from_slice(args);
        in_dir("lukskit", &dir, &a, PASS).code
    };
    let vck = "vck_1-sha512-xts-aes";
    assert_eq!(
        test(&[vck, "-h", "sha512", "-d", "keyfile1", "-d", "keyfile2"]),
        0
    );
    // Each file is added into the pool on its own: their order does not matter, every file
    // does.
    assert_eq!(
        test(&[vck, "-h", "sha512", "-d", "keyfile2", "-d", "keyfile1"]),
        0
    );
    assert_eq!(test(&[vck, "-h", "sha512", "-d", "keyfile1"]), 2);
    let pim = "vcpim_1-sha256-xts-aes";
    assert_eq!(test(&[pim, "-h", "sha256", "--veracrypt-pim", "1234"]), 0);
    assert_eq!(test(&[pim, "-h", "sha256", "--veracrypt-pim", "1233"]), 2);
    // VeraCrypt disabled: its VERA header is not found.
    assert_eq!(
        test(&["vc_1-sha512-xts-aes", "-h", "sha512", "--disable-veracrypt"]),
        2
    );
    let mut a = vec![
        "open",
        "--test-passphrase",
        "--type",
        "tcrypt",
        pim,
        "-h",
        "sha256",
    ];
    a.push("--veracrypt-query-pim");
    assert_eq!(in_dir("lukskit", &dir, &a, b"aaaaaaaaaaaa\n1234\n").code, 0);
}

#[test]
fn shared_images_open_to_the_readme_file_systems() {
    let t = "tcrypt_open_shared";
    if !capable(t) || !have_tool(t, "blkid") {
        return;
    }
    let Some((_d, dir)) = images(t) else { return };
    // (image, pass, extra options, UUID of the file system inside)
    let cases: &[(&str, &[u8], &[&str], &str)] = &[
        // TrueCrypt 1's aes-cbc-tcw: lukskit's tcw IV and whitening read what TrueCrypt wrote.
        ("tc_1-sha1-cbc-aes", PASS, &["-h", "sha1"], "DEAD-BABE"),
        (
            "tc_2-ripemd160-lrw-aes",
            PASS,
            &["-h", "ripemd160"],
            "DEAD-BABE",
        ),
        (
            "tc_3-ripemd160-xts-aes",
            PASS,
            &["-h", "ripemd160"],
            "DEAD-BABE",
        ),
        (
            "tc_4-sha512-xts-aes-hidden",
            PASS,
            &["-h", "sha512"],
            "DEAD-BABE",
        ),
        (
            "tc_4-sha512-xts-aes-hidden",
            HIDDEN_PASS,
            &["-h", "sha512", "--tcrypt-hidden"],
            "CAFE-BABE",
        ),
        (
            "tc_5-sha512-xts-serpent-twofish-aes",
            PASS,
            &["-h", "sha512", "--disable-veracrypt"],
            "DEAD-BABE",
        ),
        (
            "vc_1-sha512-xts-camellia",
            PASS,
            &["-h", "sha512", "-c", "camellia"],
            "DEAD-BABE",
        ),
        (
            "vck_1-sha512-xts-aes",
            PASS,
            &["-h", "sha512", "-d", "keyfile1", "-d", "keyfile2"],
            "DEAD-BABE",
        ),
        // System encryption: the whole disk (with its boot loader) from the data offset on.
        (
            "sys_vc_1-sha256-xts-aes",
            PASS,
            &["-h", "sha256", "--tcrypt-system"],
            "DEAD-BABE",
        ),
    ];
    for (i, (img, pass, extra, uuid)) in cases.iter().enumerate() {
        let m = Mapping::new(&format!("tc{i}"));
        let mut args = vec!["open", "--type", "tcrypt", img, &m.name];
        args.extend_from_slice(extra);
        let r = in_dir("lukskit", &dir, &args, pass);
        assert_eq!(r.code, 0, "{img}: {}", r.stderr);
        assert_eq!(blkid_uuid(&m.dev()), *uuid, "{img}");
        // `image decrypt` with the same options writes what the mapping reads (a cascade's
        // tables applied in turn, as the stacked mappings do).
        let mapped = std::fs::read(m.dev()).unwrap();
        let out = dir.join("plain.img");
        let out_s = out.to_string_lossy().into_owned();
        let mut dargs = vec!["image", "decrypt", "--type", "tcrypt"];
        dargs.extend_from_slice(extra);
        dargs.extend([*img, out_s.as_str()]);
        let r = in_dir("lukskit", &dir, &dargs, pass);
        assert_eq!(r.code, 0, "image decrypt {img}: {}", r.stderr);
        assert!(
            std::fs::read(&out).unwrap() == mapped,
            "image decrypt {img}"
        );
        std::fs::remove_file(&out).unwrap();
        let st = lukskit(&["status", &m.name], b"");
        assert!(st.stdout.contains("type:    TCRYPT"), "{}", st.stdout);
        lukskit(&["close", &m.name], b"").ok("close");
        // A cascade's lower layers are gone with it.
        for layer in 1..=2 {
            assert!(
                !Path::new(&format!("/dev/mapper/{}_{layer}", m.name)).exists(),
                "{img}"
            );
        }
    }
    // The legacy CBC modes are not mapped (cryptsetup: no kernel support for cbci-tcrypt).
    let m = Mapping::new("tccbci");
    let r = in_dir(
        "lukskit",
        &dir,
        &[
            "open",
            "--type",
            "tcrypt",
            "tc_2-ripemd160-cbc-aes-twofish",
            &m.name,
            "-h",
            "ripemd160",
        ],
        PASS,
    );
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            1,
            "Kernel does not support activation for this TCRYPT legacy mode.\n"
        )
    );
}

/// tcplay asks on a terminal: this drives it through a pseudo-terminal, answering its
/// passphrase prompts (the hidden volume's after "hidden" was asked for), its question and
/// the hidden volume's size. A passphrase is typed only once tcplay has turned the echo off
/// (it does so with TCSAFLUSH, which drops what was typed ahead: under load that left tcplay
/// waiting for an answer already given, and the test hung); a tcplay that stays silent for
/// 60 s is killed, so the test fails with what it printed instead of hanging.
const DRIVER: &str = r#"
import os, pty, sys, select, time, termios, signal
pw, hpw, hsize = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3].encode()
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[4], sys.argv[4:])
out = b""; pending = b""
while True:
    r, _, _ = select.select([fd], [], [], 60)
    if not r:
        os.kill(pid, signal.SIGKILL)
        out += b"\n[driver: no output for 60 s, tcplay killed]\n"
        break
    try:
        data = os.read(fd, 1024)
    except OSError:
        break
    if not data:
        break
    out += data; pending += data
    tail = pending.rstrip()
    answer = None
    if b"assphrase" in pending and tail.endswith(b":"):
        answer = hpw if b"hidden" in out.lower() else pw
    elif b"(y/n)" in pending:
        answer = b"y"
    elif b"size" in pending.lower() and tail.endswith(b":"):
        answer = hsize
    if answer is not None:
        if answer in (pw, hpw):
            deadline = time.time() + 30
            while termios.tcgetattr(fd)[3] & termios.ECHO and time.time() < deadline:
                time.sleep(0.02)
        time.sleep(0.05)
        os.write(fd, answer + b"\n")
        pending = b""
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// `tcplay ARGS` on a pseudo-terminal (passphrase `pw`, hidden volume's `hpw`).
fn tcplay(pw: &str, hpw: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new("python3");
    cmd.args(["-c", DRIVER, pw, hpw, "1M", "tcplay"]).args(args);
    run_in(cmd, b"")
}

/// A loop device over `img`, detached when dropped.
struct Loop(String);

impl Loop {
    fn new(img: &str) -> Loop {
        Loop(sh(&format!("losetup -f --show {img}")).trim().to_string())
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

/// tcplay's `-i` fields.
fn tcplay_info(dev: &str, pw: &str, extra: &[&str]) -> Vec<(String, String)> {
    let mut args = vec!["-i", "-d", dev];
    args.extend_from_slice(extra);
    let r = tcplay(pw, pw, &args);
    assert_eq!(r.code, 0, "tcplay -i: {}", r.stdout);
    r.stdout
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn info<'a>(i: &'a [(String, String)], k: &str) -> &'a str {
    i.iter()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("{k} in {i:?}"))
}

/// tcplay's chain (`AES-256-XTS,TWOFISH-256-XTS`) in cryptsetup's words (`aes-twofish`).
fn chain_name(tcplay_cipher: &str) -> String {
    tcplay_cipher
        .split(',')
        .map(|c| c.split('-').next().unwrap().to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("-")
}

/// A volume to make with tcplay: hash, cipher chain, with a key file, the hidden volume's
/// hash and chain.
type TcplayCase = (
    &'static str,
    &'static str,
    bool,
    Option<(&'static str, &'static str)>,
);

#[test]
fn tcplay_volumes_dump_and_open() {
    let t = "tcrypt_tcplay";
    if !capable(t)
        || !have_tool(t, "tcplay")
        || !have_tool(t, "python3")
        || !have_tool(t, "mkfs.vfat")
    {
        return;
    }
    let d = tmp();
    // (hash, cipher chain, key file, hidden hash and chain)
    let cases: &[TcplayCase] = &[
        ("SHA512", "SERPENT-256-XTS", false, None),
        (
            "RIPEMD160",
            "AES-256-XTS,TWOFISH-256-XTS,SERPENT-256-XTS",
            false,
            Some(("whirlpool", "TWOFISH-256-XTS")),
        ),
        ("whirlpool", "TWOFISH-256-XTS,AES-256-XTS", true, None),
        (
            "SHA512",
            "AES-256-XTS",
            true,
            Some(("SHA512", "SERPENT-256-XTS,TWOFISH-256-XTS")),
        ),
    ];
    let keyfile = write_file(d.path(), "keyfile", &pattern(300, 7));
    for (i, (hash, chain, with_key, hidden)) in cases.iter().enumerate() {
        let img = sparse(d.path(), &format!("v{i}.img"), 4 << 20);
        let lo = Loop::new(&img);
        let mut args = vec!["-c", "-d", &lo.0, "-a", hash, "-b", chain, "-z", "-w"];
        if *with_key {
            args.extend_from_slice(&["-k", &keyfile]);
        }
        if let Some((h, c)) = hidden {
            args.extend_from_slice(&["-g", "-x", h, "-y", c]);
            if *with_key {
                args.extend_from_slice(&["-f", &keyfile]);
            }
        }
        let r = tcplay("outer pass", "hidden pass", &args);
        assert_eq!(r.code, 0, "tcplay -c: {}", r.stdout);
        let keys: Vec<&str> = if *with_key {
            vec!["-k", &keyfile]
        } else {
            vec![]
        };
        let mut volumes = vec![("outer pass", false, *hash, *chain)];
        if let Some((h, c)) = hidden {
            volumes.push(("hidden pass", true, *h, *c));
        }
        for (pw, is_hidden, hash, chain) in volumes {
            let ti = tcplay_info(&lo.0, pw, &keys);
            assert_eq!(info(&ti, "Cipher"), chain);
            let mut args = vec!["tcryptDump", &lo.0, "--disable-veracrypt", "-h"];
            let hash_lc = hash.to_ascii_lowercase();
            args.push(&hash_lc);
            if is_hidden {
                args.push("--tcrypt-hidden");
            }
            if *with_key {
                args.extend_from_slice(&["-d", &keyfile]);
            }
            let stdin = format!("{pw}\n");
            let dump = lukskit(&args, stdin.as_bytes()).ok("tcryptDump");
            assert_eq!(field(&dump.stdout, "PBKDF2 hash"), Some(hash_lc.as_str()));
            assert_eq!(
                field(&dump.stdout, "Cipher chain"),
                Some(chain_name(chain).as_str())
            );
            assert_eq!(
                field(&dump.stdout, "MK bits"),
                Some(info(&ti, "Key Length").trim_end_matches(" bits"))
            );
            args.extend_from_slice(&["--dump-volume-key", "--batch-mode"]);
            let vk = lukskit(&args, stdin.as_bytes()).ok("tcryptDump --dump-volume-key");
            let offset = field(&vk.stdout, "Payload offset").unwrap();
            assert_eq!(format!("{offset} sectors"), info(&ti, "Block offset"));
            // Where cryptsetup reads it (AES-XTS first in its table), the same text.
            if chain == "AES-256-XTS" {
                let mut cargs = args.clone();
                cargs.extend_from_slice(&["-c", "aes"]);
                let theirs = cryptsetup(&cargs, stdin.as_bytes()).unwrap();
                let ours = lukskit(&cargs, stdin.as_bytes());
                assert_eq!((ours.code, ours.stdout), (theirs.code, theirs.stdout));
            }
            // Data: a file system made through lukskit is there after closing and
            // reopening, at the size tcplay gives.
            let m = Mapping::new(&format!("tp{i}{}", u8::from(is_hidden)));
            let mut open = vec![
                "open",
                "--type",
                "tcrypt",
                "--disable-veracrypt",
                "-h",
                &hash_lc,
                &lo.0,
                &m.name,
            ];
            if is_hidden {
                open.push("--tcrypt-hidden");
            }
            if *with_key {
                open.extend_from_slice(&["-d", &keyfile]);
            }
            lukskit(&open, stdin.as_bytes()).ok("open");
            let size: u64 = sh(&format!("blockdev --getsz {}", m.dev()))
                .trim()
                .parse()
                .unwrap();
            assert_eq!(format!("{size} sectors"), info(&ti, "Volume size"));
            let serial = format!("{:08X}", 0x1234_0000 + i * 2 + usize::from(is_hidden));
            sh(&format!("mkfs.vfat -i {serial} {} >/dev/null", m.dev()));
            lukskit(&["close", &m.name], b"").ok("close");
            lukskit(&open, stdin.as_bytes()).ok("reopen");
            assert_eq!(
                blkid_uuid(&m.dev()),
                format!("{}-{}", &serial[..4], &serial[4..])
            );
            lukskit(&["close", &m.name], b"").ok("close");
        }
        // The outer volume's file system did not overwrite the hidden header (mkfs.vfat
        // wrote its first sectors only): tcplay still reads the hidden volume.
        if hidden.is_some() {
            tcplay_info(&lo.0, "hidden pass", &keys);
        }
    }
}
