//! Interactive use on a terminal (a pseudo-terminal made by util-linux `script`): the YES
//! confirmation, prompts without echo, verification and retries — compared with the
//! transcript real cryptsetup produces for the same keystrokes.

mod common;
use common::*;

fn both(args: &str, lines: &[&str], img_ours: &str, img_theirs: &str) -> (String, String) {
    // Each line is typed once its prompt is there: cryptsetup flushes what was typed ahead
    // (tcflush) when it asks, so fixed delays lost answers on a loaded machine.
    let wait = std::time::Duration::from_secs(20);
    let ours = on_tty_prompted(
        &format!("{} {args} {img_ours}", env!("CARGO_BIN_EXE_lukskit")),
        lines,
        wait,
    );
    let theirs = on_tty_prompted(
        &format!(
            "{} {args} {img_theirs}",
            cryptsetup_path().unwrap().display()
        ),
        lines,
        wait,
    );
    (
        ours.replace(img_ours, "IMG"),
        theirs.replace(img_theirs, "IMG"),
    )
}

#[test]
fn prompts_and_confirmation_match_cryptsetup() {
    if !have_cryptsetup("terminal") || !have_script("terminal") {
        return;
    }
    let dir = tmp();
    let a = sparse(dir.path(), "a.img", 20 << 20);
    let b = sparse(dir.path(), "b.img", 20 << 20);
    let fast = "--pbkdf pbkdf2 --pbkdf-force-iterations 1000";
    // Format: YES, passphrase twice; the secret is never echoed.
    let (o, t) = both(
        &format!("luksFormat {fast}"),
        &["YES", "s3cret", "s3cret"],
        &a,
        &b,
    );
    assert_eq!(o, t);
    assert!(
        o.contains("Are you sure? (Type 'yes' in capital letters): YES") && o.ends_with("rc=0\n"),
        "{o}"
    );
    assert!(!o.contains("s3cret"), "passphrase echoed: {o}");
    // Mismatched verification: exit 2.
    let (o, t) = both(
        &format!("luksFormat {fast}"),
        &["YES", "one", "two"],
        &a,
        &b,
    );
    assert_eq!(o, t);
    assert!(
        o.contains("Passphrases do not match.") && o.ends_with("rc=2\n"),
        "{o}"
    );
    // Anything but YES aborts.
    let (o, t) = both(&format!("luksFormat {fast}"), &["yes"], &a, &b);
    assert!(o.ends_with("rc=1\n") && t.ends_with("rc=1\n"), "{o} / {t}");
    // Three tries, the third right.
    let (o, t) = both(
        "open --test-passphrase",
        &["bad1", "bad2", "s3cret"],
        &a,
        &b,
    );
    assert_eq!(o, t);
    assert_eq!(
        o.matches("No key available with this passphrase.").count(),
        2
    );
    assert!(o.ends_with("rc=0\n"), "{o}");
}

/// One dialogue on a terminal with each tool, each in a directory of its own set up by the
/// same shell commands (`setup`, run with real cryptsetup as `$CS` and fast keyslot options
/// as `$FAST`): the transcripts (progress speeds and the temporary header's UUID aside),
/// cryptsetup's first.
fn dialogue(setup: &str, args: &str, lines: &[&str]) -> (String, String) {
    let cs = cryptsetup_path().unwrap();
    let fast = FAST.join(" ");
    let mut out = Vec::new();
    for bin in [
        cs.display().to_string(),
        env!("CARGO_BIN_EXE_lukskit").to_string(),
    ] {
        let dir = tmp();
        let d = dir.path().display().to_string();
        let made = std::process::Command::new("sh")
            .args(["-ec", setup])
            .current_dir(dir.path())
            .env("CS", &cs)
            .env("FAST", &fast)
            .output()
            .unwrap();
        assert!(made.status.success(), "set-up {setup}: {made:?}");
        let t = on_tty_prompted(
            &format!("cd {d} && {bin} {args}"),
            lines,
            std::time::Duration::from_secs(60),
        );
        out.push(normalized(&t));
    }
    let lk = out.pop().unwrap();
    (out.pop().unwrap(), lk)
}

/// A transcript without what differs from run to run: speeds and times of the progress
/// line, the progress lines themselves (printed each second, so only by a run that takes
/// one: they end in a carriage return, so the Finished line follows on the same line here),
/// the UUID in the temporary header's name, the terminal's line clearing.
fn normalized(t: &str) -> String {
    t.replace("\x1b[2K", "")
        .lines()
        .map(
            |l| match (l.starts_with("Progress: "), l.find("Finished, time ")) {
                (true, Some(i)) => &l[i..],
                _ => l,
            },
        )
        .filter(|l| !l.starts_with("Progress: "))
        .map(|l| {
            let l = match l.find("LUKS2-temp-") {
                Some(i) => format!("{}LUKS2-temp-UUID{}", &l[..i], &l[i + 47..]),
                None => l.to_string(),
            };
            match (l.starts_with("Finished, time "), l.find(", speed ")) {
                (true, Some(i)) => format!("Finished, {}", &l[24..i]),
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What cryptsetup 2.6.1 asks, and in which order, around re-encryption of an image file
/// (no block device: whether it is in use cannot be told) and detached headers: the
/// passphrases come before the question whether to go on offline, a resume asks whether to
/// resume, an encryption formats its header as luksFormat does (the question to create or
/// overwrite it, the passphrase for it asked twice) and asks nothing about the image's use.
/// A question not answered YES ends as cryptsetup's does: with its own message (or none)
/// and exit code. The keystrokes are cryptsetup's order: lukskit asked its questions before the passphrase,
/// so a user following cryptsetup typed the passphrase into a YES question, where it is
/// echoed; `--encrypt` took "YES" as the new passphrase.
#[test]
fn reencrypt_header_and_refusal_dialogues_match_cryptsetup() {
    if !have_cryptsetup("terminal reencrypt") || !have_script("terminal reencrypt") {
        return;
    }
    let luks2 = "truncate -s 40M img; printf pw | $CS luksFormat -q --type luks2 $FAST img -";
    let init_only = "truncate -s 40M img; printf pw | $CS luksFormat -q --type luks2 $FAST img -; \
                     printf pw | $CS reencrypt -q --init-only $FAST img";
    let detached = "truncate -s 40M img; printf pw | $CS luksFormat -q $FAST --header hdr img -";
    let blank = "truncate -s 40M img";
    let blank_hdr = "truncate -s 40M img; truncate -s 16M hdr";
    let luks1 = "truncate -s 40M img; printf pw | $CS luksFormat -q --type luks1 $FAST img -";
    let backup_uuid =
        "truncate -s 40M img; printf pw | $CS luksFormat -q --type luks2 $FAST img -; \
                       $CS luksHeaderBackup img --header-backup-file bk; \
                       $CS luksUUID -q --uuid 12345678-1234-1234-1234-123456789abc img";
    let backup1 = "truncate -s 40M img; printf pw | $CS luksFormat -q --type luks1 $FAST img -; \
                   $CS luksHeaderBackup img --header-backup-file bk";
    // A backup of the other LUKS version: cryptsetup reads the device as the backup's
    // version, finds no header of it (its LUKS1 reader complains of the LUKS2 one) and
    // restores on YES.
    let backup1_on2 =
        "truncate -s 40M img old; printf pw | $CS luksFormat -q --type luks1 $FAST old -; \
                       $CS luksHeaderBackup old --header-backup-file bk; \
                       printf pw | $CS luksFormat -q --type luks2 $FAST img -";
    let backup2_on1 =
        "truncate -s 40M img old; printf pw | $CS luksFormat -q --type luks2 $FAST old -; \
                       $CS luksHeaderBackup old --header-backup-file bk; \
                       printf pw | $CS luksFormat -q --type luks1 $FAST img -";
    let offline = "Unable to decide if device img is activated or not.";
    let cases: &[(&str, &str, &[&str], &[&str])] = &[
        // A new re-encryption: passphrase, then the question (yes: it runs).
        (
            luks2,
            "reencrypt $FAST img",
            &["pw", "YES"],
            &["rc=0", offline],
        ),
        (
            luks2,
            "reencrypt $FAST img",
            &["pw", "no"],
            &["rc=1", "Operation aborted."],
        ),
        // A resume: whether to, the passphrase, the question.
        (
            init_only,
            "reencrypt img",
            &["YES", "pw", "no"],
            &["already in LUKS2 reencryption", "rc=1"],
        ),
        (
            init_only,
            "reencrypt img",
            &["no"],
            &["rc=1", "Operation aborted."],
        ),
        (
            init_only,
            "reencrypt --resume-only img",
            &["pw", "no"],
            &[offline, "rc=1"],
        ),
        (
            init_only,
            "reencrypt -q img",
            &[],
            &["--force-offline-reencrypt", "rc=1"],
        ),
        // Decryption with a detached header, and with the header moved out to a new file.
        (
            detached,
            "reencrypt --decrypt --header hdr img",
            &["pw", "no"],
            &["Enter passphrase for img: ", "rc=1"],
        ),
        (
            luks2,
            "reencrypt --decrypt --header new.hdr img",
            &["YES", "pw", "no"],
            &[offline, "rc=1"],
        ),
        // Encryption with a new, an existing and a temporary header.
        (
            blank,
            "reencrypt --encrypt $FAST --header new.hdr img",
            &["YES", "pw", "pw"],
            &["Header file does not exist", "rc=0"],
        ),
        (
            blank_hdr,
            "reencrypt --encrypt $FAST --header hdr img",
            &["YES", "pw", "pw"],
            &["This will overwrite data on hdr", "rc=0"],
        ),
        (
            blank,
            "reencrypt --encrypt $FAST --reduce-device-size 8M img",
            &["no"],
            &["LUKS2-temp-UUID.new irrevocably", "rc=1"],
        ),
        (
            blank,
            "reencrypt -q --encrypt $FAST --reduce-device-size 8M img",
            &["pw"],
            &["Enter passphrase for LUKS2-temp-UUID.new: ", "rc=0"],
        ),
        (
            blank,
            "reencrypt -q --encrypt $FAST --header new.hdr img",
            &["pw"],
            &["rc=0"],
        ),
        // luksFormat of a header file that does not exist yet.
        (
            blank,
            "luksFormat $FAST --header new.hdr img",
            &["no"],
            &["Header file does not exist", "rc=2"],
        ),
        (
            blank,
            "luksFormat $FAST --header new.hdr img",
            &["YES", "pw", "pw"],
            &["Verify passphrase: ", "rc=0"],
        ),
        // Each question's own refusal: its message (or none), then an empty line, and its
        // exit code.
        (
            luks2,
            "luksFormat $FAST img",
            &["no"],
            &["Operation aborted.\n\nrc=1"],
        ),
        (
            luks2,
            "luksKillSlot img 0",
            &["no"],
            &["the keyslot was NOT wiped.\n\nrc=2"],
        ),
        (
            luks2,
            "luksRemoveKey img",
            &["pw", "no"],
            &["the keyslot was NOT wiped.\n\nrc=2"],
        ),
        (
            luks2,
            "erase img",
            &["no"],
            &[
                "This operation will erase all keyslots on device img.",
                "keyslots were NOT wiped.\n\nrc=2",
            ],
        ),
        (
            luks2,
            "luksUUID --uuid 12345678-1234-1234-1234-123456789abc img",
            &["no"],
            &["Operation aborted.\n\nrc=2"],
        ),
        (
            luks1,
            "convert --type luks2 img",
            &["no"],
            &["device was NOT converted.\n\nrc=2"],
        ),
        (
            luks2,
            "luksDump --dump-volume-key img",
            &["no"],
            &["(Type 'yes' in capital letters): no\nrc=2"],
        ),
        (
            backup_uuid,
            "luksHeaderRestore img --header-backup-file bk",
            &["no"],
            &[
                "different UUID than backup!",
                "(Type 'yes' in capital letters): no\nrc=1",
            ],
        ),
        (
            backup1,
            "luksHeaderRestore img --header-backup-file bk",
            &["no"],
            &["already contains LUKS header", "rc=1"],
        ),
        (
            backup1_on2,
            "luksHeaderRestore img --header-backup-file bk",
            &["YES"],
            &[
                "Unsupported LUKS version 2.",
                "does not contain LUKS header",
                "rc=0",
            ],
        ),
        (
            backup2_on1,
            "luksHeaderRestore img --header-backup-file bk",
            &["YES"],
            &["does not contain LUKS2 header", "rc=0"],
        ),
    ];
    for (setup, args, lines, wants) in cases {
        let args = args.replace("$FAST", &FAST.join(" "));
        let (cs, lk) = dialogue(setup, &args, lines);
        for w in *wants {
            assert!(cs.contains(w), "cryptsetup {args}: no {w:?} in\n{cs}");
        }
        assert_eq!(lk, cs, "lukskit {args} (left) against cryptsetup (right)");
        assert!(
            !lk.contains("\npw\n") && !lk.contains(": pw\n"),
            "passphrase echoed: {lk}"
        );
    }
}
