//! LUKS2 headers whose mandatory requirements forbid some operations, command by command
//! against real cryptsetup 2.6.1 on copies of the same image: the same output, exit code,
//! and the same bytes written (or none). Four kinds of header:
//!
//! * unknown requirements (`req0 req1`: cryptsetup's luks2_header_requirements image);
//! * `opal` (hardware OPAL, new in cryptsetup 2.7, so unknown to 2.6.1);
//! * a LUKS2 re-encryption in progress (`online-reencrypt-v2`, made by cryptsetup's
//!   `reencrypt --init-only`);
//! * the legacy LUKS2 offline re-encryption (`offline-reencrypt`).
//!
//! Before this test lukskit said "Operation not supported on a device with requirements
//! (…)" where cryptsetup says "Unmet LUKS2 requirements detected." or names the
//! re-encryption, set a new UUID on all four (cryptsetup refuses), tried the passphrase of
//! `luksAddKey` before the requirements, failed `erase` during a re-encryption, and dumped the
//! old volume key of a device in re-encryption where cryptsetup dumps the new one.

mod common;
use common::*;

const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];

/// The commands compared; `IMG` stands for the image, `KF` for the key file of its
/// passphrase, `K2` for another key file, `TOK` for a token's JSON file, `BK` for a backup.
const COMMANDS: &[&str] = &[
    "luksAddKey -q FAST -d KF IMG K2",
    "luksChangeKey -q FAST -d KF IMG K2",
    "luksConvertKey -q --pbkdf pbkdf2 -d KF IMG",
    "luksKillSlot -q IMG 0",
    "luksRemoveKey -q IMG KF",
    "config --label x IMG",
    "config --priority prefer -S 0 IMG",
    "luksUUID --uuid 12345678-1234-1234-1234-123456789012 -q IMG",
    "luksUUID IMG",
    "open --test-passphrase -d KF IMG",
    "token remove --token-id 0 IMG",
    "token import --json-file TOK IMG",
    "convert -q --type luks1 IMG",
    "luksHeaderBackup --header-backup-file BK IMG",
    "erase -q -v IMG",
    "reencrypt -q --force-offline-reencrypt -d KF IMG",
    "luksDump --dump-volume-key -q -d KF IMG",
    "luksDump IMG",
    "isLuks IMG",
];

struct Case {
    name: &'static str,
    image: String,
}

fn format(dir: &std::path::Path, name: &str, kf: &str) -> String {
    let img = sparse(dir, name, 20 << 20);
    let mut args = vec!["luksFormat", "-q", "--type", "luks2", "-d", kf, &img];
    args.extend(FAST);
    cryptsetup(&args, b"").unwrap().ok("luksFormat");
    img
}

fn set_requirements(img: &str, reqs: &[&str]) {
    let reqs: Vec<serde_json::Value> = reqs.iter().map(|r| (*r).into()).collect();
    rewrite_luks2_json(img, |j| {
        j["config"]["requirements"] = serde_json::json!({ "mandatory": reqs.clone() });
    });
}

fn cases(dir: &std::path::Path, kf: &str) -> Option<Vec<Case>> {
    let td = need_testdata("requirements")?;
    untar(&td, "luks2_header_requirements.tar.xz", dir);
    let unknown = dir.join("luks2_header_requirements");
    let opal = format(dir, "opal.img", kf);
    set_requirements(&opal, &["opal"]);
    let reenc = format(dir, "reencrypt.img", kf);
    let mut args = vec!["reencrypt", "-q", "--init-only", "-d", kf, &reenc];
    args.extend(FAST);
    cryptsetup(&args, b"").unwrap().ok("reencrypt --init-only");
    let legacy = format(dir, "legacy.img", kf);
    set_requirements(&legacy, &["offline-reencrypt"]);
    Some(vec![
        Case {
            name: "unknown",
            image: unknown.to_str().unwrap().to_string(),
        },
        Case {
            name: "opal",
            image: opal,
        },
        Case {
            name: "online-reencrypt-v2",
            image: reenc,
        },
        Case {
            name: "offline-reencrypt",
            image: legacy,
        },
    ])
}

#[test]
fn requirements_refuse_like_cryptsetup() {
    if !have_cryptsetup("requirements") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"requirements pass");
    let k2 = write_file(d, "k2", b"another pass");
    let tok = write_file(d, "tok.json", br#"{"type":"x","keyslots":[]}"#);
    let Some(cases) = cases(d, &kf) else {
        return;
    };
    let mut differences = Vec::new();
    for case in &cases {
        let original = std::fs::read(&case.image).unwrap();
        for cmd in COMMANDS {
            let mut runs = Vec::new();
            for tool in ["cryptsetup", "lukskit"] {
                let img = d.join(format!("{}.{tool}", case.name));
                let img = img.to_str().unwrap();
                std::fs::write(img, &original).unwrap();
                let bk = format!("{img}.bk");
                let _ = std::fs::remove_file(&bk);
                let line = cmd
                    .replace("FAST", &FAST.join(" "))
                    .replace("IMG", img)
                    .replace("KF", &kf)
                    .replace("K2", &k2)
                    .replace("TOK", &tok)
                    .replace("BK", &bk);
                let args: Vec<&str> = line.split(' ').collect();
                let r = run_tool(tool, &args, b"");
                let after = std::fs::read(img).unwrap();
                let dump = cryptsetup(&["luksDump", img], b"").unwrap();
                let mut dump = dump.stdout.replace(img, "IMG");
                if cmd.starts_with("reencrypt") {
                    // A whole re-encryption: the number of metadata updates (the epoch)
                    // differs by one between the tools (compared elsewhere is what they
                    // leave); everything else must be the same.
                    dump = dump
                        .lines()
                        .filter(|l| !l.starts_with("Epoch:"))
                        .collect::<Vec<_>>()
                        .join("\n");
                }
                runs.push((
                    r.code,
                    r.stdout.replace(img, "IMG"),
                    r.stderr.replace(img, "IMG"),
                    after != original,
                    dump,
                ));
            }
            if runs[0] != runs[1] {
                differences.push(format!(
                    "{} / {cmd}:\n  cryptsetup: {:?}\n  lukskit:    {:?}",
                    case.name, runs[0], runs[1]
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn dump_volume_key_during_reencryption_is_the_new_key() {
    if !have_cryptsetup("requirements dump") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let kf = write_file(d, "kf", b"requirements pass");
    let img = format(d, "r.img", &kf);
    let old = volume_key_with("cryptsetup", &img, &kf, &[]);
    let mut args = vec!["reencrypt", "-q", "--init-only", "-d", &kf, &img];
    args.extend(FAST);
    cryptsetup(&args, b"").unwrap().ok("reencrypt --init-only");
    let theirs = volume_key_with("cryptsetup", &img, &kf, &[]);
    let ours = volume_key_with("lukskit", &img, &kf, &[]);
    assert_ne!(theirs, old, "cryptsetup dumps the new key");
    assert_eq!(ours, theirs);
}
