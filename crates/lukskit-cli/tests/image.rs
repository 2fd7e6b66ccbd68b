//! `image encrypt` / `image decrypt` and `benchmark`.
//!
//! Round trips for LUKS1, LUKS2 and plain mode; images checked by real cryptsetup
//! (`luksDump`, `open --test-passphrase`, `--dump-volume-key`) and their ciphertext decrypted
//! independently of lukskit's engine with Python's `cryptography` (AES-XTS with the IEEE 1619
//! tweak = 512-byte sector number, AES-CBC with ESSIV computed from SHA-256 of the key), and
//! benchmark output checked against cryptsetup's line formats.

mod common;
use common::*;
use std::path::Path;
use std::process::{Command, Stdio};

/// Deterministic pseudo-random bytes (xorshift), with a run of zeros in the middle so the
/// decrypted output has holes, and a length that is not a multiple of any sector size.
fn plaintext(len: usize, seed: u64) -> Vec<u8> {
    let mut v = pattern(len, seed);
    let z0 = len / 3;
    let z1 = (z0 + 3 * 65536 + 100).min(len);
    v[z0..z1].fill(0);
    v
}

fn path_str(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

/// Encrypt `plain` into an image with `opts`, decrypt it back, check the result: the
/// plaintext, then zeros up to the padded length.
fn round_trip(dir: &Path, name: &str, plain: &[u8], opts: &[&str], dec_opts: &[&str]) -> String {
    let src = write_file(dir, &format!("{name}.plain"), plain);
    let img = path_str(&dir.join(format!("{name}.img")));
    let out = path_str(&dir.join(format!("{name}.out")));
    // 64 bytes: also a whole 512-bit key for plain mode (key files are used directly there).
    let kf = write_file(
        dir,
        "key",
        b"correct horse battery staple / correct horse battery staple 0123",
    );
    let mut args = vec!["image", "encrypt", "-q", "-d", &kf];
    args.extend_from_slice(opts);
    args.push(&src);
    args.push(&img);
    lukskit(&args, b"").ok(&format!("encrypt {args:?}"));
    let mut args = vec!["image", "decrypt", "-q", "-d", &kf];
    args.extend_from_slice(dec_opts);
    args.push(&img);
    args.push(&out);
    lukskit(&args, b"").ok(&format!("decrypt {args:?}"));
    let got = std::fs::read(&out).unwrap();
    assert!(got.len() >= plain.len(), "{name}: output too short");
    assert!(
        got.len() - plain.len() < 4096,
        "{name}: padded by {}",
        got.len() - plain.len()
    );
    assert!(got[..plain.len()] == *plain, "{name}: plaintext differs");
    assert!(
        got[plain.len()..].iter().all(|&b| b == 0),
        "{name}: padding not zero"
    );
    img
}

#[test]
fn luks_round_trips() {
    let d = tmp();
    let plain = plaintext(1_000_003, 7);
    for (i, (kind, cipher, bits, extra)) in [
        ("luks2", "aes-xts-plain64", "512", &[][..]),
        (
            "luks2",
            "aes-xts-plain64",
            "256",
            &["--sector-size", "512"][..],
        ),
        (
            "luks2",
            "serpent-xts-plain64",
            "512",
            &["--sector-size", "1024"][..],
        ),
        (
            "luks2",
            "twofish-cbc-essiv:sha256",
            "256",
            &["--sector-size", "2048"][..],
        ),
        (
            "luks2",
            "aes-cbc-essiv:sha256",
            "128",
            &["--offset", "40960"][..],
        ),
        ("luks1", "aes-xts-plain64", "512", &[][..]),
        ("luks1", "aes-cbc-essiv:sha256", "256", &[][..]),
        ("luks1", "serpent-cbc-plain", "256", &[][..]),
    ]
    .into_iter()
    .enumerate()
    {
        let mut opts = vec!["--type", kind, "-c", cipher, "-s", bits];
        opts.extend_from_slice(&FAST);
        opts.extend_from_slice(extra);
        round_trip(d.path(), &format!("l{i}"), &plain, &opts, &[]);
    }
}

#[test]
fn detached_header_and_volume_key_file() {
    let d = tmp();
    let plain = plaintext(300_000, 3);
    let hdr = path_str(&d.path().join("hdr"));
    let mut opts = vec!["--header", &hdr];
    opts.extend_from_slice(&FAST);
    let img = round_trip(d.path(), "det", &plain, &opts, &["--header", &hdr]);
    // The data file holds ciphertext only (data offset 0 with a detached header).
    let data = std::fs::read(&img).unwrap();
    assert_eq!(data.len() % 4096, 0);
    assert!(data.len() < 300_000 + 4096);
    assert_ne!(&data[..300_000], &plain[..]);
    // The volume key from luksDump decrypts it too (no passphrase).
    let kf = path_str(&d.path().join("key"));
    let vk = volume_key_with("lukskit", &img, &kf, &["--header", &hdr]);
    let vkf = write_file(d.path(), "vk", &hex::decode(vk).unwrap());
    let out = path_str(&d.path().join("vk.out"));
    lukskit(
        &[
            "image",
            "decrypt",
            "-q",
            "--header",
            &hdr,
            "--volume-key-file",
            &vkf,
            &img,
            &out,
        ],
        b"",
    )
    .ok("decrypt with volume key");
    assert!(std::fs::read(&out).unwrap()[..plain.len()] == plain[..]);
    // Wrong passphrase: exit 2, no output written.
    let bad = write_file(d.path(), "bad", b"wrong");
    let out2 = path_str(&d.path().join("bad.out"));
    let r = lukskit(
        &[
            "image", "decrypt", "-q", "--header", &hdr, "-d", &bad, &img, &out2,
        ],
        b"",
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("No key available with this passphrase."));
    assert!(!Path::new(&out2).exists());
}

#[test]
fn plain_round_trips() {
    let d = tmp();
    let plain = plaintext(700_001, 11);
    for (i, opts) in [
        &[][..],
        &["-c", "aes-xts-plain64", "-s", "512", "--hash", "sha256"][..],
        &[
            "-c",
            "aes-xts-plain64",
            "-s",
            "256",
            "--sector-size",
            "4096",
            "--iv-large-sectors",
            "--skip",
            "16",
            "--offset",
            "3",
        ][..],
        &[
            "-c",
            "twofish-xts-plain64",
            "-s",
            "512",
            "--sector-size",
            "4096",
        ][..],
        &[
            "-c",
            "serpent-cbc-essiv:sha256",
            "--skip",
            "1000",
            "--offset",
            "8",
        ][..],
    ]
    .into_iter()
    .enumerate()
    {
        let mut o = vec!["--type", "plain"];
        o.extend_from_slice(opts);
        round_trip(d.path(), &format!("p{i}"), &plain, &o, &o);
    }
}

/// Plain mode with a passphrase on standard input: the key is RIPEMD-160 based by default
/// (cryptsetup 2.6.1), so the image decrypts with the hashed key given as a key file.
#[test]
fn plain_passphrase_hashing_and_key_file() {
    let d = tmp();
    let plain = plaintext(200_000, 5);
    let src = write_file(d.path(), "src", &plain);
    let img = path_str(&d.path().join("img"));
    lukskit(
        &["image", "encrypt", "-q", "--type", "plain", &src, &img],
        b"xxx\n",
    )
    .ok("encrypt from stdin passphrase");
    // cryptsetup tests/password-hash-test: ripemd160, 256 bits, "xxx".
    let key =
        hex::decode("aeb26d1f69eb6dddfb9381eed4d7299f091e99aa5d3ff06866d4ce9f620f7aca").unwrap();
    let kf = write_file(d.path(), "kf", &key);
    let out = path_str(&d.path().join("out"));
    lukskit(
        &[
            "image", "decrypt", "-q", "--type", "plain", "-d", &kf, &img, &out,
        ],
        b"",
    )
    .ok("decrypt with key file");
    assert!(std::fs::read(&out).unwrap()[..plain.len()] == plain[..]);
    // Independent check: default cipher aes-cbc-essiv:sha256, 512-byte sectors from 0.
    if let Some(dec) = python_decrypt("cbc-essiv", &key, 512, 0, &img, 0, 8) {
        assert!(dec[..] == plain[..8 * 512], "python decryption differs");
    }
}

#[test]
fn stdin_and_stdout_streams() {
    let d = tmp();
    let plain = plaintext(123_457, 9);
    let kf = write_file(d.path(), "key", b"pw");
    let img = path_str(&d.path().join("img"));
    let mut args = vec!["image", "encrypt", "-q", "-d", &kf];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&["-", &img]);
    lukskit(&args, &plain).ok("encrypt from stdin");
    let o = Command::new(env!("CARGO_BIN_EXE_lukskit"))
        .args(["image", "decrypt", "-q", "-d", &kf, &img, "-"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout.len(), 123_457usize.div_ceil(4096) * 4096);
    assert!(o.stdout[..plain.len()] == plain[..]);
}

#[test]
fn decrypted_output_is_sparse() {
    let d = tmp();
    let mut plain = vec![0u8; 8 << 20];
    plain[..4096].fill(0xaa);
    plain[(8 << 20) - 1] = 1;
    let mut opts = vec!["--type", "luks2"];
    opts.extend_from_slice(&FAST);
    round_trip(d.path(), "sp", &plain, &opts, &[]);
    let out = d.path().join("sp.out");
    let blocks = Command::new("stat")
        .args(["-c", "%b %B"])
        .arg(&out)
        .output()
        .unwrap();
    let s = String::from_utf8_lossy(&blocks.stdout);
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().unwrap());
    let (n, bs) = (it.next().unwrap(), it.next().unwrap());
    assert!(
        n * bs < 1 << 20,
        "8 MiB mostly-zero output uses {} bytes",
        n * bs
    );
}

/// A small LUKS2 image of `plain` in `dir` (key file `key` holding "pw"); returns (image,
/// key file).
fn small_image(dir: &Path, plain: &[u8]) -> (String, String) {
    let src = write_file(dir, "small.plain", plain);
    let kf = write_file(dir, "key", b"pw");
    let img = path_str(&dir.join("small.img"));
    let mut args = vec!["image", "encrypt", "-q", "--type", "luks2", "-d", &kf];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&src, &img]);
    lukskit(&args, b"").ok("encrypt");
    (img, kf)
}

fn mode_of(p: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

/// `image decrypt` creates its plaintext output readable by its owner only (0600, whatever
/// the umask), and leaves the mode of an existing output file as it is (never loosened).
#[test]
fn decrypted_output_is_private() {
    let d = tmp();
    let plain = plaintext(70_000, 3);
    let (img, kf) = small_image(d.path(), &plain);
    let out = path_str(&d.path().join("new.out"));
    // A umask that would give 0644 (and one that would give 0666).
    for umask in ["022", "000"] {
        let _ = std::fs::remove_file(&out);
        let o = Command::new("sh")
            .args([
                "-c",
                &format!("umask {umask}; exec \"$0\" \"$@\""),
                env!("CARGO_BIN_EXE_lukskit"),
                "image",
                "decrypt",
                "-q",
                "-d",
                &kf,
                &img,
                &out,
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(mode_of(&out), 0o600, "umask {umask}");
        assert!(std::fs::read(&out).unwrap()[..plain.len()] == plain[..]);
    }
    // Existing files keep their mode: a tighter one is not loosened, a chosen one not changed.
    for mode in [0o400 | 0o200, 0o640, 0o604] {
        use std::os::unix::fs::PermissionsExt;
        let old = write_file(d.path(), &format!("old{mode:o}"), b"old content");
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(mode)).unwrap();
        lukskit(&["image", "decrypt", "-q", "-d", &kf, &img, &old], b"").ok("decrypt");
        assert_eq!(mode_of(&old), mode);
        assert!(std::fs::read(&old).unwrap()[..plain.len()] == plain[..]);
    }
}

/// The plaintext output is never written through a planted symbolic link or into a file
/// another user made (issue 36, item 12): lukskit writes a new file of its own beside it
/// and renames it over the output when complete, so the link is replaced (its target keeps
/// its content) and so is the other user's file (its inode, still reachable through a
/// second link, keeps its content), and nothing partial is left under the output's name.
#[test]
fn decrypted_output_never_goes_through_a_planted_link_or_into_anothers_file() {
    use std::os::unix::fs::MetadataExt;
    let d = tmp();
    let plain = plaintext(70_000, 4);
    let (img, kf) = small_image(d.path(), &plain);
    let victim = write_file(d.path(), "victim", b"root's file");
    let link = d.path().join("out.link");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    lukskit(
        &["image", "decrypt", "-q", "-d", &kf, &img, &path_str(&link)],
        b"",
    )
    .ok("decrypt onto a link");
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"root's file",
        "written through the link"
    );
    let md = std::fs::symlink_metadata(&link).unwrap();
    assert!(
        md.file_type().is_file(),
        "the link was not replaced by a file"
    );
    assert_eq!(mode_of(&path_str(&link)), 0o600);
    assert!(std::fs::read(&link).unwrap()[..plain.len()] == plain[..]);

    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let theirs = write_file(d.path(), "theirs", b"their content");
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let keep = d.path().join("theirs.keep");
        std::fs::hard_link(&theirs, &keep).unwrap();
        lukskit(&["image", "decrypt", "-q", "-d", &kf, &img, &theirs], b"")
            .ok("decrypt onto another user's file");
        assert_eq!(
            std::fs::read(&keep).unwrap(),
            b"their content",
            "written into their file"
        );
        let md = std::fs::metadata(&theirs).unwrap();
        assert_eq!(
            (md.uid(), md.mode() & 0o7777),
            (0, 0o600),
            "the output is ours, private"
        );
        assert!(std::fs::read(&theirs).unwrap()[..plain.len()] == plain[..]);
    }
    // A link to a block device (as /dev/disk/by-id/... are) is followed: the plaintext goes
    // onto the device, the link stays.
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let back = d.path().join("back.img");
        std::fs::File::create(&back)
            .and_then(|f| f.set_len(1 << 20))
            .unwrap();
        let lo = Command::new("losetup")
            .args(["--find", "--show", back.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(lo.status.success(), "losetup");
        let lo = String::from_utf8_lossy(&lo.stdout).trim().to_string();
        let by_id = d.path().join("by-id");
        std::os::unix::fs::symlink(&lo, &by_id).unwrap();
        let r = lukskit(
            &["image", "decrypt", "-q", "-d", &kf, &img, &path_str(&by_id)],
            b"",
        );
        let on_device = std::fs::read(&lo).unwrap();
        let _ = Command::new("losetup").args(["-d", &lo]).status();
        r.ok("decrypt onto a link to a block device");
        assert!(std::fs::symlink_metadata(&by_id)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(
            on_device[..plain.len()] == plain[..],
            "plaintext not on the device"
        );
    }
    // No new file of lukskit's is left beside the outputs.
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".lukskit-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Replacing an existing non-empty output file asks for confirmation on a terminal, as
/// `image encrypt` does for its image (and cryptsetup for luksFormat): anything but YES
/// leaves the file alone; `-q` and the absence of a terminal proceed, as for encrypt.
#[test]
fn decrypt_asks_before_replacing_a_file() {
    let d = tmp();
    let plain = plaintext(70_000, 4);
    let (img, kf) = small_image(d.path(), &plain);
    let bin = env!("CARGO_BIN_EXE_lukskit");
    let out = write_file(d.path(), "out", b"keep me");
    if !have_script("decrypt_asks_before_replacing_a_file") {
        return;
    }
    let t = on_tty(&format!("{bin} image decrypt -d {kf} {img} {out}"), &["no"]);
    assert!(
        t.contains(&format!("This will overwrite data on {out} irrevocably."))
            && t.contains("Are you sure? (Type 'yes' in capital letters): no")
            && t.contains("Operation aborted.")
            && t.ends_with("rc=1\n"),
        "{t}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"keep me");
    let t = on_tty(
        &format!("{bin} image decrypt -d {kf} {img} {out}"),
        &["YES"],
    );
    assert!(t.ends_with("rc=0\n"), "{t}");
    assert!(std::fs::read(&out).unwrap()[..plain.len()] == plain[..]);
    // -q: no question.
    std::fs::write(&out, b"keep me").unwrap();
    let t = on_tty(&format!("{bin} image decrypt -q -d {kf} {img} {out}"), &[]);
    assert!(!t.contains("Are you sure") && t.ends_with("rc=0\n"), "{t}");
    assert!(std::fs::read(&out).unwrap()[..plain.len()] == plain[..]);
    // A new file: nothing to lose, no question.
    let new = path_str(&d.path().join("new"));
    let t = on_tty(&format!("{bin} image decrypt -d {kf} {img} {new}"), &[]);
    assert!(!t.contains("Are you sure") && t.ends_with("rc=0\n"), "{t}");
    // Without a terminal both directions proceed as cryptsetup does (no one to ask).
    std::fs::write(&out, b"keep me").unwrap();
    lukskit(&["image", "decrypt", "-d", &kf, &img, &out], b"").ok("decrypt, no tty");
    assert!(std::fs::read(&out).unwrap()[..plain.len()] == plain[..]);
    let mut args = vec!["image", "encrypt", "-d", &kf];
    args.extend_from_slice(&FAST);
    args.extend_from_slice(&[&out, &img]);
    lukskit(&args, b"").ok("encrypt, no tty");
}

#[test]
fn errors_are_clear() {
    let d = tmp();
    let kf = write_file(d.path(), "key", b"pw");
    let src = write_file(d.path(), "src", b"hello");
    let img = path_str(&d.path().join("img"));
    let r = lukskit(&["image"], b"");
    assert_eq!(r.code, 1);
    let r = lukskit(
        &["image", "encrypt", "-q", "-d", &kf, "/nonexistent/x", &img],
        b"",
    );
    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(r.stderr.contains("/nonexistent/x"));
    let r = lukskit(&["image", "encrypt", "-q", "-d", &kf, &src, &src], b"");
    assert_eq!(r.code, 1);
    let r = lukskit(
        &[
            "image",
            "encrypt",
            "-q",
            "--type",
            "plain",
            "--iv-large-sectors",
            "-d",
            &kf,
            &src,
            &img,
        ],
        b"",
    );
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("Large IV sectors"), "{}", r.stderr);
    let r = lukskit(
        &[
            "image", "encrypt", "-q", "--type", "tcrypt", "-d", &kf, &src, &img,
        ],
        b"",
    );
    assert_eq!(r.code, 1);
    // Not a LUKS image.
    let junk = write_file(d.path(), "junk", &[0u8; 65536]);
    let r = lukskit(
        &[
            "image",
            "decrypt",
            "-q",
            "-d",
            &kf,
            &junk,
            &path_str(&d.path().join("o")),
        ],
        b"",
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("is not a valid LUKS device"));
}

/// Data segment offset of a LUKS image as cryptsetup reports it.
fn cryptsetup_offset(img: &str) -> u64 {
    let r = cryptsetup(&["luksDump", img], b"").unwrap().ok("luksDump");
    for l in r.stdout.lines() {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("offset:") {
            return v.trim().split(' ').next().unwrap().parse().unwrap();
        }
        if let Some(v) = t.strip_prefix("Payload offset:") {
            return v.trim().parse::<u64>().unwrap() * 512;
        }
    }
    panic!("no data offset in luksDump:\n{}", r.stdout);
}

/// The key interop check: cryptsetup accepts the header written by `image encrypt`, and
/// the volume key cryptsetup extracts decrypts the data with a second AES implementation.
#[test]
fn cryptsetup_reads_encrypted_images() {
    if !have_cryptsetup("cryptsetup_reads_encrypted_images") {
        return;
    }
    let d = tmp();
    let plain = plaintext(5 * 4096 + 77, 21);
    for (i, (kind, cipher, bits, ss, mode)) in [
        ("luks2", "aes-xts-plain64", "512", "4096", "xts"),
        ("luks2", "aes-xts-plain64", "256", "512", "xts"),
        ("luks1", "aes-xts-plain64", "512", "512", "xts"),
        ("luks1", "aes-cbc-essiv:sha256", "256", "512", "cbc-essiv"),
        ("luks2", "aes-cbc-essiv:sha256", "128", "4096", "cbc-essiv"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut opts = vec!["--type", kind, "-c", cipher, "-s", bits];
        if kind == "luks2" {
            opts.extend_from_slice(&["--sector-size", ss]);
        }
        opts.extend_from_slice(&FAST);
        let img = round_trip(d.path(), &format!("c{i}"), &plain, &opts, &[]);
        let kf = path_str(&d.path().join("key"));
        cryptsetup(&["open", "--test-passphrase", "-d", &kf, &img], b"")
            .unwrap()
            .ok(&format!(
                "cryptsetup open --test-passphrase {kind} {cipher}"
            ));
        let vk = hex::decode(volume_key_with("cryptsetup", &img, &kf, &[])).unwrap();
        let off = cryptsetup_offset(&img);
        let ss: usize = ss.parse().unwrap();
        let n = plain.len() / ss;
        let Some(dec) = python_decrypt(mode, &vk, ss, off, &img, 0, n) else {
            return;
        };
        assert!(
            dec[..] == plain[..n * ss],
            "{kind} {cipher} {ss}: independent decryption differs"
        );
    }
}

// ---------------------------------------------------------------------------
// benchmark
// ---------------------------------------------------------------------------

fn re(s: &str) -> regex_lite::Regex {
    regex_lite::Regex::new(s).unwrap()
}

/// Minimal regular expressions (no external crate): `^…$` patterns built from literal
/// text, ` +` (one or more spaces), `\d+` and alternatives `(a|b)`.
mod regex_lite {
    pub struct Regex(Vec<Tok>);
    enum Tok {
        Lit(char),
        Spaces,
        Digits,
        Num,
        Alt(Vec<String>),
    }
    impl Regex {
        /// Tokens: `␣+` spaces, `\d+` digits, `\f` a decimal number with one fraction digit,
        /// `(a|b)` alternatives, `\x` the literal x; anything else literal.
        pub fn new(p: &str) -> Result<Regex, String> {
            let c: Vec<char> = p.chars().collect();
            let mut t = Vec::new();
            let mut i = 0;
            while i < c.len() {
                match c[i] {
                    ' ' if c.get(i + 1) == Some(&'+') => {
                        t.push(Tok::Spaces);
                        i += 2;
                    }
                    '\\' if c.get(i + 1) == Some(&'d') && c.get(i + 2) == Some(&'+') => {
                        t.push(Tok::Digits);
                        i += 3;
                    }
                    '\\' if c.get(i + 1) == Some(&'f') => {
                        t.push(Tok::Num);
                        i += 2;
                    }
                    '\\' => {
                        t.push(Tok::Lit(*c.get(i + 1).ok_or("dangling \\")?));
                        i += 2;
                    }
                    '(' => {
                        let end = c[i..].iter().position(|&x| x == ')').ok_or("no )")? + i;
                        let body: String = c[i + 1..end].iter().collect();
                        t.push(Tok::Alt(body.split('|').map(String::from).collect()));
                        i = end + 1;
                    }
                    ch => {
                        t.push(Tok::Lit(ch));
                        i += 1;
                    }
                }
            }
            Ok(Regex(t))
        }
        pub fn is_match(&self, s: &str) -> bool {
            fn m(t: &[Tok], s: &str) -> bool {
                let Some((first, rest)) = t.split_first() else {
                    return s.is_empty();
                };
                match first {
                    Tok::Lit(c) => s.strip_prefix(*c).is_some_and(|r| m(rest, r)),
                    Tok::Spaces | Tok::Digits => {
                        let pred = |ch: char| match first {
                            Tok::Spaces => ch == ' ',
                            _ => ch.is_ascii_digit(),
                        };
                        let n = s.chars().take_while(|&ch| pred(ch)).count();
                        (1..=n).rev().any(|k| m(rest, &s[k..]))
                    }
                    Tok::Num => {
                        let n = s.chars().take_while(|ch| ch.is_ascii_digit()).count();
                        n > 0
                            && s[n..].starts_with('.')
                            && s[n + 1..]
                                .chars()
                                .next()
                                .is_some_and(|c| c.is_ascii_digit())
                            && m(rest, &s[n + 2..])
                    }
                    Tok::Alt(alts) => alts
                        .iter()
                        .any(|a| s.strip_prefix(a.as_str()).is_some_and(|r| m(rest, r))),
                }
            }
            m(&self.0, s)
        }
    }
}

const HEADER_LINE: &str = "# Tests are approximate using memory only (no storage IO).";
const PBKDF2_RE: &str =
    r"PBKDF2-(sha1|sha256|sha512|ripemd160|whirlpool) +\d+ iterations per second for \d+-bit key";
const ARGON2_RE: &str = r"(argon2i|argon2id) +\d+ iterations, +\d+ memory, \d+ parallel threads \(CPUs\) for \d+-bit key \(requested \d+ ms time\)";
const TABLE_HEAD: &str = "#     Algorithm |       Key |      Encryption |      Decryption";

fn cipher_line_ok(l: &str) -> bool {
    // "%15s  %9zub  %10.1f MiB/s  %10.1f MiB/s"
    re(r" +(aes|serpent|twofish)-(cbc|xts) +\d+b +\f MiB/s +\f MiB/s").is_match(l)
        && l.len() == 15 + 2 + 10 + 2 + 10 + 6 + 2 + 10 + 6
}

/// Our regular expressions describe real cryptsetup's KDF lines (when cryptsetup can run
/// its KDF benchmark here), so they are not just our own idea of the format.
#[test]
fn benchmark_kdf_lines_match_cryptsetup() {
    let ours = lukskit(&["benchmark", "--pbkdf", "pbkdf2", "--hash", "sha256"], b"")
        .ok("benchmark pbkdf2");
    let lines: Vec<&str> = ours.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", ours.stdout);
    assert_eq!(lines[0], HEADER_LINE);
    assert!(re(PBKDF2_RE).is_match(lines[1]), "{}", lines[1]);
    assert!(lines[1].starts_with("PBKDF2-sha256    "));
    let a = lukskit(
        &[
            "benchmark",
            "--pbkdf",
            "argon2id",
            "--iter-time",
            "200",
            "--pbkdf-memory",
            "16384",
        ],
        b"",
    )
    .ok("benchmark argon2id");
    let al: Vec<&str> = a.stdout.lines().collect();
    assert_eq!(al.len(), 2, "{}", a.stdout);
    assert!(re(ARGON2_RE).is_match(al[1]), "{}", al[1]);
    assert!(al[1].ends_with("for 256-bit key (requested 200 ms time)"));
    if let Some(r) = cryptsetup(&["benchmark", "--pbkdf", "pbkdf2", "--hash", "sha256"], b"") {
        if r.code == 0 {
            let cl: Vec<&str> = r.stdout.lines().collect();
            assert_eq!(cl[0], HEADER_LINE);
            assert!(re(PBKDF2_RE).is_match(cl[1]), "cryptsetup: {}", cl[1]);
            // Both lines are cryptsetup's "PBKDF2-%-9s %7u iterations per second for %zu-bit
            // key" of their own count (lukskit's SHA-NI PBKDF2 can pass 9999999 per second,
            // where %7u widens the column as it would for cryptsetup).
            let relayout = |l: &str| {
                let n: u64 = l.split_whitespace().nth(1).unwrap().parse().unwrap();
                format!(
                    "PBKDF2-{:<9} {n:>7} iterations per second for 256-bit key",
                    "sha256"
                )
            };
            assert_eq!(relayout(cl[1]), cl[1], "cryptsetup's line");
            assert_eq!(relayout(lines[1]), lines[1], "our line");
        }
        if let Some(r) = cryptsetup(
            &[
                "benchmark",
                "--pbkdf",
                "argon2id",
                "--iter-time",
                "200",
                "--pbkdf-memory",
                "16384",
            ],
            b"",
        ) {
            if r.code == 0 {
                let cl: Vec<&str> = r.stdout.lines().collect();
                assert!(re(ARGON2_RE).is_match(cl[1]), "cryptsetup: {}", cl[1]);
                // The lane count both print: cryptsetup's default 4, not capped at the CPUs.
                let threads = |l: &str| {
                    l.split(" parallel threads")
                        .next()
                        .and_then(|h| h.rsplit(' ').next())
                        .map(str::to_owned)
                };
                assert_eq!(
                    threads(al[1]),
                    threads(cl[1]),
                    "ours: {}\ncryptsetup: {}",
                    al[1],
                    cl[1]
                );
            }
        }
    }
}

#[test]
fn benchmark_one_cipher_and_json() {
    let r = lukskit_env(
        &[
            "benchmark",
            "--engine",
            "lukskit",
            "--cipher",
            "aes-xts-plain64",
            "-s",
            "512",
        ],
        b"",
        &[("LUKSKIT_BENCH_MS", "100")],
    )
    .ok("benchmark --cipher");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", r.stdout);
    // Measured with the default 4096-byte sectors: a note says so (cryptsetup's are 512).
    assert_eq!(
        lines[3],
        "# Ciphers measured with 4096-byte sectors; cryptsetup's table is for 512-byte \
         sectors (--sector-size 512 to compare)."
    );
    // cryptsetup's one-cipher table is only as wide as the name (at least 11 columns):
    // "#%*s Algorithm |…" with width − 11 spaces, then "%*s-%s  %9db  %10.1f MiB/s  …".
    assert_eq!(
        lines[1],
        "# Algorithm |       Key |      Encryption |      Decryption"
    );
    assert!(
        lines[2].starts_with("    aes-xts        512b "),
        "{:?}",
        lines[2]
    );
    assert!(
        cipher_line_ok(&format!("    {}", lines[2])),
        "{:?}",
        lines[2]
    );
    let r = lukskit_env(
        &[
            "benchmark",
            "--engine",
            "lukskit",
            "--cipher",
            "twofish-cbc-essiv:sha256",
            "--threads",
            "2",
        ],
        b"",
        &[("LUKSKIT_BENCH_MS", "100")],
    )
    .ok("benchmark twofish");
    let l: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        l[1],
        "# Algorithm |       Key |      Encryption |      Decryption"
    );
    assert!(l[2].starts_with("twofish-cbc        256b "), "{:?}", l[2]);
    let r = lukskit_env(
        &[
            "benchmark",
            "--engine",
            "lukskit",
            "--cipher",
            "serpent-xts-plain64",
            "-s",
            "512",
        ],
        b"",
        &[("LUKSKIT_BENCH_MS", "50")],
    )
    .ok("benchmark serpent");
    let l: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        l[1],
        "# Algorithm |       Key |      Encryption |      Decryption"
    );
    assert!(l[2].starts_with("serpent-xts        512b "), "{:?}", l[2]);
    let r = lukskit_env(
        &[
            "benchmark",
            "--engine",
            "lukskit",
            "--cipher",
            "aes-xts-plain64",
            "--json",
            "--sector-size",
            "512",
        ],
        b"",
        &[("LUKSKIT_BENCH_MS", "100")],
    )
    .ok("benchmark --json");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON output");
    assert_eq!(v["sector_size"], 512);
    assert_eq!(v["ciphers"][0]["algorithm"], "aes-xts");
    assert_eq!(v["ciphers"][0]["key_bits"], 256);
    assert!(v["ciphers"][0]["encryption_mib_s"].as_f64().unwrap() > 0.0);
    let r = lukskit(&["benchmark", "--cipher", "blowfish-xts-plain64"], b"");
    assert_eq!(r.code, 1);
    assert!(r
        .stderr
        .contains("Cipher blowfish-xts-plain64 (with 256 bits key) is not available."));
}

/// The whole default run: KDF lines, then the table header and the twelve cipher lines in
/// cryptsetup's order.
#[test]
fn benchmark_full_output_format() {
    let r = lukskit_env(
        &[
            "benchmark",
            "--engine",
            "lukskit",
            "--pbkdf-memory",
            "8192",
            "--iter-time",
            "100",
        ],
        b"",
        &[("LUKSKIT_BENCH_MS", "20")],
    )
    .ok("benchmark");
    let l: Vec<&str> = r.stdout.lines().collect();
    // The last line is the note on the 4096-byte sectors.
    assert_eq!(l.len(), 1 + 5 + 2 + 1 + 12 + 1, "{}", r.stdout);
    assert!(l[21].starts_with("# Ciphers measured with 4096-byte sectors"));
    assert_eq!(l[0], HEADER_LINE);
    for (i, h) in ["sha1", "sha256", "sha512", "ripemd160", "whirlpool"]
        .iter()
        .enumerate()
    {
        assert!(re(PBKDF2_RE).is_match(l[1 + i]), "{}", l[1 + i]);
        assert!(l[1 + i].starts_with(&format!("PBKDF2-{h} ")));
    }
    assert!(l[6].starts_with("argon2i    ") && re(ARGON2_RE).is_match(l[6]));
    assert!(l[7].starts_with("argon2id   ") && re(ARGON2_RE).is_match(l[7]));
    assert_eq!(l[8], TABLE_HEAD);
    let expect = [
        ("aes-cbc", 128),
        ("serpent-cbc", 128),
        ("twofish-cbc", 128),
        ("aes-cbc", 256),
        ("serpent-cbc", 256),
        ("twofish-cbc", 256),
        ("aes-xts", 256),
        ("serpent-xts", 256),
        ("twofish-xts", 256),
        ("aes-xts", 512),
        ("serpent-xts", 512),
        ("twofish-xts", 512),
    ];
    for (i, (name, bits)) in expect.iter().enumerate() {
        let line = l[9 + i];
        assert!(cipher_line_ok(line), "{line:?}");
        assert!(
            line.starts_with(&format!("{name:>15}  {bits:>9}b")),
            "{line:?}"
        );
    }
}

/// `--engine`: where this kernel has no AF_ALG (this host), `kernel` fails with cryptsetup's
/// lines and exit 1 (after the KDF lines in the full table), `auto` and the default measure
/// lukskit's engine, and `all` prints N/A in the kernel's columns; where AF_ALG exists,
/// `kernel` prints cryptsetup's line format without the sector note. (The comparison with
/// cryptsetup's own AF_ALG benchmark runs in the reference VM: refvm_kernel.)
#[test]
fn benchmark_engines() {
    let env = [("LUKSKIT_BENCH_MS", "20")];
    let one = |engine: &str| {
        lukskit_env(
            &["benchmark", "--engine", engine, "-c", "aes-xts-plain64"],
            b"",
            &env,
        )
    };
    let lk = one("lukskit").ok("benchmark --engine lukskit");
    assert!(lk
        .stdout
        .contains("# Ciphers measured with 4096-byte sectors"));
    let all = one("all").ok("benchmark --engine all");
    let l: Vec<&str> = all.stdout.lines().collect();
    assert_eq!(
        l[1],
        "#     Algorithm |       Key |  Kernel encrypt |  Kernel decrypt | lukskit encrypt | lukskit decrypt"
    );
    assert!(
        l[2].starts_with(&format!("{:>15}  {:>9}b  ", "aes-xts", 256)),
        "{:?}",
        l[2]
    );
    let bad = lukskit(&["benchmark", "--engine", "fast"], b"");
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("Unknown engine fast"), "{}", bad.stderr);
    if lukskit_crypto::engine::kernel_api::af_alg_available() {
        let k = one("kernel").ok("benchmark --engine kernel");
        let l: Vec<&str> = k.stdout.lines().collect();
        assert_eq!(l.len(), 3, "{}", k.stdout);
        assert!(cipher_line_ok(&format!("    {}", l[2])), "{:?}", l[2]);
        assert_eq!(l[2].matches("N/A").count(), 0, "{:?}", l[2]);
        return;
    }
    // No AF_ALG: the default is lukskit's engine, and the kernel's columns are N/A.
    let auto = one("auto").ok("benchmark --engine auto");
    assert!(auto
        .stdout
        .contains("# Ciphers measured with 4096-byte sectors"));
    assert_eq!(l[2].matches("N/A").count(), 2, "{:?}", l[2]);
    assert_eq!(l[2].matches(" MiB/s").count(), 2, "{:?}", l[2]);
    let k = one("kernel");
    assert_eq!(k.code, 1);
    assert_eq!(
        k.stderr,
        "Cipher aes-xts-plain64 (with 256 bits key) is not available.\n\
         Required kernel crypto interface not available.\n\
         Ensure you have algif_skcipher kernel module loaded.\n"
    );
    assert_eq!(k.stdout, format!("{HEADER_LINE}\n"));
    let full = lukskit_env(
        &[
            "benchmark",
            "--engine",
            "kernel",
            "--pbkdf-memory",
            "8192",
            "--iter-time",
            "100",
        ],
        b"",
        &env,
    );
    assert_eq!(full.code, 1);
    assert_eq!(full.stdout.lines().count(), 1 + 5 + 2, "{}", full.stdout);
    assert!(full
        .stderr
        .starts_with("Required kernel crypto interface not available.\n"));
    // image: the kernel engine is refused with the same message.
    let dir = common::tmp();
    let plain = dir.path().join("p");
    std::fs::write(&plain, vec![7u8; 8192]).unwrap();
    std::fs::write(dir.path().join("k"), [1u8; 64]).unwrap();
    let img = dir.path().join("i");
    let r = lukskit(
        &[
            "image",
            "encrypt",
            "-q",
            "--type",
            "plain",
            "-d",
            dir.path().join("k").to_str().unwrap(),
            "--engine",
            "kernel",
            plain.to_str().unwrap(),
            img.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(r.code, 1);
    assert!(r
        .stderr
        .contains("Required kernel crypto interface not available."));
}

/// `image encrypt` of `plain` into `image` with key file `key` and a fast PBKDF, in batch mode.
fn encrypt_quickly(key: &str, plain: &str, image: &str) -> Run {
    lukskit(
        &[
            "image",
            "encrypt",
            "-q",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            "-d",
            key,
            plain,
            image,
        ],
        b"",
    )
}

/// Start `image encrypt - IMAGE` with the plaintext from a pipe, feed it `fed` bytes, then
/// send `signal` while it waits for more; returns the run's exit code and standard error.
fn interrupted_encrypt(dir: &Path, image: &str, extra: &[&str], signal: i32) -> (i32, String) {
    use std::io::{Read, Write};
    // 64 bytes: a passphrase for LUKS, the whole 512-bit XTS key for plain mode.
    let key = write_file(dir, "k-int", &[b'k'; 64]);
    let mut args = vec!["image", "encrypt", "-q", "--pbkdf", "pbkdf2"];
    args.extend_from_slice(&["--pbkdf-force-iterations", "1000", "-d", &key]);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-", image]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lukskit"))
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // More than one pipeline chunk, so the data path is running when the signal comes.
    let fed = stdin
        .write_all(&plaintext(8 << 20, 9))
        .and_then(|()| stdin.flush());
    std::thread::sleep(std::time::Duration::from_millis(700));
    // SAFETY: kill with a pid of our own child and a valid signal number.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    // The pipe ends too, as a Ctrl-C ends `cat` on the other side: end of input must not
    // pass for a complete plaintext.
    drop(stdin);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(fed.is_ok(), "the plaintext was not taken: {err}");
    (child.wait().unwrap().code().unwrap_or(-1), err)
}

/// Issue 35 item 3: SIGINT or SIGTERM during `image encrypt` never leaves something that
/// looks complete: an image file is not there under its name (an earlier file of that name
/// is untouched), no temporary file is left, and on a block device there is no LUKS header
/// that cryptsetup would take; an uninterrupted run still produces an image cryptsetup opens.
#[test]
fn an_interrupted_image_encrypt_leaves_nothing_that_looks_complete() {
    if !have_cryptsetup("interrupted image encrypt") {
        return;
    }
    let d = tmp();
    let img = path_str(&d.path().join("int.img"));
    for (signal, extra) in [
        (libc::SIGINT, vec![]),
        (libc::SIGTERM, vec!["--type", "luks1"]),
        (
            libc::SIGINT,
            vec!["--type", "plain", "-c", "aes-xts-plain64"],
        ),
    ] {
        let (code, err) = interrupted_encrypt(d.path(), &img, &extra, signal);
        assert_eq!(code, 1, "{extra:?}: {err}");
        assert!(err.contains("Interrupted"), "{extra:?}: {err}");
        assert!(!Path::new(&img).exists(), "{extra:?}: an image was left");
    }
    // An earlier file under the image's name is left as it was.
    std::fs::write(&img, b"earlier contents").unwrap();
    let (code, _) = interrupted_encrypt(d.path(), &img, &[], libc::SIGINT);
    assert_eq!(code, 1);
    assert_eq!(std::fs::read(&img).unwrap(), b"earlier contents");
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("lukskit-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");

    // A block device: the header stays hidden, so cryptsetup finds no LUKS device.
    if capable_loop("interrupted image encrypt (block device)") {
        let backing = sparse(d.path(), "blk", 64 << 20);
        let lo = sh(&format!("losetup --find --show {backing}"))
            .trim()
            .to_string();
        let (code, err) = interrupted_encrypt(d.path(), &lo, &[], libc::SIGINT);
        let is_luks = cryptsetup(&["isLuks", &lo], b"").unwrap().code;
        // Uninterrupted, the same device becomes a LUKS volume holding the plaintext.
        let plain = write_file(d.path(), "blk-plain", &plaintext(3 << 20, 5));
        let key = path_str(&d.path().join("k-int"));
        let done = encrypt_quickly(&key, &plain, &lo);
        let done_is_luks = cryptsetup(&["isLuks", &lo], b"").unwrap().code;
        let back = path_str(&d.path().join("blk-back"));
        let decrypted = lukskit(&["image", "decrypt", "-q", "-d", &key, &lo, &back], b"");
        let _ = Command::new("losetup").args(["-d", &lo]).status();
        assert_eq!(code, 1, "{err}");
        assert!(
            err.contains("Interrupted"),
            "not stopped by the signal: {err}"
        );
        assert_ne!(
            is_luks, 0,
            "an interrupted block device looks like a LUKS volume"
        );
        done.ok("image encrypt onto a block device");
        assert_eq!(done_is_luks, 0, "cryptsetup isLuks after image encrypt");
        decrypted.ok("image decrypt of the block device");
        let back = std::fs::read(&back).unwrap();
        let plain = std::fs::read(&plain).unwrap();
        assert!(back[..plain.len()] == plain[..], "plaintext differs");
    }

    // Not interrupted: the image is complete and cryptsetup opens it.
    let key = write_file(d.path(), "k-ok", b"complete");
    let plain = write_file(d.path(), "plain", &plaintext(3 << 20, 4));
    encrypt_quickly(&key, &plain, &img).ok("image encrypt");
    cryptsetup(&["open", "--test-passphrase", "-d", &key, &img], b"")
        .unwrap()
        .ok("cryptsetup opens the finished image");
}

/// Whether loop devices can be made here (root with loop support).
fn capable_loop(test: &str) -> bool {
    common::mapping::capable(test)
}

fn sh(cmd: &str) -> String {
    common::mapping::sh(cmd)
}
