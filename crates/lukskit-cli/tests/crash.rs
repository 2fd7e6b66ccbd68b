//! Crash injection: the process is stopped (`_exit`, no cleanup) before its Nth metadata
//! write or Nth sync, for every N an operation reaches. Afterwards the volume must open with
//! the old or the new secret (per what the command does), and real cryptsetup must agree with
//! lukskit on every secret (`open --test-passphrase`) and on whether the header is readable
//! at all (`luksDump`).
//!
//! Every metadata-changing command is covered: luksFormat, luksAddKey, luksChangeKey,
//! luksRemoveKey, luksKillSlot, luksConvertKey, config --label, convert (both ways),
//! token add/import/remove, repair and luksHeaderRestore. The number of crash points tried
//! is printed (`crash points tried: N`).

mod common;
use common::*;

const CRASH_STATUS: i32 = 86;

/// The key files every scenario uses: k0 is in slot 0, k1 in slot 1, k2 is the new secret.
const K0: usize = 0;
const K1: usize = 1;
const K2: usize = 2;

/// Does `kf` open `img`? Asserts that real cryptsetup gives the same answer.
fn opens(img: &str, kf: &str, what: &str) -> bool {
    let ours = lukskit(&["open", "--test-passphrase", "-d", kf, img], b"").code == 0;
    if let Some(c) = cryptsetup(&["open", "--test-passphrase", "-d", kf, img], b"") {
        assert_eq!(
            c.code == 0,
            ours,
            "{what}: cryptsetup and lukskit disagree on {kf}: cryptsetup: {}",
            c.stderr
        );
    }
    ours
}

/// Is the header readable (`luksDump` succeeds)? Asserts that cryptsetup agrees.
fn dumps(img: &str, what: &str) -> bool {
    let ours = lukskit(&["luksDump", img], b"").code == 0;
    if let Some(c) = cryptsetup(&["luksDump", img], b"") {
        assert_eq!(
            c.code == 0,
            ours,
            "{what}: cryptsetup and lukskit disagree on luksDump: cryptsetup: {}",
            c.stderr
        );
    }
    ours
}

/// What must hold after a crash at any point of one command.
struct Expect {
    /// Secrets that open before and after the command: they must always open.
    must: &'static [usize],
    /// (old, new): at least one of the two must open.
    either: Option<(usize, usize)>,
}

/// How the image is prepared before each run of the command.
#[derive(Clone, Copy, PartialEq)]
enum Start {
    /// An empty (zeroed) file: for luksFormat.
    Blank,
    /// A volume of the given type with k0 in slot 0 and k1 in slot 1.
    Volume,
    /// Such a volume whose secondary LUKS2 header was damaged (for repair).
    DamagedSecondary,
}

/// Builds a command line from the image path, the key files and the scratch directory.
type CommandBuilder<'a> = Box<dyn Fn(&str, &[String], &str) -> Vec<String> + 'a>;

/// One scenario: a command line built from the image path, the key files and the directory.
struct Scenario<'a> {
    kind: &'a str,
    name: &'a str,
    start: Start,
    op: CommandBuilder<'a>,
    expect: Expect,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn fast() -> Vec<String> {
    strings(&FAST)
}

/// Build the starting image for `kind` with k0 (slot 0) and k1 (slot 1).
fn make_volume(dir: &std::path::Path, kind: &str, keys: &[String]) -> String {
    let base = sparse(dir, &format!("base-{kind}.img"), 20 << 20);
    let mut fmt = vec!["luksFormat", "-q", "--type", kind, "-d", &keys[K0]];
    fmt.extend_from_slice(&FAST);
    if kind == "luks2" {
        // 512-byte sectors, so that `convert --type luks1` is possible.
        fmt.extend_from_slice(&["--sector-size", "512"]);
    }
    fmt.push(&base);
    lukskit(&fmt, b"").ok("format");
    let mut add = vec!["luksAddKey", "-q", "-d", &keys[K0], &base, &keys[K1]];
    add.extend_from_slice(&FAST);
    lukskit(&add, b"").ok("add k1");
    base
}

/// Run the scenario with a crash at every write and every sync; return the crash points.
fn crash_all(dir: &std::path::Path, keys: &[String], s: &Scenario) -> usize {
    let pristine = match s.start {
        Start::Blank => vec![0u8; 20 << 20],
        Start::Volume | Start::DamagedSecondary => {
            let base = make_volume(dir, s.kind, keys);
            let mut b = std::fs::read(&base).unwrap();
            if s.start == Start::DamagedSecondary {
                // The secondary header starts right after the primary one (hdr_size at 8).
                let hdr = u64::from_be_bytes(b[8..16].try_into().unwrap()) as usize;
                b[hdr + 0x40..hdr + 0x48].copy_from_slice(b"garbage!");
            }
            b
        }
    };
    let img = dir.join(format!("work-{}-{}.img", s.kind, s.name));
    let img = img.to_str().unwrap().to_string();
    let dirs = dir.to_str().unwrap();
    let mut points = 0;
    for what in ["write", "sync"] {
        for n in 1.. {
            std::fs::write(&img, &pristine).unwrap();
            let args = (s.op)(&img, keys, dirs);
            let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            let spec = format!("{what}:{n}");
            let r = lukskit_env(&argv, b"", &[("LUKSKIT_CRASH_AT", &spec)]);
            let label = format!("{} {} crashed at {spec}", s.kind, s.name);
            if r.code == 0 {
                // Ran to completion: the new state must hold too.
                check(
                    &img,
                    keys,
                    s,
                    &format!("{} {} completed", s.kind, s.name),
                    true,
                );
                break;
            }
            assert_eq!(
                r.code, CRASH_STATUS,
                "{label}: unexpected failure {}",
                r.stderr
            );
            points += 1;
            check(&img, keys, s, &label, false);
            assert!(n < 500, "{label}: runaway");
        }
    }
    points
}

/// Check the image after a crash (or after completion when `done`).
fn check(img: &str, keys: &[String], s: &Scenario, label: &str, done: bool) {
    // Both tools agree on whether the header can be read at all, and on every secret.
    dumps(img, label);
    let open: Vec<bool> = keys.iter().map(|k| opens(img, k, label)).collect();
    for &m in s.expect.must {
        assert!(open[m], "{label}: secret k{m} (untouched) no longer opens");
    }
    if let Some((old, new)) = s.expect.either {
        assert!(
            open[old] || open[new],
            "{label}: neither the old (k{old}) nor the new (k{new}) secret opens"
        );
        if done {
            assert!(open[new], "{label}: the new secret k{new} does not open");
        }
    }
}

fn scenarios<'a>(kind: &'a str) -> Vec<Scenario<'a>> {
    let mut v: Vec<Scenario<'a>> = vec![
        Scenario {
            kind,
            name: "luksFormat",
            start: Start::Blank,
            op: Box::new(move |img, k, _| {
                let mut v = strings(&["luksFormat", "-q", "--type", kind, "-d", &k[K2]]);
                v.extend(fast());
                v.push(img.into());
                v
            }),
            // A format that never completed owes nothing; on completion k2 opens.
            expect: Expect {
                must: &[],
                either: None,
            },
        },
        Scenario {
            kind,
            name: "luksAddKey",
            start: Start::Volume,
            op: Box::new(|img, k, _| {
                let mut v = strings(&["luksAddKey", "-q", "-d", &k[K1], img, &k[K2]]);
                v.extend(fast());
                v
            }),
            expect: Expect {
                must: &[K0, K1],
                either: Some((K1, K2)),
            },
        },
        Scenario {
            kind,
            name: "luksChangeKey",
            start: Start::Volume,
            op: Box::new(|img, k, _| {
                let mut v = strings(&["luksChangeKey", "-q", "-d", &k[K1], img, &k[K2]]);
                v.extend(fast());
                v
            }),
            expect: Expect {
                must: &[K0],
                either: Some((K1, K2)),
            },
        },
        Scenario {
            kind,
            name: "luksKillSlot",
            start: Start::Volume,
            op: Box::new(|img, _k, _| strings(&["luksKillSlot", "-q", img, "1"])),
            expect: Expect {
                must: &[K0],
                either: None,
            },
        },
        Scenario {
            kind,
            name: "luksRemoveKey",
            start: Start::Volume,
            op: Box::new(|img, k, _| strings(&["luksRemoveKey", "-q", "-d", &k[K1], img])),
            expect: Expect {
                must: &[K0],
                either: None,
            },
        },
        Scenario {
            kind,
            name: "luksHeaderRestore",
            start: Start::Volume,
            op: Box::new(|img, _k, d| {
                let b = format!(
                    "{d}/backup-{}.hdr",
                    if img.contains("luks1") { 1 } else { 2 }
                );
                strings(&["luksHeaderRestore", "-q", "--header-backup-file", &b, img])
            }),
            // The backup has k0 in slot 0 and k2 (instead of k1) in slot 1.
            expect: Expect {
                must: &[K0],
                either: Some((K1, K2)),
            },
        },
        Scenario {
            kind,
            name: "convert",
            start: Start::Volume,
            op: Box::new(move |img, _k, _| {
                let to = if kind == "luks1" { "luks2" } else { "luks1" };
                strings(&["convert", "-q", "--type", to, img])
            }),
            // Not crash safe, in cryptsetup either (its man page: "The convert action can
            // destroy the LUKS header in the case of a crash during conversion"): the keyslot
            // areas are moved in place over the old ones before the new header is written.
            // Only agreement with cryptsetup is required; see RELIABILITY.md.
            expect: Expect {
                must: &[],
                either: None,
            },
        },
    ];
    if kind == "luks2" {
        v.extend([
            Scenario {
                kind,
                name: "luksConvertKey",
                start: Start::Volume,
                op: Box::new(|img, k, _| {
                    strings(&[
                        "luksConvertKey",
                        "-q",
                        "-d",
                        &k[K1],
                        "--pbkdf",
                        "pbkdf2",
                        "--pbkdf-force-iterations",
                        "1001",
                        img,
                    ])
                }),
                expect: Expect {
                    must: &[K0, K1],
                    either: None,
                },
            },
            Scenario {
                kind,
                name: "config-label",
                start: Start::Volume,
                op: Box::new(|img, _k, _| strings(&["config", "--label", "crashy", img])),
                expect: Expect {
                    must: &[K0, K1],
                    either: None,
                },
            },
            Scenario {
                kind,
                name: "token-add",
                start: Start::Volume,
                op: Box::new(|img, _k, _| {
                    strings(&["token", "add", "--key-description", "crash:desc", img])
                }),
                expect: Expect {
                    must: &[K0, K1],
                    either: None,
                },
            },
            Scenario {
                kind,
                name: "token-import-remove",
                start: Start::Volume,
                op: Box::new(|img, _k, d| {
                    // Import then remove in one shell-free sequence is two commands; crash
                    // points of the removal are covered by `token-remove` below.
                    let j = format!("{d}/token.json");
                    strings(&["token", "import", "--json-file", &j, img])
                }),
                expect: Expect {
                    must: &[K0, K1],
                    either: None,
                },
            },
            Scenario {
                kind,
                name: "repair",
                start: Start::DamagedSecondary,
                op: Box::new(|img, _k, _| strings(&["repair", "-q", img])),
                expect: Expect {
                    must: &[K0, K1],
                    either: None,
                },
            },
        ]);
    }
    v
}

#[test]
fn crash_at_every_write_keeps_a_working_secret() {
    if !have_cryptsetup("crash injection") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let keys = vec![
        write_file(d, "k0", b"zero"),
        write_file(d, "k1", b"one"),
        write_file(d, "k2", b"two"),
    ];
    write_file(
        d,
        "token.json",
        br#"{"type":"luks2-keyring","keyslots":["1"],"key_description":"crash:import"}"#,
    );
    // Header backups for luksHeaderRestore: the same volume with k1 changed to k2.
    for (kind, n) in [("luks1", 1), ("luks2", 2)] {
        let v = make_volume(d, kind, &keys);
        let mut ch = vec!["luksChangeKey", "-q", "-d", &keys[K1], &v, &keys[K2]];
        ch.extend_from_slice(&FAST);
        lukskit(&ch, b"").ok("change k1 for backup");
        let b = format!("{}/backup-{n}.hdr", d.to_str().unwrap());
        lukskit(
            &["luksHeaderBackup", "-q", "--header-backup-file", &b, &v],
            b"",
        )
        .ok("header backup");
    }
    let mut total = 0;
    let mut per = Vec::new();
    for kind in ["luks1", "luks2"] {
        for s in scenarios(kind) {
            let t0 = std::time::Instant::now();
            let n = crash_all(d, &keys, &s);
            eprintln!("{kind} {}: {n} crash points ({:.1?})", s.name, t0.elapsed());
            per.push(format!("{kind} {}: {n}", s.name));
            total += n;
        }
    }
    // Token removal: start from a volume that already has the imported token.
    total += crash_token_remove(d, &keys);
    eprintln!("crash points per command: {}", per.join(", "));
    eprintln!("crash points tried: {total}");
    assert!(
        total >= 60,
        "too few crash points ({total}): injection not reaching the writes?"
    );
}

/// `token remove` on a LUKS2 volume holding token 0.
fn crash_token_remove(d: &std::path::Path, keys: &[String]) -> usize {
    let base = make_volume(d, "luks2", keys);
    let j = format!("{}/token.json", d.to_str().unwrap());
    lukskit(&["token", "import", "--json-file", &j, &base], b"").ok("token import");
    let pristine = std::fs::read(&base).unwrap();
    let img = format!("{}/work-token-remove.img", d.to_str().unwrap());
    let mut points = 0;
    for what in ["write", "sync"] {
        for n in 1.. {
            std::fs::write(&img, &pristine).unwrap();
            let spec = format!("{what}:{n}");
            let label = format!("luks2 token-remove crashed at {spec}");
            let r = lukskit_env(
                &["token", "remove", "--token-id", "0", &img],
                b"",
                &[("LUKSKIT_CRASH_AT", &spec)],
            );
            dumps(&img, &label);
            for (i, k) in keys.iter().enumerate().take(2) {
                assert!(opens(&img, k, &label), "{label}: k{i} lost");
            }
            if r.code == 0 {
                break;
            }
            assert_eq!(r.code, CRASH_STATUS, "{label}: {}", r.stderr);
            points += 1;
            assert!(n < 500, "{label}: runaway");
        }
    }
    points
}

/// Ctrl-C (SIGINT) at every write and every sync of the commands that rewrite a header
/// without asking for a secret first (luksHeaderRestore, convert, luksKillSlot, config,
/// token, with `-q`), and of `reencrypt --init-only`: as cryptsetup 2.6.1, which catches
/// SIGINT for its whole run, the metadata update is finished and the command then fails
/// (exit 1), so the volume is never left half-written (which would look like a LUKS header
/// but not open, or for `convert` not be one at all). Each run must end with exit 1 and the
/// command's complete result, which real cryptsetup must read the same way.
#[test]
fn sigint_at_every_write_finishes_the_header_update() {
    if !have_cryptsetup("sigint at every write") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let keys = vec![
        write_file(d, "k0", b"zero"),
        write_file(d, "k1", b"one"),
        write_file(d, "k2", b"two"),
    ];
    let ds = d.to_str().unwrap().to_string();
    write_file(
        d,
        "token.json",
        br#"{"type":"luks2-keyring","keyslots":["1"],"key_description":"sigint:import"}"#,
    );
    for (kind, n) in [("luks1", 1), ("luks2", 2)] {
        let v = make_volume(d, kind, &keys);
        let mut ch = vec!["luksChangeKey", "-q", "-d", &keys[K1], &v, &keys[K2]];
        ch.extend_from_slice(&FAST);
        lukskit(&ch, b"").ok("change k1 for backup");
        let b = format!("{ds}/backup-{n}.hdr");
        lukskit(
            &["luksHeaderBackup", "-q", "--header-backup-file", &b, &v],
            b"",
        )
        .ok("header backup");
    }
    // One keyslot (k0) for reencrypt: a key file alone names it.
    let single = sparse(d, "single.img", 20 << 20);
    let mut fmt = vec!["luksFormat", "-q", "--type", "luks2", "-d", &keys[K0]];
    fmt.extend_from_slice(&FAST);
    fmt.push(&single);
    lukskit(&fmt, b"").ok("format single");

    type Done<'a> = Box<dyn Fn(&str, &str) + 'a>;
    let version = |img: &str, want: &str, label: &str| {
        if let Some(c) = cryptsetup(&["isLuks", "--type", want, img], b"") {
            assert_eq!(
                c.code, 0,
                "{label}: not {want} for cryptsetup: {}",
                c.stderr
            );
        }
    };
    let opens_as = |img: &str, label: &str, want: &[bool]| {
        dumps(img, label);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(opens(img, k, label), want[i], "{label}: k{i}");
        }
    };
    let mut cases: Vec<(String, String, Vec<String>, Done)> = Vec::new();
    for kind in ["luks1", "luks2"] {
        let base = make_volume(d, kind, &keys);
        let n = if kind == "luks1" { 1 } else { 2 };
        let b = format!("{ds}/backup-{n}.hdr");
        cases.push((
            format!("{kind} luksHeaderRestore"),
            base.clone(),
            strings(&["luksHeaderRestore", "-q", "--header-backup-file", &b]),
            Box::new(|img, l| opens_as(img, l, &[true, false, true])),
        ));
        let to = if kind == "luks1" { "luks2" } else { "luks1" };
        cases.push((
            format!("{kind} convert"),
            base.clone(),
            strings(&["convert", "-q", "--type", to]),
            Box::new(move |img, l| {
                version(img, to, l);
                opens_as(img, l, &[true, true, false]);
            }),
        ));
        cases.push((
            format!("{kind} luksKillSlot"),
            base.clone(),
            strings(&["luksKillSlot", "-q"]),
            Box::new(|img, l| opens_as(img, l, &[true, false, false])),
        ));
        if kind == "luks2" {
            cases.push((
                format!("{kind} config --label"),
                base.clone(),
                strings(&["config", "--label", "interrupted"]),
                Box::new(|img, l| {
                    opens_as(img, l, &[true, true, false]);
                    let dump = lukskit(&["luksDump", img], b"").stdout;
                    assert!(dump.contains("interrupted"), "{l}: label not set:\n{dump}");
                }),
            ));
            let j = format!("{ds}/token.json");
            cases.push((
                format!("{kind} token import"),
                base.clone(),
                strings(&["token", "import", "--json-file", &j]),
                Box::new(|img, l| {
                    opens_as(img, l, &[true, true, false]);
                    let dump = lukskit(&["luksDump", img], b"").stdout;
                    assert!(dump.contains("sigint:import"), "{l}: no token:\n{dump}");
                }),
            ));
            let k0 = keys[K0].clone();
            cases.push((
                "luks2 reencrypt --init-only".into(),
                single.clone(),
                {
                    let mut v = strings(&[
                        "reencrypt",
                        "-q",
                        "--force-offline-reencrypt",
                        "--init-only",
                        "-d",
                        &keys[K0],
                    ]);
                    v.extend(fast());
                    v
                },
                Box::new(move |img, l| {
                    // Initialised (the header says so to cryptsetup), and it finishes.
                    if let Some(c) = cryptsetup(&["luksDump", img], b"") {
                        assert!(
                            c.stdout.contains("online-reencrypt"),
                            "{l}: no re-encryption in the header:\n{}",
                            c.stdout
                        );
                    }
                    let mut r = vec![
                        "reencrypt",
                        "-q",
                        "--force-offline-reencrypt",
                        "--resume-only",
                        "-d",
                        &k0,
                    ];
                    r.extend_from_slice(&FAST);
                    r.push(img);
                    lukskit(&r, b"").ok(&format!("{l}: resume"));
                    assert!(opens(img, &k0, l), "{l}: k0 after the re-encryption");
                }),
            ));
        }
    }
    let mut points = 0;
    for (name, base, args, done) in &cases {
        let pristine = std::fs::read(base).unwrap();
        let img = format!("{ds}/sigint.img");
        for what in ["write", "sync"] {
            for n in 1.. {
                std::fs::write(&img, &pristine).unwrap();
                let spec = format!("{what}:{n}");
                let mut argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
                let slot = ["1"];
                argv.push(&img);
                if name.ends_with("luksKillSlot") {
                    argv.extend_from_slice(&slot);
                }
                let r = lukskit_env(&argv, b"", &[("LUKSKIT_SIGINT_AT", &spec)]);
                let label = format!("{name} with SIGINT at {spec}");
                if r.code == 0 {
                    // No such point: the command ran without a signal.
                    done(&img, &format!("{name} uninterrupted"));
                    break;
                }
                assert_eq!(
                    r.code, 1,
                    "{label}: exit {} (-1: killed by the signal), not 1: {}",
                    r.code, r.stderr
                );
                done(&img, &label);
                points += 1;
                assert!(n < 500, "{label}: runaway");
            }
        }
    }
    eprintln!("SIGINT points tried: {points}");
    assert!(points >= 20, "too few SIGINT points ({points})");
}
