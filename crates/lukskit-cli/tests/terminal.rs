//! Interactive use on a terminal (a pseudo-terminal made by util-linux `script`): the YES
//! confirmation, prompts without echo, verification and retries — compared with the
//! transcript real cryptsetup produces for the same keystrokes.

mod common;
use common::*;

fn both(args: &str, lines: &[&str], img_ours: &str, img_theirs: &str) -> (String, String) {
    let ours = on_tty(
        &format!("{} {args} {img_ours}", env!("CARGO_BIN_EXE_lukskit")),
        lines,
    );
    let theirs = on_tty(
        &format!(
            "{} {args} {img_theirs}",
            cryptsetup_path().unwrap().display()
        ),
        lines,
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
