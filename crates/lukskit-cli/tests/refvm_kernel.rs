//! The kernel backend against cryptsetup 2.6.1 and real dm-crypt (reference VM, script
//! tests/refvm/kernel/open.sh): for LUKS2 (keyring key), LUKS1 (hex key), LUKS2 with
//! Serpent and 4096-byte sectors, read-only with discards and every --perf-* flag, plain mode
//! with --offset/--skip, an image file (loop device), a LUKS2 image with a detached header
//! and a volume on a device-mapper device (status names it /dev/mapper/NAME, as cryptsetup),
//! `lukskit open` must make the mapping
//! cryptsetup makes — the same `dmsetup table --showkeys` line, DM UUID (but for the name),
//! attributes and `cryptsetup status` text — and `lukskit status` must print what
//! `cryptsetup status` prints. cryptsetup closes lukskit's mappings and lukskit closes
//! cryptsetup's (refusing while mounted, exit 5); ext4 written through lukskit's mapping is
//! fsck-clean and readable through cryptsetup's. luksSuspend, luksResume and resize (down
//! with --size, then grown to the device) leave lukskit's mapping in exactly the states they
//! leave cryptsetup's in, and each tool resumes the other's suspended mapping. `open
//! --persistent` and `refresh` (with and without --persistent) store the same LUKS2 flags
//! and give the same tables as cryptsetup's, and cryptsetup applies the flags lukskit stored.

mod common;
mod refvm_common;

use std::collections::BTreeMap;

const CASES: [&str; 8] = [
    "luks2",
    "luks1",
    "luks2-4k-serpent",
    "luks2-flags",
    "plain",
    "image",
    "detached",
    "stacked",
];

#[test]
fn kernel_mappings_match_cryptsetup() {
    const T: &str = "refvm_kernel";
    let dir = common::tmp();
    // The other formats' images, on an ext4 disk (/dev/vdd) the guest mounts at /host.
    let Some(images) = other_format_images(T, dir.path()) else {
        return;
    };
    let formats_sh = refvm_common::refvm_dir().join("kernel/formats.sh");
    let kcapi_sh = refvm_common::refvm_dir().join("kernel/kcapi.sh");
    let options = [
        "--copy".as_ref(),
        formats_sh.as_os_str(),
        "--copy".as_ref(),
        kcapi_sh.as_os_str(),
    ];
    // About 150 s on an idle host here (one boot), the other formats, and ~60 s of the
    // kernel engine and benchmark, `open --engine` and `engines` (kernel/kcapi.sh).
    let run = refvm_common::ScriptRun {
        options: &options,
        more_disks: &[images.as_os_str()],
        ..refvm_common::ScriptRun::new(T, "kernel/open.sh", dir.path(), 3, 600)
    };
    let Some(r) = run.run() else {
        return;
    };
    let out = &r.stdout;
    assert!(out.contains("kernel: done"), "{out}");
    other_formats_match(out);
    kernel_engine_matches(out);
    // (case, tool) -> lines of its block, with the mapping name normalised.
    let mut blocks: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut lk_status: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (case, tool, line) in refvm_common::block_lines(out) {
        let key = (case, tool);
        let norm = line
            .replace("csmap", "NAME")
            .replace("lkmap", "NAME")
            .replace("lifemap", "NAME");
        if let Some(s) = norm.strip_prefix("lkstatus: ") {
            lk_status
                .entry(key.0.clone())
                .or_default()
                .push(s.to_string());
        } else if ["table: ", "uuid: ", "attr: ", "status: "]
            .iter()
            .any(|p| norm.starts_with(p))
        {
            blocks.entry(key).or_default().push(norm);
        }
    }
    for case in CASES {
        let theirs = blocks
            .get(&(case.to_string(), "cryptsetup".to_string()))
            .unwrap_or_else(|| panic!("{case}: no cryptsetup block in:\n{out}"));
        let ours = blocks
            .get(&(case.to_string(), "lukskit".to_string()))
            .unwrap_or_else(|| panic!("{case}: no lukskit block (open failed?) in:\n{out}"));
        assert!(
            theirs.iter().any(|l| l.starts_with("table: 0 ")),
            "{case}: {theirs:?}"
        );
        assert_eq!(
            ours, theirs,
            "{case}: lukskit's mapping against cryptsetup's"
        );
        let status_of_ours: Vec<String> = ours
            .iter()
            .filter_map(|l| l.strip_prefix("status: ").map(str::to_string))
            .collect();
        assert_eq!(
            lk_status.get(case),
            Some(&status_of_ours),
            "{case}: `lukskit status` against `cryptsetup status`"
        );
        assert!(
            out.contains(&format!("{case}: cryptsetup closed lukskit's mapping")),
            "{case}: cryptsetup could not close lukskit's mapping:\n{out}"
        );
    }
    // luksSuspend, luksResume (by either tool), resize down and grow: every state of
    // lukskit's mapping equals the state cryptsetup's own lifecycle leaves.
    for state in ["suspended", "resumed", "shrunk", "grown"] {
        let reference = blocks
            .get(&(
                format!("life-cryptsetup-cryptsetup-{state}"),
                "cryptsetup".to_string(),
            ))
            .unwrap_or_else(|| panic!("no cryptsetup {state} block in:\n{out}"));
        for (run, tool) in [
            ("lukskit-lukskit", "lukskit"),
            ("lukskit-cryptsetup", "lukskit"),
            ("cryptsetup-lukskit", "cryptsetup"),
        ] {
            let got = blocks.get(&(format!("life-{run}-{state}"), tool.to_string()));
            assert_eq!(
                got,
                Some(reference),
                "life-{run} {state}: against cryptsetup's own lifecycle"
            );
        }
        for run in [
            "cryptsetup-cryptsetup",
            "lukskit-lukskit",
            "lukskit-cryptsetup",
            "cryptsetup-lukskit",
        ] {
            for step in ["suspend", "resume", "resize", "grow"] {
                let line = format!("life-{run} {step} rc=0");
                assert!(out.contains(&line), "missing {line:?} in:\n{out}");
            }
            let line = format!("life-{run} data intact after resume");
            assert!(out.contains(&line), "missing {line:?} in:\n{out}");
            let line = format!("life-{run} resume-not-suspended rc=1");
            assert!(out.contains(&line), "missing {line:?} in:\n{out}");
        }
    }
    // --persistent and refresh: lukskit stores the flags cryptsetup stores, opens and
    // refreshes to the same tables, and cryptsetup applies the flags lukskit stored. The
    // volumes were formatted separately: their UUIDs are masked.
    let mask = |l: &String| -> String {
        let mut out = String::new();
        let mut rest = l.as_str();
        while let Some(i) = rest.find("CRYPT-LUKS2-") {
            out.push_str(&rest[..i + 12]);
            out.push('U');
            rest = &rest[(i + 12 + 32).min(rest.len())..];
        }
        out.push_str(rest);
        match out.find("cryptsetup:") {
            Some(i) if out.len() >= i + 11 + 36 => {
                format!("{}U{}", &out[..i + 11], &out[i + 11 + 36..])
            }
            _ => out,
        }
    };
    for state in ["opened", "reopened", "refreshed", "refreshed2"] {
        let get = |tool: &str| -> Vec<String> {
            blocks
                .get(&(format!("persist-{tool}-{state}"), tool.to_string()))
                .unwrap_or_else(|| panic!("no persist-{tool}-{state} block in:\n{out}"))
                .iter()
                .map(mask)
                .collect()
        };
        assert_eq!(
            get("lukskit"),
            get("cryptsetup"),
            "--persistent/refresh, {state}: lukskit against cryptsetup"
        );
    }
    for what in ["stored", "restored"] {
        let line = |tool: &str| {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("persist-{tool} {what}: ")))
                .unwrap_or_else(|| panic!("no {what} flags for {tool} in:\n{out}"))
                .to_string()
        };
        assert_eq!(
            line("lukskit"),
            line("cryptsetup"),
            "{what} persistent flags"
        );
    }
    for tool in ["cryptsetup", "lukskit"] {
        for step in ["open", "refresh", "refresh2"] {
            let line = format!("persist-{tool} {step} rc=0");
            assert!(out.contains(&line), "missing {line:?} in:\n{out}");
        }
    }
    for expect in [
        "data: fsck clean through cryptsetup",
        "data: read hello",
        "Device csmap is still in use.",
        "close-in-use rc=5",
        "lukskit closed cryptsetup's mapping",
        "No devices found",
    ] {
        assert!(out.contains(expect), "missing {expect:?} in:\n{out}");
    }
}

/// ../shared/testdata/other-formats unpacked (sparse, as the set's README says) onto a new
/// ext4 disk image `dir/formats.ext4` (holes kept), or None after [`common::skip_or_fail`]
/// when the set is absent.
fn other_format_images(test: &str, dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let set = common::other_formats_dir();
    let tree = dir.join("formats");
    std::fs::create_dir(&tree).unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(&set).into_iter().flatten() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".tar.xz") {
            assert!(common::unpack_other_formats(test, &name, &tree));
            n += 1;
        }
    }
    if n == 0 {
        common::skip_or_fail(test, &format!("no image archives in {}", set.display()));
        return None;
    }
    made_legacy_images(&tree.join("tcrypt-made"));
    bitlk_volume_keys(&tree.join("bitlk"));
    let disk = dir.join("formats.ext4");
    let apparent: u64 = walk(&tree).iter().map(|m| m.len()).sum();
    std::fs::File::create(&disk)
        .and_then(|f| f.set_len(apparent + apparent / 4 + (64 << 20)))
        .unwrap();
    let st = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-d"])
        .arg(&tree)
        .arg(&disk)
        .status()
        .expect("mkfs.ext4");
    assert!(st.success(), "mkfs.ext4 -d {tree:?}");
    Some(disk)
}

/// The volume key of each BitLocker image with a password or a startup key that the host's
/// cryptsetup unlocks, as it gives it (`bitlkDump --dump-volume-key`), written beside it as
/// `NAME.vk`: kernel/formats.sh has cryptsetup in the VM map the images with these keys
/// (`--volume-key-file`), which leaves out its key derivation there (a million SHA-256 rounds:
/// 35 s per image under TCG), while lukskit unlocks them with their secrets. What the secrets
/// give is checked on the host, natively (tests/bitlk.rs: both tools' key dumps, the
/// decrypted volumes' checksums from images.conf).
fn bitlk_volume_keys(dir: &std::path::Path) {
    let conf = dir.join("images.conf");
    if !conf.is_file() {
        return;
    }
    for (name, c) in common::bitlk_images_conf(&conf) {
        let pw = c.get("PW").filter(|p| !p.is_empty());
        let sk = c.get("SK_VMK_GUID").filter(|p| !p.is_empty());
        let img = dir.join(format!("{name}.img")).display().to_string();
        let (secret, bek) = match (pw, sk) {
            (Some(pw), _) => (pw.as_bytes(), None),
            (None, Some(sk)) => {
                let bek = dir.join(format!("{}.BEK", sk.to_uppercase()));
                (&b""[..], Some(bek.display().to_string()))
            }
            (None, None) => continue,
        };
        let mut args = vec!["bitlkDump", "--dump-volume-key", "-q"];
        if let Some(bek) = &bek {
            args.extend(["--key-file", bek]);
        }
        args.push(&img);
        let r = common::cryptsetup(&args, secret).expect("cryptsetup");
        if r.code != 0 {
            // cryptsetup cannot unlock it (an image of a larger set it refuses): no key file,
            // so in the VM it is given the secret and its refusal is compared as before.
            continue;
        }
        let key = hex::decode(common::mk_dump(&r.stdout)).unwrap();
        assert!(key.len() >= 16, "{name}: {}", r.stdout);
        std::fs::write(dir.join(format!("{name}.vk")), key).unwrap();
    }
}

/// The legacy TrueCrypt volumes kernel/formats.sh opens besides the set's: headers in the
/// cbc-tcw and cbc-tcrypt modes written by scripts/tc-legacy-image.py (python3-cryptography
/// over OpenSSL, independent of lukskit), named as the set names its images (aes-cbc-tcw is
/// the set's own tc_1-sha1-cbc-aes, written by TrueCrypt).
const MADE_LEGACY: [&str; 4] = [
    "tc_1-ripemd160-cbc-cast5",
    "tc_1-sha1-cbc-des3_ede",
    "tc_1-sha1-cbc-blowfish_le",
    "tc_1-ripemd160-cbc-blowfish_le-aes",
];

fn made_legacy_images(dir: &std::path::Path) {
    std::fs::create_dir(dir).unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/tc-legacy-image.py");
    for name in MADE_LEGACY {
        let mut parts = name.splitn(4, '-');
        let (hash, chain) = (parts.nth(1).unwrap(), parts.nth(1).unwrap());
        let out = std::process::Command::new("python3")
            .arg(&script)
            .arg(dir.join(name))
            .args([chain, hash, "aaaaaaaaaaaa", "1048576"])
            .output()
            .expect("python3");
        assert!(
            out.status.success(),
            "tc-legacy-image.py {name} (python3 with python3-cryptography is needed): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The metadata of every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::fs::Metadata> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let m = e.metadata().unwrap();
        if m.is_dir() {
            out.extend(walk(&e.path()));
        } else {
            out.push(m);
        }
    }
    out
}

/// What lukskit cannot map yet where cryptsetup can (issue 31): the mapping shape (from
/// the image's name) and the start of lukskit's refusal. A case listed here must still be
/// refused with exactly this message; once lukskit maps it, the entry has to go. (Empty
/// since the tcw IV generator: TrueCrypt ≤ 4's cbc-tcw volumes map as cryptsetup's.)
const KNOWN_GAPS: [(&str, &str); 0] = [];

/// Where lukskit knowingly does more than the reference cryptsetup: VeraCrypt's `stribog512`
/// key derivation, which Debian's cryptsetup 2.6.1 (OpenSSL backend, no GOST provider) does
/// not have: it finds no header; lukskit maps the volume, and the file system inside must be
/// the image's (README of the set: DEAD-BABE, CAFE-BABE in a hidden volume).
const BEYOND_CRYPTSETUP: [&str; 1] = ["-stribog512-"];

/// Every TCRYPT, BITLK, FVAULT2 and loop-AES volume kernel/formats.sh opened: lukskit's
/// kernel mappings (the whole stack of a cascade: tables with keys, DM UUIDs, attributes),
/// `cryptsetup status` of them and the data read through them equal cryptsetup's (and, for
/// system encryption given a partition, tcryptDump; lukskit's passphrase test there passes);
/// where cryptsetup refuses a volume, lukskit refuses it with the same exit code and message.
fn other_formats_match(out: &str) {
    assert!(out.contains("formats: done"), "{out}");
    assert!(
        out.contains("fmt-syspart-test-passphrase: lukskit rc=0\n"),
        "lukskit's passphrase test on the system partition:\n{out}"
    );
    let mut blocks: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (case, tool, line) in refvm_common::block_lines(out) {
        if case.starts_with("fmt-")
            && ["dev: ", "status: ", "data: ", "fs: ", "refused: ", "dump: "]
                .iter()
                .any(|p| line.starts_with(p))
        {
            blocks
                .entry((case, tool))
                .or_default()
                .push(line.to_string());
        }
    }
    let cases: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_suffix(": compared"))
        .collect();
    // Each format had a volume both tools mapped.
    for kind in [
        "fmt-tc_",
        "fmt-syspart-",
        "fmt-bitlk-",
        "fmt-fvault2-",
        "fmt-loopaes-",
    ] {
        assert!(
            cases.iter().any(|c| c.starts_with(kind)
                && blocks
                    .get(&(c.to_string(), "lukskit".to_string()))
                    .is_some_and(|b| b.iter().any(|l| l.starts_with("dev: top table: 0 ")))),
            "no {kind}* volume was mapped by both tools:\n{out}"
        );
    }
    for case in &cases {
        let get = |tool: &str| {
            blocks
                .get(&(case.to_string(), tool.to_string()))
                .unwrap_or_else(|| panic!("{case}: no {tool} block:\n{out}"))
        };
        let (theirs, ours) = (get("cryptsetup"), get("lukskit"));
        if BEYOND_CRYPTSETUP.iter().any(|b| case.contains(b))
            && theirs.len() == 1
            && theirs[0].starts_with("refused: ")
        {
            assert!(
                theirs[0].contains("No device header detected with this passphrase."),
                "{case}: cryptsetup's refusal: {theirs:?}"
            );
            let uuid = if case.ends_with("-hidden") {
                "CAFE-BABE"
            } else {
                "DEAD-BABE"
            };
            assert!(
                ours.iter().any(|l| l.starts_with("dev: top table: 0 "))
                    && ours.contains(&format!("fs: {uuid}")),
                "{case}: lukskit's mapping of what cryptsetup cannot derive: {ours:?}"
            );
            continue;
        }
        if let Some((_, refusal)) = KNOWN_GAPS.iter().find(|(shape, _)| case.ends_with(shape)) {
            assert!(
                ours.len() == 1 && ours[0].starts_with(refusal),
                "{case}: a known gap no longer refused as listed: {ours:?}"
            );
            continue;
        }
        assert_eq!(
            ours, theirs,
            "{case}: lukskit's kernel mapping (or refusal) against cryptsetup's"
        );
    }
    // The legacy headers made on the host: each tool found every one; the cbc-tcw ones are
    // mapped (and so compared above), the blowfish_le ones refused as cryptsetup refuses them.
    for name in MADE_LEGACY {
        let case = format!("fmt-made-{name}");
        for tool in ["cryptsetup", "lukskit"] {
            let b = blocks
                .get(&(case.clone(), tool.to_string()))
                .unwrap_or_else(|| panic!("{case}: no {tool} block:\n{out}"));
            if name.contains("blowfish_le") {
                assert!(
                    b.len() == 1
                        && b[0].contains(
                            "Kernel does not support activation for this TCRYPT legacy mode."
                        ),
                    "{case} {tool}: {b:?}"
                );
            } else {
                assert!(
                    b.iter().any(|l| l.starts_with("dev: top table: 0 ")),
                    "{case} {tool}: {b:?}"
                );
            }
        }
    }
    for bad in [" close failed", " left "] {
        assert!(
            !out.lines()
                .any(|l| l.starts_with("fmt-") && l.contains(bad)),
            "{out}"
        );
    }
}

/// The specs kernel/kcapi.sh encrypts with the kernel engine (AF_ALG): every spec of the
/// refvm_matrix, each with one key size and sector size.
const KCAPI_CASES: usize = 19;

/// kernel/kcapi.sh: for every spec the kernel engine's image equals lukskit's engine's, the
/// kernel engine decrypts lukskit's, and dm-crypt reads the plaintext back from the kernel
/// engine's image; `lukskit benchmark` prints the lines `cryptsetup benchmark` prints (the same
/// text but for the figures, the same N/A lines and errors) with figures within a factor of
/// four of cryptsetup's (both measure the same kernel drivers through AF_ALG).
fn kernel_engine_matches(out: &str) {
    assert!(out.contains("kcapi: done"), "{out}");
    let cases: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("kcapi: "))
        .filter(|l| *l != "done" && !l.starts_with("took "))
        .collect();
    assert_eq!(cases.len(), KCAPI_CASES, "{out}");
    for c in &cases {
        assert!(
            c.ends_with("kernel=same decrypt=same dm-crypt=same"),
            "kernel engine: {c}\n{out}"
        );
    }
    let mut bench: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for l in out.lines() {
        if let Some(rest) = l.strip_prefix("kcbench: ") {
            let mut it = rest.splitn(3, ' ');
            let (tool, case) = (it.next().unwrap(), it.next().unwrap().trim_end_matches(':'));
            bench
                .entry((tool.to_string(), case.to_string()))
                .or_default()
                .push(it.next().unwrap_or("").to_string());
        }
    }
    let get = |tool: &str, case: &str| -> &Vec<String> {
        bench
            .get(&(tool.to_string(), case.to_string()))
            .unwrap_or_else(|| panic!("no {tool} {case} benchmark in:\n{out}"))
    };
    let is_num = |t: &str| t.parse::<f64>().is_ok();
    for case in ["table", "xts", "cbc128", "badkey", "missing"] {
        let (mut cs, mut lk) = (
            get("cryptsetup", case).clone(),
            get("lukskit", case).clone(),
        );
        if matches!(case, "badkey" | "missing") {
            // Errors only: stderr and stdout interleave differently through the pipe.
            cs.sort();
            lk.sort();
        }
        assert_eq!(cs.len(), lk.len(), "{case}: {cs:#?} against {lk:#?}");
        for (a, b) in cs.iter().zip(&lk) {
            let (ta, tb): (Vec<&str>, Vec<&str>) = (
                a.split_whitespace().collect(),
                b.split_whitespace().collect(),
            );
            assert_eq!(ta.len(), tb.len(), "{case}: {a:?} against {b:?}");
            for (x, y) in ta.iter().zip(&tb) {
                assert_eq!(is_num(x), is_num(y), "{case}: {a:?} against {b:?}");
                if !is_num(x) {
                    assert_eq!(x, y, "{case}: {a:?} against {b:?}");
                }
            }
            if a.contains(" MiB/s") {
                // Cipher lines: the same columns, and figures as ratios within noise.
                assert_eq!(a.len(), b.len(), "{case}: {a:?} against {b:?}");
                for (x, y) in ta.iter().zip(&tb).filter(|(x, _)| is_num(x)) {
                    let r = y.parse::<f64>().unwrap() / x.parse::<f64>().unwrap();
                    assert!(
                        (0.25..=4.0).contains(&r),
                        "{case}: lukskit/cryptsetup = {r:.2}: {a:?} against {b:?}"
                    );
                }
            } else if !ta.iter().any(|t| is_num(t)) {
                // Headers, N/A lines and errors: the same text.
                assert_eq!(a, b, "{case}");
            }
        }
    }
    for l in out
        .lines()
        .filter(|l| l.starts_with("kcbench: ") || l.starts_with("kcapi: took"))
    {
        eprintln!("{l}");
    }
    let all = get("lukskit", "all");
    assert!(all[1].contains("Kernel encrypt"), "{all:?}");
    assert_eq!(all[2].matches(" MiB/s").count(), 4, "{all:?}");
    open_engines_match(out);
    engines_follow_proc_crypto(out);
}

/// Lines of `out` starting with `prefix`, without it.
fn with_prefix<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
}

/// kernel/kcapi.sh, `open --engine`: the serving process wrote the same image with each
/// engine (FUSE + loop device and FUSE file), dm-crypt reads the plaintext back, `status`
/// names the engine (and the kernel driver), `auto` falls back to lukskit's engine where the
/// kernel engine cannot serve the spec (lmk) and remembers its measurements owner-only.
fn open_engines_match(out: &str) {
    let cases = with_prefix(out, "kcopen: ");
    assert_eq!(cases.len(), 5, "{out}");
    for c in &cases {
        if c.starts_with("aes-cbc-lmk ") {
            assert!(
                c.ends_with("kernel=missing auto=same dm-crypt=same"),
                "{c}\n{out}"
            );
        } else {
            assert!(
                c.ends_with("kernel=same auto=same dm-crypt=same"),
                "{c}\n{out}"
            );
        }
    }
    let status = with_prefix(out, "kcstatus: ");
    let line = |e: &str, spec: &str| -> &str {
        status
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{e} {spec}: ")))
            .unwrap_or_else(|| panic!("no status of {e} {spec}:\n{out}"))
    };
    assert_eq!(
        line("kernel", "aes-xts-plain64").trim(),
        "engine:  kernel xts(aes), driver xts-aes-aesni (cpu)"
    );
    assert_eq!(
        line("kernel", "aes-cbc-essiv:sha256").trim(),
        "engine:  kernel cbc(aes), driver cbc-aes-aesni (cpu)"
    );
    assert!(
        line("kernel", "aes-cbc-lmk").starts_with("refused: "),
        "{out}"
    );
    for spec in ["aes-xts-plain64", "serpent-xts-plain64", "aes-cbc-lmk"] {
        assert!(
            line("lukskit", spec)
                .trim()
                .starts_with("engine:  lukskit "),
            "{out}"
        );
        assert!(line("auto", spec).ends_with(" (--engine auto)"), "{out}");
    }
    assert!(line("auto", "aes-cbc-lmk")
        .trim()
        .starts_with("engine:  lukskit "));
    // image --engine auto wrote what lukskit's engine writes, after measuring.
    assert_eq!(
        with_prefix(out, "kcimage: "),
        ["twofish-xts-plain64 512 512: auto=same"],
        "{out}"
    );
    let auto = with_prefix(out, "kcauto: ");
    // One file per spec the kernel engine can serve (lmk is decided without measuring),
    // the image's included.
    assert_eq!(auto.len(), 5, "{out}");
    assert!(
        auto.iter()
            .any(|a| a.contains("\"spec\":\"twofish-xts-plain64\"")
                && a.contains("\"key_bits\":512")),
        "{out}"
    );
    for a in auto {
        assert!(
            a.starts_with("700 600 root {\"version\":1,\"spec\":"),
            "{a}"
        );
    }
}

/// kernel/kcapi.sh, `engines`: the driver it names for aes-xts-plain64 is the one
/// /proc/crypto's entries give by the kernel's rule (computed by the script with awk), before
/// and after aesni_intel is unloaded; it changes from AES-NI to the generic C code, and the
/// status of a mapping served by the kernel engine names the same driver each time. While
/// such a mapping is open, the driver's module cannot be unloaded.
fn engines_follow_proc_crypto(out: &str) {
    let e = with_prefix(out, "kcengines: ");
    let get = |k: &str| -> &str {
        e.iter()
            .find_map(|l| l.strip_prefix(k))
            .unwrap_or_else(|| panic!("no kcengines {k}:\n{out}"))
    };
    let drivers = |stage: &str| -> (String, String) {
        let l = get(&format!("{stage}: engines="));
        let (a, b) = l.split_once(" proc=").unwrap();
        (a.to_string(), b.to_string())
    };
    let (loaded, proc_loaded) = drivers("loaded");
    assert_eq!(loaded, proc_loaded, "{out}");
    assert_eq!(loaded, "xts-aes-aesni", "{out}");
    assert!(
        get("loaded status: ").contains("driver xts-aes-aesni (cpu)"),
        "{out}"
    );
    assert_eq!(get("loaded rmmod-while-served: "), "refused", "{out}");
    assert_eq!(get("rmmod: "), "done", "{out}");
    let (unloaded, proc_unloaded) = drivers("unloaded");
    assert_eq!(unloaded, proc_unloaded, "{out}");
    assert_ne!(unloaded, loaded, "{out}");
    assert!(unloaded.contains("aes-generic"), "{out}");
    assert!(
        get("unloaded status: ").contains(&format!("driver {unloaded} (generic)")),
        "{out}"
    );
    // --json says the same.
    let json = |stage: &str| -> serde_json::Value {
        let l = out
            .lines()
            .find_map(|l| l.strip_prefix(&format!("kcengines-json: {stage}: ")))
            .unwrap_or_else(|| panic!("no json {stage}:\n{out}"));
        serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))
    };
    assert_eq!(
        json("loaded")["ciphers"][0]["driver"]["driver"],
        "xts-aes-aesni"
    );
    assert_eq!(
        json("unloaded")["ciphers"][0]["driver"]["driver"],
        unloaded.as_str()
    );
    assert_eq!(
        json("unloaded")["ciphers"][0]["driver"]["implementation"],
        "generic"
    );
}
