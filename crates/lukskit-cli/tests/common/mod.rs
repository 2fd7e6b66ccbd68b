//! Helpers shared by the CLI integration tests: running lukskit and real cryptsetup,
//! unpacking cryptsetup's test images.
#![allow(dead_code)]

pub mod crypttab;
pub mod mapping;
pub mod swtpm;
pub mod tang_server;

pub use lukskit_testkit::skip_or_fail;
// Not every test binary that shares this module writes patterned data.
#[allow(unused_imports)]
pub use lukskit_testkit::pattern;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Options that make a test volume's keyslots fast to open (PBKDF2, 1000 iterations).
pub const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];

/// Result of running a command.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
    /// Panic with the output unless the exit code is 0.
    pub fn ok(self, what: &str) -> Run {
        assert_eq!(
            self.code, 0,
            "{what} failed: stdout={} stderr={}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Run `cmd` with the variables `env` added, feeding `stdin`, and collect what it printed.
pub fn run(mut cmd: Command, stdin: &[u8], env: &[(&str, &str)]) -> Run {
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    {
        let mut si = child.stdin.take().unwrap();
        let _ = si.write_all(stdin);
    }
    Run::from(child.wait_with_output().expect("wait"))
}

/// Run the lukskit binary under test with `args`, feeding `stdin`.
pub fn lukskit(args: &[&str], stdin: &[u8]) -> Run {
    lukskit_env(args, stdin, &[])
}

/// Same with extra environment variables.
pub fn lukskit_env(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lukskit"));
    cmd.args(args);
    run(cmd, stdin, env)
}

/// Path of real cryptsetup, if installed.
pub fn cryptsetup_path() -> Option<PathBuf> {
    for p in [
        "/usr/sbin/cryptsetup",
        "/sbin/cryptsetup",
        "/usr/bin/cryptsetup",
    ] {
        if Path::new(p).exists() {
            return Some(PathBuf::from(p));
        }
    }
    None
}

/// What to say when real cryptsetup is missing.
pub const NO_CRYPTSETUP: &str = "cryptsetup is not installed (apt-get install cryptsetup-bin)";

/// The directory of the other formats' image archives (../shared/testdata/other-formats).
pub fn other_formats_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/testdata/other-formats")
}

/// Archive `name` of [`other_formats_dir`] unpacked into `dir` (sparse, as its README says:
/// `tar xJSf`); false after [`skip_or_fail`] when it is absent.
pub fn unpack_other_formats(test: &str, name: &str, dir: &Path) -> bool {
    let archive = other_formats_dir().join(name);
    if !archive.is_file() {
        skip_or_fail(
            test,
            &format!("../shared/testdata/other-formats/{name} is absent"),
        );
        return false;
    }
    let st = Command::new("tar")
        .arg("xJSf")
        .arg(&archive)
        .arg("-C")
        .arg(dir)
        .status()
        .expect("tar");
    assert!(st.success(), "tar xJSf {archive:?}");
    true
}

/// One image's section of the BitLocker set's `images.conf` (`KEY = value` lines).
pub type BitlkConf = std::collections::BTreeMap<String, String>;

/// The sections of the BitLocker set's `images.conf` (`[image]` headers, then `KEY = value`
/// lines), by image name.
pub fn bitlk_images_conf(path: &Path) -> std::collections::BTreeMap<String, BitlkConf> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut confs = std::collections::BTreeMap::new();
    let mut cur: Option<(String, BitlkConf)> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if let Some((n, c)) = cur.take() {
                confs.insert(n, c);
            }
            cur = Some((name.to_string(), BitlkConf::new()));
        } else if let Some((k, v)) = line.split_once('=') {
            if let Some((_, c)) = cur.as_mut() {
                c.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    if let Some((n, c)) = cur {
        confs.insert(n, c);
    }
    confs
}

/// Run real cryptsetup. When it is not installed: [`skip_or_fail`], then None (the caller
/// leaves out the comparison it wanted, which only the opt-out allows).
pub fn cryptsetup(args: &[&str], stdin: &[u8]) -> Option<Run> {
    let Some(p) = cryptsetup_path() else {
        skip_or_fail(&format!("cryptsetup {}", args.join(" ")), NO_CRYPTSETUP);
        return None;
    };
    let mut cmd = Command::new(p);
    cmd.args(args);
    Some(run(cmd, stdin, &[]))
}

/// True when real cryptsetup is installed; [`skip_or_fail`] otherwise.
pub fn have_cryptsetup(test: &str) -> bool {
    if cryptsetup_path().is_none() {
        skip_or_fail(test, NO_CRYPTSETUP);
        return false;
    }
    true
}

/// Whether util-linux `script` (for pseudo-terminal tests) is installed; otherwise
/// [`skip_or_fail`] for `test` and false.
pub fn have_script(test: &str) -> bool {
    if Command::new("script").arg("--version").output().is_ok() {
        return true;
    }
    skip_or_fail(
        test,
        "util-linux `script` is not installed (apt-get install bsdutils)",
    );
    false
}

/// `cmd` (a shell command line, followed by `echo rc=$?`) started on a pseudo-terminal made
/// by util-linux `script`, its standard input and output piped.
fn on_script(cmd: &str) -> std::process::Child {
    Command::new("script")
        .args(["-qec", &format!("{cmd}; echo rc=$?"), "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn script")
}

/// Run `cmd` (a shell command line) on a pseudo-terminal made by util-linux `script`,
/// typing `lines` one by one; returns the transcript, which ends with `rc=<exit code>`.
/// Callers check [`have_script`] first.
pub fn on_tty(cmd: &str, lines: &[&str]) -> String {
    let mut child = on_script(cmd);
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        std::thread::sleep(std::time::Duration::from_millis(400));
        stdin.write_all(format!("{l}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(400));
    drop(stdin);
    let out = child.wait_with_output().expect("wait for script");
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

/// [`on_tty`] that types each line only once the program waits for it: when what it has
/// written since the last line ends with ": " (a prompt or a YES question), or after
/// `wait` without one (the transcript then shows what the program asked instead). The
/// transcript ends with `rc=<exit code>`.
pub fn on_tty_prompted(cmd: &str, lines: &[&str], wait: std::time::Duration) -> String {
    use std::io::Read;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;
    let mut child = on_script(cmd);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut out = child.stdout.take().unwrap();
    let reader = {
        let seen = Arc::clone(&seen);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let mut stdin = child.stdin.take().unwrap();
    let mut from = 0;
    for l in lines {
        let start = Instant::now();
        loop {
            let now = seen.lock().unwrap().clone();
            let new = String::from_utf8_lossy(&now[from.min(now.len())..]).replace('\r', "");
            if new.ends_with(": ") || start.elapsed() > wait {
                from = now.len();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // What is typed is echoed (or not) by the terminal as the program set it.
        std::thread::sleep(std::time::Duration::from_millis(100));
        stdin.write_all(format!("{l}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    // The last answer's echo, then end of input.
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(stdin);
    let _ = child.wait();
    reader.join().unwrap();
    let all = seen.lock().unwrap().clone();
    String::from_utf8_lossy(&all).replace('\r', "")
}

/// `../shared/testdata/cryptsetup` relative to the repository, if present.
pub fn testdata() -> Option<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let p = repo.join("../shared/testdata/cryptsetup");
    if p.is_dir() {
        Some(p.canonicalize().unwrap())
    } else {
        None
    }
}

/// The test data directory, or None after [`skip_or_fail`].
pub fn need_testdata(test: &str) -> Option<PathBuf> {
    let t = testdata();
    if t.is_none() {
        skip_or_fail(
            test,
            "../shared/testdata/cryptsetup is absent (cryptsetup's test images, from tests/ of \
             the cryptsetup 2.7.5 source)",
        );
    }
    t
}

/// The bytes of `name.xz` of cryptsetup 2.6.1's test directory (`../shared`), decompressed.
pub fn upstream_xz(name: &str) -> Vec<u8> {
    let xz = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/cryptsetup-2.6.1-tests")
        .join(format!("{name}.xz"));
    let out = Command::new("xz").arg("-dc").arg(&xz).output().expect("xz");
    assert!(out.status.success(), "xz -dc {xz:?}");
    out.stdout
}

/// Decompress `name.xz` from the test data into `dir/out`.
pub fn unxz(td: &Path, name: &str, dir: &Path, out: &str) -> PathBuf {
    let dest = dir.join(out);
    let o = Command::new("xz")
        .arg("-dc")
        .arg(td.join(name))
        .output()
        .expect("xz");
    assert!(o.status.success(), "xz -dc {name} failed");
    std::fs::write(&dest, o.stdout).unwrap();
    dest
}

/// Unpack `name.tar.xz` from the test data into `dir`.
pub fn untar(td: &Path, name: &str, dir: &Path) {
    let st = Command::new("tar")
        .arg("xJf")
        .arg(td.join(name))
        .arg("-C")
        .arg(dir)
        .status()
        .expect("tar");
    assert!(st.success(), "tar xJf {name} failed");
}

/// Extract the hex of the "MK dump:" block of `luksDump --dump-volume-key`.
pub fn mk_dump(stdout: &str) -> String {
    let mut hex = String::new();
    let mut on = false;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("MK dump:") {
            on = true;
            hex.push_str(&rest.replace([' ', '\t'], ""));
        } else if on && line.starts_with('\t') {
            hex.push_str(&line.replace([' ', '\t'], ""));
        } else if on {
            break;
        }
    }
    hex
}

/// Volume key as printed by `tool luksDump --dump-volume-key` with a key file.
pub fn volume_key_with(tool: &str, img: &str, keyfile: &str, extra: &[&str]) -> String {
    let mut args = vec!["luksDump", "--dump-volume-key", "-q", "-d", keyfile, img];
    args.extend_from_slice(extra);
    let r = if tool == "cryptsetup" {
        cryptsetup(&args, b"").expect("cryptsetup")
    } else {
        lukskit(&args, b"")
    };
    let r = r.ok(&format!("{tool} luksDump --dump-volume-key {img}"));
    let k = mk_dump(&r.stdout);
    assert!(!k.is_empty(), "no MK dump in {}", r.stdout);
    k
}

/// A fresh temporary directory.
pub fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("lukskit-test")
        .tempdir()
        .unwrap()
}

/// Write `content` to `dir/name` and return the path as a String.
pub fn write_file(dir: &Path, name: &str, content: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, content).unwrap();
    p.to_str().unwrap().to_string()
}

/// Create a sparse file of `size` bytes.
pub fn sparse(dir: &Path, name: &str, size: u64) -> String {
    let p = dir.join(name);
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(size).unwrap();
    p.to_str().unwrap().to_string()
}

/// A LUKS2 image of `size` bytes formatted by lukskit (fast PBKDF2) with passphrase `pass` in
/// the key file `key` beside it: (image, key file).
pub fn lukskit_luks2_image(dir: &Path, size: u64, pass: &[u8]) -> (String, String) {
    let img = sparse(dir, "img", size);
    let key = write_file(dir, "key", pass);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2"];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&img, &key]);
    lukskit(&args, b"").ok("luksFormat");
    (img, key)
}

/// A 4096-byte aligned buffer for O_DIRECT.
pub struct AlignedBuf {
    v: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` zero bytes starting at a 4096-byte boundary.
    pub fn new(len: usize) -> Self {
        let v = vec![0u8; len + 4096];
        let start = (4096 - (v.as_ptr() as usize % 4096)) % 4096;
        AlignedBuf { v, start, len }
    }
    /// The aligned bytes.
    pub fn as_mut(&mut self) -> &mut [u8] {
        &mut self.v[self.start..self.start + self.len]
    }
}

/// Write `data` at `offset` of a block device with O_DIRECT and fsync.
pub fn write_direct(dev: &str, offset: u64, data: &[u8]) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)?;
    let mut buf = AlignedBuf::new(data.len());
    buf.as_mut().copy_from_slice(data);
    f.seek(SeekFrom::Start(offset))?;
    f.write_all(buf.as_mut())?;
    f.sync_all()
}

/// Read `len` bytes at `offset` of a block device with O_DIRECT (panics on error).
pub fn read_direct(dev: &str, offset: u64, len: usize) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap();
    let mut buf = AlignedBuf::new(len);
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.read_exact(buf.as_mut()).unwrap();
    buf.as_mut().to_vec()
}

/// Decrypt `n` sectors of `img` (data at `data_off`, IV offset `iv_off` in 512-byte
/// sectors) with Python's `cryptography`, an implementation independent of lukskit:
/// `mode` "xts" is aes-xts-plain64, anything else aes-cbc-essiv:sha256. None (after
/// [`skip_or_fail`]) when Python or `cryptography` is unavailable.
pub fn python_decrypt(
    mode: &str,
    key: &[u8],
    sector: usize,
    data_off: u64,
    img: &str,
    iv_off: u64,
    n: usize,
) -> Option<Vec<u8>> {
    let window = Window {
        data_off,
        iv_off,
        n,
    };
    python_decrypt_windows(mode, key, sector, img, &[window]).map(|mut w| w.remove(0))
}

/// `n` sectors of an image from byte `data_off` on, their IVs from the 512-byte sector
/// `iv_off`: one piece [`python_decrypt_windows`] decrypts.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub data_off: u64,
    pub iv_off: u64,
    pub n: usize,
}

/// [`python_decrypt`] of several windows of `img` by one Python process (each process
/// costs a start and the import of `cryptography`), each read from the image where it lies.
pub fn python_decrypt_windows(
    mode: &str,
    key: &[u8],
    sector: usize,
    img: &str,
    windows: &[Window],
) -> Option<Vec<Vec<u8>>> {
    const SCRIPT: &str = r#"
import sys, hashlib
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
mode, keyhex, ss, img = sys.argv[1:5]
key = bytes.fromhex(keyhex); ss = int(ss)
args = [int(a) for a in sys.argv[5:]]
f = open(img, 'rb')
for w in range(0, len(args), 3):
    off, ivoff, n = args[w:w + 3]
    f.seek(off)
    data = f.read(ss * n)
    out = []
    for i in range(n):
        unit = data[i * ss:(i + 1) * ss]
        s = i * ss // 512 + ivoff  # dm-crypt: 512-byte sector number, no iv_large_sectors
        if mode == 'xts':
            d = Cipher(algorithms.AES(key), modes.XTS(s.to_bytes(16, 'little'))).decryptor()
        else:
            salt = hashlib.sha256(key).digest()
            e = Cipher(algorithms.AES(salt), modes.ECB()).encryptor()
            iv = e.update(s.to_bytes(8, 'little') + bytes(8)) + e.finalize()
            d = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        out.append(d.update(unit) + d.finalize())
    sys.stdout.buffer.write(b''.join(out))
"#;
    static HAVE_CRYPTOGRAPHY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let have = *HAVE_CRYPTOGRAPHY.get_or_init(|| {
        let probe = Command::new("python3")
            .args(["-c", "import cryptography"])
            .output();
        matches!(probe, Ok(ref o) if o.status.success())
    });
    if !have {
        skip_or_fail(
            "independent decryption",
            "python3 with the 'cryptography' module is not available \
             (apt-get install python3-cryptography; Debian's system Python takes no pip)",
        );
        return None;
    }
    let mut cmd = Command::new("python3");
    cmd.args([
        "-c",
        SCRIPT,
        mode,
        &hex::encode(key),
        &sector.to_string(),
        img,
    ]);
    for w in windows {
        cmd.args([
            w.data_off.to_string(),
            w.iv_off.to_string(),
            w.n.to_string(),
        ]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut rest = &o.stdout[..];
    let mut pieces = Vec::with_capacity(windows.len());
    for w in windows {
        // A window past the end of the image comes back short, as python_decrypt's did.
        let (piece, after) = rest.split_at((w.n * sector).min(rest.len()));
        pieces.push(piece.to_vec());
        rest = after;
    }
    Some(pieces)
}

/// The keyslot ids of a parsed LUKS2 JSON area (as [`json_dump`] gives it), in its order.
pub fn keyslot_ids(json: &serde_json::Value) -> Vec<String> {
    json["keyslots"]
        .as_object()
        .expect("a keyslots object")
        .keys()
        .cloned()
        .collect()
}

/// cryptsetup's `luksDump --dump-json-metadata` of `img`, parsed.
pub fn json_dump(img: &str) -> serde_json::Value {
    let j = cryptsetup(&["luksDump", "--dump-json-metadata", img], b"")
        .expect("cryptsetup")
        .ok("luksDump --dump-json-metadata")
        .stdout;
    serde_json::from_str(&j).unwrap()
}

/// cryptsetup's `luksDump --dump-json-metadata` of `img`, parsed; `None` where there is no
/// LUKS2 header to dump (the device was never formatted, or a command wiped it).
pub fn json_dump_if_luks2(img: &str) -> Option<serde_json::Value> {
    let j = cryptsetup(&["luksDump", "--dump-json-metadata", img], b"")
        .expect("cryptsetup")
        .stdout;
    serde_json::from_str(&j).ok()
}

/// The words of a command line written with placeholders: each word named in `names`
/// becomes its path, and `D/` in a word becomes `dir/`.
pub fn command_words(template: &str, names: &[(&str, &str)], dir: &str) -> Vec<String> {
    template
        .split(' ')
        .map(|w| match names.iter().find(|(name, _)| *name == w) {
            Some((_, path)) => path.to_string(),
            None => w.replace("D/", &format!("{dir}/")),
        })
        .collect()
}

/// A tool's output made comparable with the other tool's: `paths` (what, as what) replaced
/// by their names, and a usage error (which lists each tool's own options and names its
/// program) reduced to the line after the usage text, in cryptsetup's name.
pub fn comparable_output(s: &str, paths: &[(&str, &str)]) -> String {
    let s = paths
        .iter()
        .fold(s.to_string(), |s, (what, name)| s.replace(what, name));
    match s.strip_prefix("Usage: ") {
        Some(rest) => rest
            .lines()
            .last()
            .unwrap_or_default()
            .replace("lukskit: ", "cryptsetup: ")
            .replace("/usr/sbin/cryptsetup: ", "cryptsetup: "),
        None => s,
    }
}

/// Whether cryptsetup's `luksDump` of `img` shows a re-encryption requirement.
pub fn in_reencryption(img: &str) -> bool {
    cryptsetup(&["luksDump", img], b"")
        .expect("cryptsetup")
        .stdout
        .contains("online-reencrypt")
}

/// Whether mkfs.ext4, e2fsck and debugfs are installed (a skip, or a failure outside
/// `LUKSKIT_ALLOW_SKIP=1`, when not).
pub fn have_e2fs(test: &str) -> bool {
    for tool in ["mkfs.ext4", "e2fsck", "debugfs"] {
        let found = Command::new(tool).arg("-V").output().is_ok()
            || Path::new(&format!("/sbin/{tool}")).exists();
        if !found {
            skip_or_fail(
                test,
                &format!("{tool} is not installed (apt-get install e2fsprogs)"),
            );
            return false;
        }
    }
    true
}

/// The content of `path` in the ext4 file system of `img` (read with debugfs into `out`).
pub fn ext4_file(img: &str, path: &str, out: &Path) -> Vec<u8> {
    let _ = std::fs::remove_file(out);
    let r = Command::new("debugfs")
        .args(["-R", &format!("dump {path} {}", out.display()), img])
        .output()
        .expect("debugfs");
    assert!(r.status.success(), "debugfs: {:?}", r);
    std::fs::read(out).unwrap_or_default()
}

/// `e2fsck -fn` of `img` passes.
pub fn fsck(img: &str, what: &str) {
    let r = Command::new("e2fsck")
        .args(["-fn", img])
        .output()
        .expect("e2fsck");
    assert!(
        r.status.success(),
        "{what}: e2fsck: {}{}",
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&r.stderr)
    );
}

/// Rewrite the JSON of both LUKS2 header copies of `img` (16 KiB metadata) with `f`, with
/// valid checksums (as luks2-reencryption-mangle-test's `img_update_json` does): the header
/// stays loadable and only the metadata digest can tell.
pub fn rewrite_luks2_json(img: &str, f: impl Fn(&mut serde_json::Value)) {
    use sha2::{Digest, Sha256};
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap();
    for off in [0u64, 16384] {
        let mut h = vec![0u8; 16384];
        file.read_exact_at(&mut h, off).unwrap();
        let end = h[4096..].iter().position(|&b| b == 0).unwrap() + 4096;
        let mut v: serde_json::Value = serde_json::from_slice(&h[4096..end]).unwrap();
        f(&mut v);
        let j = serde_json::to_vec(&v).unwrap();
        h[4096..].fill(0);
        h[4096..4096 + j.len()].copy_from_slice(&j);
        h[448..512].fill(0);
        let sum = Sha256::digest(&h);
        h[448..448 + 32].copy_from_slice(&sum);
        file.write_all_at(&h, off).unwrap();
    }
}

/// Read the LUKS2 header of `img`, let `edit` change it (with the format crate's mutators or,
/// for hostile headers, `json_mut_unchecked`), and write it back with valid checksums.
pub fn edit_luks2_header(img: &str, edit: impl FnOnce(&mut lukskit_format::luks2::Luks2Header)) {
    use lukskit_format::io::Storage;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(img)
        .unwrap();
    let mut hdr = lukskit_format::luks2::read(&f as &dyn Storage)
        .unwrap()
        .header;
    edit(&mut hdr);
    lukskit_format::luks2::write(&f as &dyn Storage, &mut hdr).unwrap();
}

/// An ext4 file system of `fs_size` (mke2fs's size syntax, e.g. `48M`) with 4 KiB blocks at
/// the start of the existing file `img`, filled with the tree under `src` (`mkfs.ext4 -d`).
pub fn mkfs_ext4_from(img: &str, src: &Path, fs_size: &str) {
    let r = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-b", "4096", "-d"])
        .arg(src)
        .args([img, fs_size])
        .output()
        .expect("mkfs.ext4");
    assert!(r.status.success(), "mkfs.ext4: {r:?}");
}

/// Run `args` with real cryptsetup (`tool` "cryptsetup") or lukskit.
pub fn run_tool(tool: &str, args: &[&str], stdin: &[u8]) -> Run {
    if tool == "cryptsetup" {
        cryptsetup(args, stdin).expect("cryptsetup")
    } else {
        lukskit(args, stdin)
    }
}

/// Active keyslots of a LUKS1 or LUKS2 image, as real cryptsetup's luksDump lists them.
pub fn active_slots(img: &str) -> Vec<u32> {
    let d = cryptsetup(&["luksDump", img], b"").unwrap().ok("luksDump");
    d.stdout
        .lines()
        .filter_map(|l| {
            // LUKS1: "Key Slot 3: ENABLED"; LUKS2: "  3: luks2".
            if let Some(r) = l.strip_prefix("Key Slot ") {
                let (n, state) = r.split_once(": ")?;
                return (state == "ENABLED").then(|| n.parse().ok()).flatten();
            }
            let (n, rest) = l.trim_start().split_once(": ")?;
            (l.starts_with("  ") && rest.starts_with("luks2"))
                .then(|| n.parse().ok())
                .flatten()
        })
        .collect()
}

/// The file-system UUID blkid reads on `dev` (`blkid -p`: the device itself, no cache).
pub fn blkid_uuid(dev: &str) -> String {
    let o = Command::new("blkid")
        .args(["-p", "-o", "value", "-s", "UUID", dev])
        .output()
        .expect("blkid");
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// `luksAddKey --token-id 0` adds keyslot 2 for a new key file in `dir`, the token's secret
/// unlocking (`add` runs lukskit with the arguments: a token that asks for a PIN is given one
/// there; `extra` goes before the image, e.g. `--tpm2-device=…`); the new key file then opens
/// that keyslot.
pub fn token_adds_a_keyslot(
    dir: &Path,
    img: &str,
    extra: &[&str],
    add: impl FnOnce(&[&str]) -> Run,
) {
    let newkey = write_file(dir, "newkey", b"second passphrase");
    let mut args = vec!["luksAddKey", "-q", "--token-id", "0"];
    args.extend_from_slice(extra);
    args.extend([img, newkey.as_str()]);
    args.extend_from_slice(&FAST);
    add(&args).ok("luksAddKey --token-id 0");
    lukskit(
        &[
            "open",
            "--test-passphrase",
            "--key-slot",
            "2",
            "-d",
            &newkey,
            img,
        ],
        b"",
    )
    .ok("the new keyslot");
}
