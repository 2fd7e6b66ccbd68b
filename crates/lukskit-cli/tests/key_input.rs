//! Key input, case by case against real cryptsetup 2.6: for each way of handing over a
//! passphrase (key files with `--keyfile-size`/`--keyfile-offset` including size 0, empty
//! files, `/dev/null`, pipes, lines on standard input, oversized files), both tools run the
//! same command on their own fresh image and must agree on the exit code and the message; when
//! both succeed, real cryptsetup then tries every candidate passphrase on both images, and the
//! two images must open with exactly the same candidates.

mod common;
use common::*;
use std::path::Path;

const FAST: [&str; 5] = [
    "-q",
    "--pbkdf",
    "pbkdf2",
    "--pbkdf-force-iterations",
    "1000",
];

/// Candidate passphrases tried on every image a case produces.
const CANDIDATES: &[&[u8]] = &[
    b"",
    b"secret",
    b"sec",
    b"ret",
    b"cret",
    b"secret\n",
    b"line1",
    b"line2",
    b"old",
    b"new",
];

/// One case: the command (arguments after the tool, with IMG and files by name), the bytes on
/// standard input, and whether a first keyslot with passphrase "old" must exist beforehand.
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    stdin: &'static [u8],
    preformat: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "whole key file",
        args: &["luksFormat", "IMG", "-d", "K"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "keyfile-size 0 is the whole file",
        args: &["luksFormat", "IMG", "-d", "K", "-l", "0"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "keyfile-size 3",
        args: &["luksFormat", "IMG", "-d", "K", "-l", "3"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "keyfile-size beyond the file",
        args: &["luksFormat", "IMG", "-d", "K", "-l", "10"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "keyfile-offset 2",
        args: &["luksFormat", "IMG", "-d", "K", "--keyfile-offset", "2"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "keyfile-offset to the end",
        args: &["luksFormat", "IMG", "-d", "K", "--keyfile-offset", "6"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "keyfile-offset beyond the end",
        args: &["luksFormat", "IMG", "-d", "K", "--keyfile-offset", "7"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "offset and size",
        args: &[
            "luksFormat",
            "IMG",
            "-d",
            "K",
            "--keyfile-offset",
            "3",
            "-l",
            "3",
        ],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "offset and size 0",
        args: &[
            "luksFormat",
            "IMG",
            "-d",
            "K",
            "--keyfile-offset",
            "2",
            "-l",
            "0",
        ],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "empty regular file",
        args: &["luksFormat", "IMG", "-d", "E"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "/dev/null",
        args: &["luksFormat", "IMG", "-d", "/dev/null"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "/dev/null with size 0",
        args: &["luksFormat", "IMG", "-d", "/dev/null", "-l", "0"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "key file with a newline",
        args: &["luksFormat", "IMG", "-d", "N"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "oversized key file",
        args: &["luksFormat", "IMG", "-d", "BIG"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "oversized key file with size",
        args: &["luksFormat", "IMG", "-d", "BIG", "-l", "3"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "positional key file",
        args: &["luksFormat", "IMG", "K"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "positional key file size 0",
        args: &["luksFormat", "IMG", "K", "-l", "0"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "-d - whole input",
        args: &["luksFormat", "IMG", "-d", "-"],
        stdin: b"secret\n",
        preformat: false,
    },
    Case {
        name: "-d - size 0",
        args: &["luksFormat", "IMG", "-d", "-", "-l", "0"],
        stdin: b"secret",
        preformat: false,
    },
    Case {
        name: "-d - size 3",
        args: &["luksFormat", "IMG", "-d", "-", "-l", "3"],
        stdin: b"secret",
        preformat: false,
    },
    Case {
        name: "-d - offset 3",
        args: &["luksFormat", "IMG", "-d", "-", "--keyfile-offset", "3"],
        stdin: b"secret",
        preformat: false,
    },
    Case {
        name: "-d - offset past the end",
        args: &["luksFormat", "IMG", "-d", "-", "--keyfile-offset", "9"],
        stdin: b"secret",
        preformat: false,
    },
    Case {
        name: "-d - empty input",
        args: &["luksFormat", "IMG", "-d", "-"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "-d - short input for size",
        args: &["luksFormat", "IMG", "-d", "-", "-l", "9"],
        stdin: b"secret",
        preformat: false,
    },
    Case {
        name: "stdin line",
        args: &["luksFormat", "IMG"],
        stdin: b"secret\nignored\n",
        preformat: false,
    },
    Case {
        name: "stdin line without newline",
        args: &["luksFormat", "IMG"],
        stdin: b"secret",
        preformat: false,
    },
    Case {
        name: "stdin empty line",
        args: &["luksFormat", "IMG"],
        stdin: b"\n",
        preformat: false,
    },
    Case {
        name: "stdin nothing",
        args: &["luksFormat", "IMG"],
        stdin: b"",
        preformat: false,
    },
    Case {
        name: "addKey new key file size 0",
        args: &[
            "luksAddKey",
            "IMG",
            "-d",
            "OLD",
            "K",
            "--new-keyfile-size",
            "0",
        ],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "addKey new key file size 3",
        args: &[
            "luksAddKey",
            "IMG",
            "-d",
            "OLD",
            "K",
            "--new-keyfile-size",
            "3",
        ],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "addKey --new-keyfile /dev/null",
        args: &[
            "luksAddKey",
            "IMG",
            "-d",
            "OLD",
            "--new-keyfile",
            "/dev/null",
        ],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "addKey new key empty file",
        args: &["luksAddKey", "IMG", "-d", "OLD", "E"],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "addKey old key /dev/null",
        args: &["luksAddKey", "IMG", "-d", "/dev/null", "K"],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "addKey old key size 0",
        args: &["luksAddKey", "IMG", "-d", "OLD", "-l", "0", "K"],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "addKey two stdin lines",
        args: &["luksAddKey", "IMG"],
        stdin: b"old\nline2\n",
        preformat: true,
    },
    Case {
        name: "addKey one stdin line",
        args: &["luksAddKey", "IMG"],
        stdin: b"old\n",
        preformat: true,
    },
    Case {
        name: "addKey empty new line",
        args: &["luksAddKey", "IMG"],
        stdin: b"old\n\n",
        preformat: true,
    },
    Case {
        name: "test-passphrase size 0",
        args: &["open", "--test-passphrase", "IMG", "-d", "OLD", "-l", "0"],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "test-passphrase /dev/null",
        args: &["open", "--test-passphrase", "IMG", "-d", "/dev/null"],
        stdin: b"",
        preformat: true,
    },
    Case {
        name: "test-passphrase empty pipe",
        args: &["open", "--test-passphrase", "IMG"],
        stdin: b"",
        preformat: true,
    },
];

/// The files a case may name: K = "secret", E = empty, N = "secret\n", OLD = "old",
/// BIG = 8 MiB + 1 byte.
fn files(dir: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("K", write_file(dir, "k", b"secret")),
        ("E", write_file(dir, "e", b"")),
        ("N", write_file(dir, "n", b"secret\n")),
        ("OLD", write_file(dir, "old", b"old")),
        (
            "BIG",
            write_file(dir, "big", &vec![b's'; 8 * 1024 * 1024 + 1]),
        ),
    ]
}

fn args_for<'a>(case: &Case, img: &'a str, files: &'a [(&'static str, String)]) -> Vec<&'a str> {
    let mut v: Vec<&str> = case
        .args
        .iter()
        .map(|a| {
            if *a == "IMG" {
                return img;
            }
            files
                .iter()
                .find(|(k, _)| k == a)
                .map_or(*a, |(_, p)| p.as_str())
        })
        .collect();
    if case.args[0] != "open" {
        v.extend_from_slice(&FAST);
    }
    v
}

/// Which candidates real cryptsetup accepts on `img`.
fn opens_with(img: &str, dir: &Path) -> Vec<bool> {
    CANDIDATES
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let kf = write_file(dir, &format!("cand{i}"), c);
            cryptsetup(&["open", "--test-passphrase", "-d", &kf, img], b"")
                .unwrap()
                .code
                == 0
        })
        .collect()
}

fn fresh_image(dir: &Path, name: &str, preformat: bool, old: &str) -> String {
    let img = sparse(dir, name, 20 << 20);
    if preformat {
        let mut a = vec!["luksFormat", img.as_str(), "-d", old];
        a.extend_from_slice(&FAST);
        cryptsetup(&a, b"").unwrap().ok("preformat");
    }
    img
}

#[test]
fn key_input_matches_cryptsetup() {
    if !have_cryptsetup("key input") {
        return;
    }
    let dir = tmp();
    let files = files(dir.path());
    let old = files.iter().find(|(k, _)| *k == "OLD").unwrap().1.clone();
    let mut disagreements = Vec::new();
    for (i, case) in CASES.iter().enumerate() {
        let ours_img = fresh_image(dir.path(), &format!("ours{i}.img"), case.preformat, &old);
        let theirs_img = fresh_image(dir.path(), &format!("theirs{i}.img"), case.preformat, &old);
        let ours = lukskit(&args_for(case, &ours_img, &files), case.stdin);
        let theirs = cryptsetup(&args_for(case, &theirs_img, &files), case.stdin).unwrap();
        // cryptsetup warns that a 20 MiB image has no room for data on activation; lukskit
        // does not print that warning, so it is left out of the comparison.
        let msg = |s: &str| {
            s.lines()
                .filter(|l| !l.contains("too small for activation"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        if ours.code != theirs.code || msg(&ours.stderr) != msg(&theirs.stderr) {
            disagreements.push(format!(
                "{}: lukskit exit {} {:?}, cryptsetup exit {} {:?}",
                case.name,
                ours.code,
                msg(&ours.stderr),
                theirs.code,
                msg(&theirs.stderr)
            ));
            continue;
        }
        if ours.code == 0 && case.args[0] != "open" {
            let (a, b) = (
                opens_with(&ours_img, dir.path()),
                opens_with(&theirs_img, dir.path()),
            );
            if a != b {
                disagreements.push(format!(
                    "{}: passphrases that open lukskit's image {:?}, cryptsetup's {:?} (candidates {:?})",
                    case.name,
                    a,
                    b,
                    CANDIDATES.iter().map(|c| String::from_utf8_lossy(c)).collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} key input cases disagree with cryptsetup:\n{}",
        disagreements.len(),
        CASES.len(),
        disagreements.join("\n")
    );
}

/// `image encrypt` reads its passphrase like luksFormat: `-l 0` means the whole key file (it
/// used to create a keyslot whose passphrase was empty).
#[test]
fn image_encrypt_keyfile_size_zero_is_the_whole_file() {
    if !have_cryptsetup("image encrypt -l 0") {
        return;
    }
    let dir = tmp();
    let files = files(dir.path());
    let k = &files[0].1;
    let plain = write_file(dir.path(), "plain", &[7u8; 4096]);
    let img = dir.path().join("out.img");
    let img = img.to_str().unwrap();
    let mut a = vec!["image", "encrypt", "-d", k, "-l", "0", &plain, img];
    a.extend_from_slice(&FAST);
    lukskit(&a, b"").ok("image encrypt -l 0");
    let opens = opens_with(img, dir.path());
    let expected: Vec<bool> = CANDIDATES.iter().map(|c| *c == b"secret").collect();
    assert_eq!(opens, expected, "only the whole key file opens the image");
}

/// The command line process holds passphrases, so it is not dumpable: another process of the
/// same unprivileged user can neither ptrace it nor read its memory. Observed through
/// /proc/PID, which the kernel gives to root instead of the process's user when the process
/// is not dumpable.
#[test]
fn cli_process_is_not_dumpable_while_it_waits_for_a_passphrase() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::process::{Command, Stdio};
    assert!(
        is_root(),
        "this test runs lukskit as an unprivileged user and needs root to switch to one"
    );
    assert!(
        which("setpriv").is_some(),
        "setpriv (util-linux) is needed to run lukskit as an unprivileged user"
    );
    let dir = tmp();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let img = sparse(dir.path(), "v.img", 20 << 20);
    std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o666)).unwrap();
    // The binary must be reachable by `nobody`: copy it to the world-readable directory.
    let bin = dir.path().join("lukskit");
    std::fs::copy(env!("CARGO_BIN_EXE_lukskit"), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .args(["luksFormat", "-q", &img])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the process runs as nobody and blocks reading its passphrase.
    let proc_dir = format!("/proc/{}", child.id());
    let mut waited = 0;
    loop {
        let status = std::fs::read_to_string(format!("{proc_dir}/status")).unwrap_or_default();
        let wchan = std::fs::read_to_string(format!("{proc_dir}/wchan")).unwrap_or_default();
        if status.lines().any(|l| l.starts_with("Uid:\t65534")) && wchan.contains("pipe_read") {
            break;
        }
        waited += 1;
        assert!(waited < 200, "lukskit never waited for its passphrase");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let owner = std::fs::metadata(format!("{proc_dir}/environ"))
        .unwrap()
        .uid();
    drop(child.stdin.take());
    let _ = child.wait();
    assert_eq!(
        owner, 0,
        "/proc/PID of lukskit running as uid 65534 belongs to uid {owner}: the process is dumpable"
    );
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn which(tool: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(tool))
            .find(|c| c.exists())
    })
}
