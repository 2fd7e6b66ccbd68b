//! Small parity gaps with cryptsetup 2.6.1, each compared with the installed real cryptsetup
//! (or, for discards, with what dm-crypt does): luksHeaderRestore of another volume's backup,
//! Ctrl-C (SIGINT) at a passphrase prompt or while a passphrase is piped in, and discards on
//! a mapping opened without `--allow-discards`.

mod common;
use common::mapping::{capable, have_tool, sh, Mapping};
use common::*;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FAST: &str = "--pbkdf pbkdf2 --pbkdf-force-iterations 1000";

/// The two tools, each run in a directory of its own (`dir/cryptsetup`, `dir/lukskit`) on
/// files of the same names, so that their output compares as it is.
fn tools() -> [(&'static str, String); 2] {
    [
        (
            "cryptsetup",
            cryptsetup_path().unwrap().display().to_string(),
        ),
        ("lukskit", env!("CARGO_BIN_EXE_lukskit").to_string()),
    ]
}

/// Run `tool` with `args` (a command line, split at spaces) in `cwd`, feeding `stdin`.
fn run_in(cwd: &Path, tool: &str, args: &str, stdin: &[u8]) -> Run {
    let mut c = Command::new(tool);
    c.args(args.split(' ')).current_dir(cwd);
    run(c, stdin, &[])
}

/// Make `dir/TOOL/` for each tool with `setup` (a shell command line run there by real
/// cryptsetup's shell: the same files for both).
fn dirs(dir: &Path, setup: &str) -> Vec<std::path::PathBuf> {
    ["cryptsetup", "lukskit"]
        .iter()
        .map(|t| {
            let d = dir.join(t);
            std::fs::create_dir_all(&d).unwrap();
            sh(&format!("cd {} && {setup}", d.display()));
            d
        })
        .collect()
}

/// A pseudo-terminal session: the program is started on a new pseudo-terminal (python3's
/// `pty`), each item of `typed` is written once the program waits (its output ends with
/// ": "), then its exit and whether the terminal echoes again are reported. The transcript
/// comes after the line `status: exit N` (or `signal N`) and `echo: True|False`.
const PTY: &str = r#"
import os, pty, sys, time, select, termios
cwd, typed, args = sys.argv[1], sys.argv[2].encode().split(b','), sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.chdir(cwd)
    os.execvp(args[0], args)
out = b''
def read(until):
    global out
    end = time.time() + 20
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                d = os.read(fd, 4096)
            except OSError:
                return False
            if not d:
                return False
            out += d
        elif until and out.endswith(b': '):
            return True
    return True
for t in typed:
    if not read(True):
        break
    time.sleep(0.3)
    os.write(fd, t.replace(b'^C', b'\x03').replace(b'^M', b'\n'))
    time.sleep(0.3)
read(False)
echo = bool(termios.tcgetattr(fd)[3] & termios.ECHO)
# A program still waiting for input after 60 s is killed: the test then fails on its
# status instead of hanging.
end = time.time() + 60
done, st = os.waitpid(pid, os.WNOHANG)
while done == 0 and time.time() < end:
    time.sleep(0.1)
    done, st = os.waitpid(pid, os.WNOHANG)
if done == 0:
    os.kill(pid, 9)
    _, st = os.waitpid(pid, 0)
print('status:', 'exit %d' % os.WEXITSTATUS(st) if os.WIFEXITED(st) else 'signal %d' % os.WTERMSIG(st))
print('echo:', echo)
sys.stdout.write(out.decode(errors='replace').replace('\r', ''))
"#;

/// [`PTY`]: run `tool args` in `cwd` on a pseudo-terminal, typing `typed` (items separated
/// by commas; `^C` is Ctrl-C, `^M` Enter).
fn on_pty(cwd: &Path, tool: &str, args: &str, typed: &str) -> String {
    let mut c = Command::new("python3");
    c.args(["-c", PTY, cwd.to_str().unwrap(), typed, tool])
        .args(args.split(' '));
    let r = run(c, b"", &[]);
    assert_eq!(r.code, 0, "python3 pty: {}", r.stderr);
    r.stdout
}

fn have_python(test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import pty, termios"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip_or_fail(test, "python3 is not installed (apt-get install python3)");
    }
    ok
}

/// Ctrl-C typed at a passphrase prompt: cryptsetup catches SIGINT, restores the terminal
/// (echo on) and ends with "Error reading passphrase from terminal." and exit code 1;
/// lukskit used to die by the signal with echo left off. At a YES question both end
/// without a word, exit code 1, nothing written.
#[test]
fn ctrl_c_at_a_prompt_as_cryptsetup() {
    const T: &str = "ctrl_c_at_a_prompt";
    if !have_cryptsetup(T) || !have_python(T) {
        return;
    }
    let dir = tmp();
    let ds = dirs(
        dir.path(),
        &format!(
            "truncate -s 20M img && printf secret > key && {} luksFormat -q {FAST} img key",
            cryptsetup_path().unwrap().display()
        ),
    );
    let before = std::fs::read(ds[1].join("img")).unwrap();
    for (args, typed) in [
        ("open --test-passphrase img", "par^C"),
        ("open --test-passphrase -v img", "par^C"),
        ("open --tries 2 --test-passphrase img", "wrong^M,par^C"),
        ("luksAddKey img", "^C"),
        ("luksAddKey img", "secret^M,new^C"),
        ("luksChangeKey img", "par^C"),
        (&format!("luksFormat {FAST} img") as &str, "YE^C"),
        (&format!("luksFormat {FAST} img"), "YES^M,new^M,ne^C"),
    ] {
        let [ours, theirs] = [&ds[1], &ds[0]].map(|d| {
            let tool = if d.ends_with("lukskit") {
                env!("CARGO_BIN_EXE_lukskit").to_string()
            } else {
                cryptsetup_path().unwrap().display().to_string()
            };
            on_pty(d, &tool, args, typed)
        });
        assert_eq!(ours, theirs, "{args} typing {typed}");
        assert!(
            theirs.starts_with("status: exit 1\necho: True\n"),
            "{args}: {theirs}"
        );
    }
    assert!(
        std::fs::read(ds[1].join("img")).unwrap() == before,
        "an interrupted command changed the image"
    );
}

/// Start `tool args` in `cwd` with its standard input a pipe, type `first`, send SIGINT once
/// it waits for the rest of the line, then type `rest` and collect what it did: its exit
/// code, standard output and error. Also whether it was still running after the signal.
fn sigint_while_piped(cwd: &Path, tool: &str, args: &str, first: &[u8], rest: &[u8]) -> String {
    let mut child = Command::new(tool)
        .args(args.split(' '))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(first).unwrap();
    stdin.flush().unwrap();
    // Wait until it blocks reading (x86-64 and aarch64 read(2) are syscalls 0 and 63) the
    // rest of the line.
    let start = Instant::now();
    let mut stable = 0;
    while stable < 5 && start.elapsed() < Duration::from_secs(20) {
        let sc = std::fs::read_to_string(format!("/proc/{pid}/syscall")).unwrap_or_default();
        let nr = sc.split(' ').next().unwrap_or_default();
        stable = if nr == "0" || nr == "63" {
            stable + 1
        } else {
            0
        };
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill with the pid of our own child, which has not been waited for.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(500));
    let alive = child.try_wait().unwrap().is_none();
    let _ = stdin.write_all(rest);
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    format!(
        "alive after SIGINT: {alive}\nstatus: {:?} signal {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        std::os::unix::process::ExitStatusExt::signal(&o.status),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// SIGINT while a passphrase is read from a pipe: cryptsetup reads the line to its end and
/// goes on, then fails with exit code 1 where the command would have succeeded (its
/// `check_signal`); luksAddKey and luksFormat stop before they add a keyslot. lukskit used
/// to die by the signal. One difference, on purpose: cryptsetup's luksFormat has written the
/// new header (without a keyslot) when it stops, lukskit's leaves the device untouched.
#[test]
fn sigint_while_a_passphrase_is_piped_as_cryptsetup() {
    const T: &str = "sigint_while_piped";
    if !have_cryptsetup(T) {
        return;
    }
    let dir = tmp();
    let ds = dirs(
        dir.path(),
        &format!(
            "truncate -s 20M img blank && printf secret > key && {} luksFormat -q {FAST} img key",
            cryptsetup_path().unwrap().display()
        ),
    );
    for (args, first, rest) in [
        ("open --test-passphrase img", &b"sec"[..], &b"ret\n"[..]),
        ("open --test-passphrase -v img", b"sec", b"ret\n"),
        ("open --test-passphrase -v img", b"sec", b"WRONG\n"),
        (
            &format!("luksAddKey -q -v {FAST} img key") as &str,
            b"sec",
            b"ret\n",
        ),
        (&format!("luksFormat -q -v {FAST} blank"), b"sec", b"ret\n"),
    ] {
        let [theirs, ours] = tools().map(|(name, tool)| {
            let d = &ds[usize::from(name == "lukskit")];
            let r = sigint_while_piped(d, &tool, args, first, rest);
            let slots = active_slots(d.join("img").to_str().unwrap());
            format!("{r}\nkeyslots of img: {slots:?}")
        });
        assert_eq!(ours, theirs, "{args}");
        assert!(
            theirs.starts_with("alive after SIGINT: true\nstatus: Some("),
            "{theirs}"
        );
    }
    // The interrupted luksFormat: cryptsetup's header has no keyslot; lukskit wrote nothing.
    let blank = |d: &Path| d.join("blank").to_str().unwrap().to_string();
    assert!(active_slots(&blank(&ds[0])).is_empty());
    assert_eq!(
        cryptsetup(&["isLuks", &blank(&ds[0])], b"").unwrap().code,
        0,
        "cryptsetup's interrupted luksFormat"
    );
    assert!(
        std::fs::read(blank(&ds[1]))
            .unwrap()
            .iter()
            .all(|&b| b == 0),
        "lukskit's interrupted luksFormat wrote to the device"
    );
}

/// luksHeaderRestore of a backup over a header of the same version (LUKS1, LUKS2): with
/// another UUID cryptsetup warns in its question ("WARNING: real device header has different
/// UUID than backup!"); where the layout differs (data offset; LUKS2 header size; LUKS1 key
/// size) it refuses before asking, in its own words, exit code 1. `-q` restores without a
/// question.
#[test]
fn header_restore_of_another_volume_as_cryptsetup() {
    const T: &str = "header_restore_of_another_volume";
    if !have_cryptsetup(T) || !have_python(T) {
        return;
    }
    let dir = tmp();
    let cs = cryptsetup_path().unwrap().display().to_string();
    for version in ["luks1", "luks2"] {
        let setup = format!(
            "printf secret > key && truncate -s 20M a b c && \
             {cs} luksFormat -q {FAST} --type {version} a key && \
             {cs} luksFormat -q {FAST} --type {version} b key && \
             {cs} luksFormat -q {FAST} --type {version} {} c key && \
             {cs} luksHeaderBackup a --header-backup-file a.bak",
            // Another layout: a LUKS1 key size, a LUKS2 data offset of its own.
            if version == "luks1" {
                "-s 256"
            } else {
                "--offset 8192"
            }
        );
        let ds = dirs(&dir.path().join(version), &setup);
        for (args, typed) in [
            // Another UUID, the same layout: the warning, not answered YES.
            ("luksHeaderRestore b --header-backup-file a.bak", "NO^M"),
            // Another layout: refused before the question.
            ("luksHeaderRestore c --header-backup-file a.bak", "NO^M"),
            ("luksHeaderRestore -q c --header-backup-file a.bak", ""),
        ] {
            let [theirs, ours] = tools().map(|(name, tool)| {
                on_pty(&ds[usize::from(name == "lukskit")], &tool, args, typed)
            });
            assert_eq!(ours, theirs, "{version}: {args}");
        }
        let [theirs, ours] = tools().map(|(name, tool)| {
            let d = &ds[usize::from(name == "lukskit")];
            let r = run_in(
                d,
                &tool,
                "luksHeaderRestore -q b --header-backup-file a.bak",
                b"",
            );
            let uuid = |f: &str| {
                cryptsetup(&["luksUUID", d.join(f).to_str().unwrap()], b"")
                    .unwrap()
                    .stdout
            };
            assert_eq!(uuid("b"), uuid("a"), "{version}: {name} restored b");
            format!("{} {} {}", r.code, r.stdout, r.stderr)
        });
        assert_eq!(ours, theirs, "{version}: -q restore");
        let b = on_pty(
            &ds[1],
            env!("CARGO_BIN_EXE_lukskit"),
            "luksHeaderRestore b --header-backup-file a.bak",
            "NO^M",
        );
        assert!(
            b.contains("already contains") && !b.contains("different UUID"),
            "{version}: the same UUID now: {b}"
        );
        if version == "luks2" {
            // A header with a requirement cryptsetup does not know: a second warning.
            for d in &ds {
                let img = d.join("b");
                rewrite_luks2_json(img.to_str().unwrap(), |j| {
                    j["config"]["requirements"] =
                        serde_json::json!({"mandatory": ["lukskit-test-unknown"]});
                });
            }
            let args = "luksHeaderRestore b --header-backup-file a.bak";
            let [theirs, ours] = tools().map(|(name, tool)| {
                on_pty(&ds[usize::from(name == "lukskit")], &tool, args, "NO^M")
            });
            assert!(theirs.contains("unknown LUKS2 requirements"), "{theirs}");
            assert_eq!(ours, theirs, "{version}: {args}, unknown requirement");
        }
    }
}

/// A mapping opened without `--allow-discards` takes no discards: its loop device
/// advertises none (`discard_max_bytes` 0), so `fstrim` fails with "the discard operation
/// is not supported" — as on dm-crypt without `allow_discards`, whose table sets
/// `max_discard_sectors` to 0 (drivers/md/dm-crypt.c, `crypt_io_hints`/`discard` only with
/// the flag), which this kernel without device-mapper cannot show directly. With
/// `--allow-discards` the loop device advertises them and `fstrim` passes them down: the
/// freed blocks become holes in the image.
#[test]
fn discards_only_with_allow_discards() {
    const T: &str = "discards_only_with_allow_discards";
    if !capable(T) || !have_e2fs(T) || !have_tool(T, "fstrim") {
        return;
    }
    let dir = tmp();
    let (img, key) = lukskit_luks2_image(dir.path(), 64 << 20, b"secret");
    let allocated = || {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&img).unwrap().blocks() * 512
    };
    for allow in [false, true] {
        let mut m = Mapping::new(if allow { "trim-on" } else { "trim-off" });
        let mut args = vec![
            "open",
            "-q",
            img.as_str(),
            m.name.as_str(),
            "-d",
            key.as_str(),
        ];
        if allow {
            args.push("--allow-discards");
        }
        lukskit(&args, b"").ok("open");
        let dev = std::fs::read_link(m.dev()).unwrap();
        let loop_name = dev.file_name().unwrap().to_str().unwrap().to_string();
        let max: u64 =
            std::fs::read_to_string(format!("/sys/block/{loop_name}/queue/discard_max_bytes"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
        assert_eq!(max > 0, allow, "discard_max_bytes of {loop_name}: {max}");
        // The FUSE file's file system answers statfs (df) all the same.
        let fuse = format!("/run/lukskit/{}/device", m.name);
        let df = Command::new("df").arg(&fuse).output().unwrap();
        assert!(df.status.success(), "df {fuse}: {:?}", df);
        sh(&format!("mkfs.ext4 -q -F -E nodiscard {}", m.dev()));
        m.mount(dir.path());
        let mnt = m.mnt.clone().unwrap();
        sh(&format!(
            "dd if=/dev/urandom of={}/f bs=1M count=16 status=none && sync",
            mnt.display()
        ));
        let full = allocated();
        sh(&format!("rm {}/f && sync", mnt.display()));
        let r = Command::new("fstrim").arg("-v").arg(&mnt).output().unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        if allow {
            assert!(r.status.success(), "fstrim: {err}");
            assert!(
                allocated() + (8 << 20) < full,
                "the freed blocks were not punched out of the image ({} -> {})",
                full,
                allocated()
            );
        } else {
            assert!(
                !r.status.success(),
                "fstrim succeeded without --allow-discards"
            );
            assert!(
                err.contains("the discard operation is not supported"),
                "fstrim: {err}"
            );
            assert!(allocated() >= full, "something was discarded");
        }
        m.umount();
        lukskit(&["close", &m.name], b"").ok("close");
    }
}
