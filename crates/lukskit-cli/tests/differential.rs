//! Differential command-line cases: each command runs under lukskit on one copy of a volume
//! and under real cryptsetup on an identical copy; exit codes must be equal and, where
//! marked, the messages too.

mod common;
use common::*;

const FAST: &str = "--pbkdf pbkdf2 --pbkdf-force-iterations 1000";

/// (command line with IMG1 = LUKS1 volume, IMG2 = LUKS2 volume, k/k2 = key files; compare
/// the output (stdout and stderr) too, or only the exit code?)
const CASES: &[(&str, bool)] = &[
    ("luksFormat -q FAST -d k --offset 7 IMG2", true),
    ("luksFormat -q FAST -d k --label 0123456789012345678901234567890123456789012345678 IMG2", true),
    ("luksFormat -q FAST -d k --key-slot 40 IMG2", true),
    ("luksFormat -q FAST --type luks1 -d k --key-slot 8 IMG1", true),
    ("luksFormat -q -d k --pbkdf pbkdf2 --pbkdf-force-iterations 10 IMG2", true),
    ("luksFormat -q -d k --pbkdf argon2id --pbkdf-force-iterations 4 --pbkdf-memory 16 IMG2", true),
    ("luksFormat -q -d k --pbkdf argon2id --pbkdf-force-iterations 2 --pbkdf-memory 32 IMG2", true),
    ("luksFormat -q -d k --pbkdf argon2id --pbkdf-force-iterations 4 --pbkdf-memory 32 --pbkdf-parallel 1 IMG2", true),
    ("luksFormat -q FAST --type luks1 -d k --pbkdf argon2id IMG1", true),
    ("luksFormat -q FAST -d k -c foo-bar-baz IMG2", false),
    ("luksFormat -q FAST -d k -s 1024 IMG2", false),
    ("luksFormat -q FAST -d k --sector-size 8192 IMG2", false),
    ("luksFormat -q FAST -d k --type luks3 IMG2", false),
    ("luksFormat -q FAST -d k --type luks1 --sector-size 4096 IMG1", false),
    ("luksFormat -q FAST -d k --uuid bad IMG2", false),
    ("luksFormat -q FAST -d /nonexistent-key IMG2", false),
    ("luksFormat -q FAST -d k /nonexistent", false),
    ("open --test-passphrase -d k IMG1", true),
    ("open --test-passphrase -d k IMG2", true),
    ("open --test-passphrase -d k2 IMG1", true),
    ("open --test-passphrase -d k -S 3 IMG1", true),
    ("open --test-passphrase -d k -S 3 IMG2", true),
    ("open --test-passphrase -d k -S 40 IMG2", true),
    ("open --test-passphrase -d k plain.img", true),
    ("luksDump plain.img", true),
    ("luksDump /nonexistent", true),
    ("luksDump IMG2 extra", true),
    ("luksDump --dump-json-metadata IMG1", true),
    ("isLuks /nonexistent", true),
    ("isLuks plain.img", true),
    ("isLuks IMG1", true),
    ("isLuks --type luks2 IMG1", true),
    ("luksUUID plain.img", false),
    ("luksAddKey -q FAST -d k2 IMG2 k", false),
    ("luksAddKey -q FAST -d k IMG2 k2 -S 0", true),
    ("luksAddKey -q FAST -d k IMG2 k2 --new-key-slot 40", true),
    ("luksAddKey -q FAST -d k IMG1 k2 --new-key-slot 8", true),
    ("luksAddKey -q FAST -d k IMG1 k2 --new-key-slot 7", true),
    ("luksRemoveKey -q IMG2 k2", false),
    ("luksRemoveKey -q IMG2 k", true),
    ("luksChangeKey -q FAST -d k2 IMG2 k", false),
    ("luksChangeKey -q FAST -d k IMG1 k2", true),
    ("luksKillSlot -q IMG1 8", false),
    ("luksKillSlot -q IMG2 32", false),
    ("luksKillSlot -q IMG2 3", true),
    // cryptsetup also prints a stray "Nothing to read on input." here.
    ("luksKillSlot -q IMG2 0", false),
    ("luksHeaderBackup IMG2", false),
    ("luksHeaderRestore -q IMG2 --header-backup-file /nonexistent", true),
    ("config IMG2", false),
    ("config --label foo IMG1", true),
    ("config --label foo --subsystem bar IMG2", true),
    ("token export --token-id 0 IMG2", true),
    ("token remove --token-id 0 IMG2", false),
    ("luksConvertKey -q FAST -d k2 IMG2", false),
    ("convert -q --type luks2 IMG2", false),
    ("erase -q plain.img", false),
    ("-v luksRemoveKey -q IMG2 k", true),
    ("-v luksChangeKey -q FAST -d k IMG2 k2", true),
    ("-v luksChangeKey -q FAST -d k IMG1 k2", true),
    ("-v luksConvertKey -q FAST -d k IMG2", true),
    ("-v luksAddKey -q FAST -d k IMG2 k2", true),
    ("-v erase -q IMG2", true),
    ("-v erase -q IMG1", true),
    ("-v open --test-passphrase -d k IMG2", true),
    ("-v open --test-passphrase -d k IMG1", true),
    ("-v luksUUID IMG2", true),
    ("-v isLuks plain.img", true),
    ("-v config --label x IMG2", true),
    ("-v token add --key-description x IMG2", true),
    ("luksFormat -q -y FAST IMG2 k", true),
    ("luksDump IMG1", true),
    ("luksDump IMG2", true),
];

#[test]
fn commands_agree_with_cryptsetup() {
    if !have_cryptsetup("differential") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let k = write_file(d, "k", b"k");
    write_file(d, "k2", b"k2");
    sparse(d, "plain.img", 1 << 20);
    for (kind, name) in [("luks1", "base1.img"), ("luks2", "base2.img")] {
        let img = sparse(d, name, 20 << 20);
        let mut a = vec!["luksFormat", "-q", "--type", kind, "-d", &k];
        a.extend(FAST.split(' '));
        a.push(&img);
        cryptsetup(&a, b"").unwrap().ok("format");
    }
    let mut failures = Vec::new();
    for (case, compare_stderr) in CASES {
        let mut outs = Vec::new();
        for (tool, tag) in [("lukskit", "a"), ("cryptsetup", "b")] {
            for (base, img) in [("base1.img", "IMG1"), ("base2.img", "IMG2")] {
                std::fs::copy(d.join(base), d.join(format!("{tag}{img}"))).unwrap();
            }
            let line = case.replace("FAST", FAST);
            let args: Vec<String> = line
                .split(' ')
                .map(|w| match w {
                    "IMG1" | "IMG2" => format!("{tag}{w}"),
                    other => other.to_string(),
                })
                .collect();
            let mut cmd = std::process::Command::new(if tool == "lukskit" {
                std::path::PathBuf::from(env!("CARGO_BIN_EXE_lukskit"))
            } else {
                cryptsetup_path().unwrap()
            });
            let out = cmd
                .args(&args)
                .current_dir(d)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
            .replace(&format!("{tag}IMG"), "IMG");
            outs.push((out.status.code(), text));
        }
        let (ours, theirs) = (&outs[0], &outs[1]);
        if ours.0 != theirs.0 || (*compare_stderr && ours.1 != theirs.1) {
            failures.push(format!(
                "{case}\n  lukskit:    {:?} {:?}\n  cryptsetup: {:?} {:?}",
                ours.0, ours.1, theirs.0, theirs.1
            ));
        }
        assert_ne!(ours.0, Some(101), "panic: {case}");
    }
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
