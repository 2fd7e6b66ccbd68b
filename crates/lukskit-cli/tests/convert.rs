//! `convert --type luks1|luks2`: every result is compared with what real cryptsetup's own
//! conversion of an identical copy produces — byte for byte, apart from the two random
//! per-copy salts (and therefore the checksums) of a new LUKS2 header — and every refusal
//! with cryptsetup's refusal of the same image (exit code, message, device untouched).

mod common;
use common::*;
use std::path::Path;

const FAST: [&str; 2] = ["--pbkdf-force-iterations", "1000"];
const PBKDF2: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];

/// Byte ranges of a 16 KiB-per-copy LUKS2 header that are random per conversion: the salt
/// (104..168) and the checksum (448..512) of the primary and of the secondary binary header.
fn random_in_luks2(off: usize) -> bool {
    [0usize, 16384]
        .iter()
        .any(|b| (b + 104..b + 168).contains(&off) || (b + 448..b + 512).contains(&off))
}

fn read(p: &str) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

/// Copy `src` to `dir/name` and return the new path.
fn copy(src: &str, dir: &Path, name: &str) -> String {
    let dst = dir.join(name);
    std::fs::copy(src, &dst).unwrap();
    dst.to_str().unwrap().to_string()
}

/// Two converted images are identical, except (for LUKS2 results) the salts and checksums.
fn assert_same_image(ours: &str, theirs: &str, luks2: bool, what: &str) {
    let (a, b) = (read(ours), read(theirs));
    assert_eq!(a.len(), b.len(), "{what}: image sizes differ");
    let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let unexpected: Vec<&usize> = diff
        .iter()
        .filter(|&&i| !(luks2 && random_in_luks2(i)))
        .collect();
    assert!(
        unexpected.is_empty(),
        "{what}: {} bytes differ from cryptsetup's result, first at {:?}",
        unexpected.len(),
        unexpected.first()
    );
    if luks2 {
        // The salts are fresh random in both tools' results, so they must differ.
        assert!(!diff.is_empty(), "{what}: LUKS2 salts are not random");
    }
}

fn cs(args: &[&str]) -> Run {
    cryptsetup(args, b"").expect("cryptsetup")
}

/// `luksDump` and (for LUKS2) `luksDump --dump-json-metadata` of real cryptsetup agree.
fn assert_same_dumps(ours: &str, theirs: &str, hdr: &[&str], luks2: bool, what: &str) {
    let with = |img: &str, extra: &[&str]| {
        let mut v = vec!["luksDump"];
        v.extend_from_slice(extra);
        v.extend_from_slice(hdr);
        v.push(img);
        let r = cs(&v).ok(&format!("cryptsetup luksDump {img}"));
        // The LUKS1 dump names the device.
        r.stdout.replace(img, "IMG")
    };
    assert_eq!(
        with(ours, &[]),
        with(theirs, &[]),
        "{what}: luksDump differs"
    );
    if luks2 {
        assert_eq!(
            with(ours, &["--dump-json-metadata"]),
            with(theirs, &["--dump-json-metadata"]),
            "{what}: JSON metadata differs"
        );
    }
}

/// Every key opens the image in cryptsetup and in lukskit, and yields `vk`.
fn assert_keys_open(img: &str, hdr: &[&str], keys: &[&str], vk: &str, what: &str) {
    for k in keys {
        let mut args = vec!["open", "--test-passphrase", "-d", k];
        args.extend_from_slice(hdr);
        args.push(img);
        cs(&args).ok(&format!("{what}: cryptsetup open with {k}"));
        lukskit(&args, b"").ok(&format!("{what}: lukskit open with {k}"));
        assert_eq!(
            volume_key_with("cryptsetup", img, k, hdr),
            vk,
            "{what}: volume key changed ({k})"
        );
    }
}

fn convert_args<'a>(kind: &'a str, hdr: &[&'a str], img: &'a str) -> Vec<&'a str> {
    let mut v = vec!["convert", "-q", "--type", kind];
    v.extend_from_slice(hdr);
    v.push(img);
    v
}

/// Convert copies of `src` with lukskit and with cryptsetup, compare them, and return both
/// paths (ours, theirs). With `data`, `src` is a detached header file and `data` the data
/// device.
fn convert_both(
    src: &str,
    dir: &Path,
    tag: &str,
    kind: &str,
    data: Option<&str>,
) -> (String, String) {
    let ours = copy(src, dir, &format!("{tag}-ours"));
    let theirs = copy(src, dir, &format!("{tag}-theirs"));
    let run = |img: &str, tool: &str| {
        let (hdr, target): (Vec<&str>, &str) = match data {
            Some(d) => (vec!["--header", img], d),
            None => (vec![], img),
        };
        let args = convert_args(kind, &hdr, target);
        let r = if tool == "lukskit" {
            lukskit(&args, b"")
        } else {
            cs(&args)
        };
        r.ok(&format!("{tool} {args:?}"));
    };
    run(&ours, "lukskit");
    run(&theirs, "cryptsetup");
    let luks2 = kind == "luks2";
    assert_same_image(&ours, &theirs, luks2, &format!("{tag} -> {kind}"));
    (ours, theirs)
}

struct Case<'a> {
    cipher: &'a str,
    bits: &'a str,
    extra: &'a [&'a str],
    second_slot: &'a str,
}

#[test]
fn luks1_to_luks2_and_back_match_cryptsetup() {
    if !have_cryptsetup("luks1_to_luks2_and_back_match_cryptsetup") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let k0 = write_file(d, "k0", b"first passphrase");
    let k1 = write_file(d, "k1", b"second passphrase");
    let cases = [
        Case {
            cipher: "aes-xts-plain64",
            bits: "512",
            extra: &[],
            second_slot: "1",
        },
        Case {
            cipher: "aes-cbc-essiv:sha256",
            bits: "256",
            extra: &[],
            second_slot: "1",
        },
        Case {
            cipher: "aes-xts-plain64",
            bits: "256",
            extra: &["-h", "sha1"],
            second_slot: "5",
        },
        Case {
            cipher: "aes-cbc-essiv:sha256",
            bits: "128",
            extra: &["-h", "sha512"],
            second_slot: "7",
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        let tag = format!("l1-{i}");
        let img = sparse(d, &format!("{tag}.img"), 24 << 20);
        let mut fmt = vec![
            "luksFormat",
            "-q",
            "--type",
            "luks1",
            "-c",
            c.cipher,
            "-s",
            c.bits,
            "-d",
            &k0,
        ];
        fmt.extend_from_slice(&FAST);
        fmt.extend_from_slice(c.extra);
        fmt.push(&img);
        cs(&fmt).ok("cryptsetup luksFormat luks1");
        let mut add = vec!["luksAddKey", "-q", "-d", &k0, "-S", c.second_slot];
        add.extend_from_slice(&FAST);
        add.extend_from_slice(&[&img, &k1]);
        cs(&add).ok("cryptsetup luksAddKey");
        let vk = volume_key_with("cryptsetup", &img, &k0, &[]);
        let what = format!("{} {} {:?}", c.cipher, c.bits, c.extra);

        // Up: LUKS1 -> LUKS2.
        let (ours2, theirs2) = convert_both(&img, d, &tag, "luks2", None);
        assert_same_dumps(&ours2, &theirs2, &[], true, &what);
        assert!(
            cs(&["isLuks", "--type", "luks2", &ours2]).code == 0,
            "{what}: not LUKS2"
        );
        assert_keys_open(&ours2, &[], &[&k0, &k1], &vk, &what);

        // Down again: LUKS2 -> LUKS1, from the same LUKS2 bytes (lukskit's result).
        let (ours1, theirs1) = convert_both(&ours2, d, &format!("{tag}-back"), "luks1", None);
        assert_same_dumps(&ours1, &theirs1, &[], false, &what);
        assert_keys_open(&ours1, &[], &[&k0, &k1], &vk, &what);
        // The round trip restores the original phdr and key material exactly.
        let (orig, back) = (read(&img), read(&ours1));
        let end = usize::try_from(
            cs(&["luksDump", &img])
                .stdout
                .lines()
                .filter_map(|l| l.trim().strip_prefix("Key material offset:"))
                .map(|v| v.trim().parse::<u64>().unwrap())
                .max()
                .unwrap()
                * 512,
        )
        .unwrap();
        assert_eq!(
            &orig[..end],
            &back[..end],
            "{what}: round trip changed the LUKS1 header"
        );
    }
}

#[test]
fn native_luks2_to_luks1_matches_cryptsetup() {
    if !have_cryptsetup("native_luks2_to_luks1_matches_cryptsetup") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let keys: Vec<String> = (0..3)
        .map(|i| write_file(d, &format!("k{i}"), format!("pass {i}").as_bytes()))
        .collect();
    // Keyslots 0 and 3 (inactive 1, 2, 4..7 get areas from the gaps), a 64 KiB metadata area,
    // and a non-default hash.
    let cases: [&[&str]; 3] = [
        &["-c", "aes-xts-plain64", "-s", "512"],
        &[
            "-c",
            "aes-cbc-essiv:sha256",
            "-s",
            "256",
            "--luks2-metadata-size",
            "64k",
        ],
        &["-c", "aes-xts-plain64", "-s", "256", "-h", "sha512"],
    ];
    for (i, extra) in cases.iter().enumerate() {
        let img = sparse(d, &format!("n{i}.img"), 24 << 20);
        let mut fmt = vec![
            "luksFormat",
            "-q",
            "--type",
            "luks2",
            "--sector-size",
            "512",
            "-d",
            &keys[0],
        ];
        fmt.extend_from_slice(&PBKDF2);
        fmt.extend_from_slice(extra);
        fmt.push(&img);
        cs(&fmt).ok("cryptsetup luksFormat luks2");
        let hash: Vec<&str> = extra
            .windows(2)
            .filter(|w| w[0] == "-h")
            .flat_map(|w| ["-h", w[1]])
            .collect();
        for (slot, k) in [("3", &keys[1]), ("1", &keys[2])] {
            let mut add = vec!["luksAddKey", "-q", "-d", &keys[0], "-S", slot];
            add.extend_from_slice(&PBKDF2);
            add.extend_from_slice(&hash);
            add.extend_from_slice(&[&img, k]);
            cs(&add).ok("cryptsetup luksAddKey");
        }
        cs(&["luksKillSlot", "-q", "-d", &keys[0], &img, "1"]).ok("cryptsetup luksKillSlot");
        let vk = volume_key_with("cryptsetup", &img, &keys[0], &[]);
        let what = format!("luks2 {extra:?}");
        let (ours, theirs) = convert_both(&img, d, &format!("n{i}"), "luks1", None);
        assert_same_dumps(&ours, &theirs, &[], false, &what);
        assert_keys_open(&ours, &[], &[&keys[0], &keys[1]], &vk, &what);
    }
}

#[test]
fn detached_header_converts_like_cryptsetup() {
    if !have_cryptsetup("detached_header_converts_like_cryptsetup") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let k0 = write_file(d, "k0", b"detached");
    let data = sparse(d, "data.img", 8 << 20);
    let hdr = d.join("h.hdr");
    let hdr = hdr.to_str().unwrap();
    let mut fmt = vec![
        "luksFormat",
        "-q",
        "--type",
        "luks1",
        "--header",
        hdr,
        "-d",
        &k0,
    ];
    fmt.extend_from_slice(&FAST);
    fmt.push(&data);
    cs(&fmt).ok("cryptsetup luksFormat --header");
    let vk = volume_key_with("cryptsetup", &data, &k0, &["--header", hdr]);
    // The 2068480-byte LUKS1 header file grows to hold the moved keyslots.
    let (ours2, theirs2) = convert_both(hdr, d, "hdr", "luks2", Some(&data));
    assert_same_dumps(&ours2, &theirs2, &[], true, "detached luks2");
    assert_keys_open(&data, &["--header", &ours2], &[&k0], &vk, "detached luks2");
    let (ours1, theirs1) = convert_both(&ours2, d, "hdr-back", "luks1", Some(&data));
    assert_same_dumps(&ours1, &theirs1, &[], false, "detached luks1");
    assert_keys_open(&data, &["--header", &ours1], &[&k0], &vk, "detached luks1");
}

/// Both tools refuse `convert -q [--type kind]` on copies of `src` with the same exit code and
/// message, and neither changes a byte.
fn refuse_like_cryptsetup(src: &str, dir: &Path, tag: &str, kind: Option<&str>) {
    let ours = copy(src, dir, &format!("{tag}-ours"));
    let theirs = copy(src, dir, &format!("{tag}-theirs"));
    let run = |img: &str, tool: &str| {
        let mut v = vec!["convert", "-q"];
        if let Some(k) = kind {
            v.extend_from_slice(&["--type", k]);
        }
        v.push(img);
        if tool == "lukskit" {
            lukskit(&v, b"")
        } else {
            cs(&v)
        }
    };
    let (o, t) = (run(&ours, "lukskit"), run(&theirs, "cryptsetup"));
    assert_ne!(t.code, 0, "{tag}: cryptsetup accepted the conversion");
    assert_eq!(
        o.code, t.code,
        "{tag}: exit codes differ: ours {} / theirs {}",
        o.stderr, t.stderr
    );
    let first = |r: &Run, img: &str| r.stderr.lines().next().map(|l| l.replace(img, "IMG"));
    assert_eq!(
        first(&o, &ours),
        first(&t, &theirs),
        "{tag}: messages differ"
    );
    let orig = read(src);
    assert!(
        read(&theirs) == orig,
        "{tag}: cryptsetup changed the device"
    );
    assert!(read(&ours) == orig, "{tag}: lukskit changed the device");
}

#[test]
fn refusals_match_cryptsetup() {
    if !have_cryptsetup("refusals_match_cryptsetup") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let k0 = write_file(d, "k0", b"zero");
    let k1 = write_file(d, "k1", b"one");
    let luks2 = |name: &str, extra: &[&str]| -> String {
        let img = sparse(d, name, 24 << 20);
        let mut fmt = vec!["luksFormat", "-q", "--type", "luks2", "-d", &k0];
        fmt.extend_from_slice(extra);
        fmt.push(&img);
        cs(&fmt).ok(&format!("cryptsetup luksFormat {extra:?}"));
        img
    };
    let pbkdf2_512: Vec<&str> = PBKDF2
        .iter()
        .copied()
        .chain(["--sector-size", "512"])
        .collect();

    // Argon2 keyslot.
    let img = luks2(
        "argon.img",
        &[
            "--pbkdf",
            "argon2id",
            "--pbkdf-force-iterations",
            "4",
            "--pbkdf-memory",
            "32",
            "--sector-size",
            "512",
        ],
    );
    refuse_like_cryptsetup(&img, d, "argon2", Some("luks1"));

    // 4096-byte encryption sectors.
    let mut s4k = PBKDF2.to_vec();
    s4k.extend_from_slice(&["--sector-size", "4096"]);
    let img = luks2("s4k.img", &s4k);
    refuse_like_cryptsetup(&img, d, "sector4096", Some("luks1"));

    // A token.
    let img = luks2("token.img", &pbkdf2_512);
    cs(&["token", "add", "--key-description", "lukskit:test", &img]).ok("token add");
    refuse_like_cryptsetup(&img, d, "token", Some("luks1"));

    // An unbound key (a second digest).
    let img = luks2("unbound.img", &pbkdf2_512);
    let mut add = vec!["luksAddKey", "-q", "--unbound", "-s", "512", "-d", &k0];
    add.extend_from_slice(&PBKDF2);
    add.extend_from_slice(&[&img, &k1]);
    cs(&add).ok("add unbound");
    refuse_like_cryptsetup(&img, d, "unbound", Some("luks1"));

    // A keyslot LUKS1 cannot number.
    let img = luks2("slot9.img", &pbkdf2_512);
    let mut add = vec!["luksAddKey", "-q", "-S", "9", "-d", &k0];
    add.extend_from_slice(&PBKDF2);
    add.extend_from_slice(&[&img, &k1]);
    cs(&add).ok("add slot 9");
    refuse_like_cryptsetup(&img, d, "slot9", Some("luks1"));

    // A keyslot whose PBKDF2/AF hash differs from the digest hash.
    let img = luks2("hash.img", &pbkdf2_512);
    let mut add = vec!["luksAddKey", "-q", "-h", "sha512", "-d", &k0];
    add.extend_from_slice(&PBKDF2);
    add.extend_from_slice(&[&img, &k1]);
    cs(&add).ok("add sha512 slot");
    refuse_like_cryptsetup(&img, d, "hash", Some("luks1"));

    // A keyslot encrypted with another cipher than the data.
    let img = luks2("kscipher.img", &pbkdf2_512);
    let mut add = vec![
        "luksAddKey",
        "-q",
        "--keyslot-cipher",
        "aes-cbc-essiv:sha256",
        "--keyslot-key-size",
        "256",
        "-d",
        &k0,
    ];
    add.extend_from_slice(&PBKDF2);
    add.extend_from_slice(&[&img, &k1]);
    cs(&add).ok("add keyslot with another cipher");
    refuse_like_cryptsetup(&img, d, "kscipher", Some("luks1"));

    // Already of the requested type; unsupported or missing --type.
    let img = luks2("same.img", &pbkdf2_512);
    refuse_like_cryptsetup(&img, d, "already2", Some("luks2"));
    refuse_like_cryptsetup(&img, d, "luks", Some("luks"));
    refuse_like_cryptsetup(&img, d, "notype", None);
    let l1 = sparse(d, "l1.img", 24 << 20);
    let mut fmt = vec!["luksFormat", "-q", "--type", "luks1", "-d", &k0];
    fmt.extend_from_slice(&FAST);
    fmt.push(&l1);
    cs(&fmt).ok("luksFormat luks1");
    refuse_like_cryptsetup(&l1, d, "already1", Some("luks1"));

    // luksmeta metadata right after the LUKS1 keyslots (512-bit key: 4040 sectors).
    let mut bytes = read(&l1);
    bytes[2068480..2068488].copy_from_slice(b"LUKSMETA");
    let lm = write_file(d, "luksmeta.img", &bytes);
    refuse_like_cryptsetup(&lm, d, "luksmeta", Some("luks2"));

    // Not LUKS at all.
    let plain = sparse(d, "zero.img", 1 << 20);
    refuse_like_cryptsetup(&plain, d, "notluks", Some("luks2"));
}

#[test]
fn unknown_requirements_are_refused() {
    if !have_cryptsetup("unknown_requirements_are_refused") {
        return;
    }
    let Some(td) = need_testdata("unknown_requirements_are_refused") else {
        return;
    };
    let dir = tmp();
    untar(&td, "luks2_header_requirements.tar.xz", dir.path());
    let img = dir.path().join("luks2_header_requirements");
    let img = img.to_str().unwrap();
    refuse_like_cryptsetup(img, dir.path(), "reqs", Some("luks1"));
}
