//! Interactive use on a terminal (a pseudo-terminal made by util-linux `script`): the YES
//! confirmation, prompts without echo, verification and retries — compared with the
//! transcript real cryptsetup produces for the same keystrokes.

mod common;
use common::*;
use std::io::Write;
use std::process::{Command, Stdio};

/// Run `cmd` on a pseudo-terminal, typing `lines` one by one; returns the transcript.
fn on_tty(cmd: &str, lines: &[&str]) -> Option<String> {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("SKIP terminal tests: util-linux `script` is not installed");
        return None;
    }
    let mut child = Command::new("script")
        .args(["-qec", &format!("{cmd}; echo rc=$?"), "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        std::thread::sleep(std::time::Duration::from_millis(400));
        stdin.write_all(format!("{l}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(400));
    drop(stdin);
    let out = child.wait_with_output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

fn both(args: &str, lines: &[&str], img_ours: &str, img_theirs: &str) -> (String, String) {
    let ours = on_tty(
        &format!("{} {args} {img_ours}", env!("CARGO_BIN_EXE_lukskit")),
        lines,
    )
    .unwrap();
    let theirs = on_tty(
        &format!(
            "{} {args} {img_theirs}",
            cryptsetup_path().unwrap().display()
        ),
        lines,
    )
    .unwrap();
    (
        ours.replace(img_ours, "IMG"),
        theirs.replace(img_theirs, "IMG"),
    )
}

#[test]
fn prompts_and_confirmation_match_cryptsetup() {
    if !have_cryptsetup("terminal") || on_tty("true", &[]).is_none() {
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
