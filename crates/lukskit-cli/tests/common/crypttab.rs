//! The crypttab steps the token tests share: open one entry, check how it opened, close it.

use super::{lukskit, lukskit_env, Run};

/// `lukskit crypttab open -v --crypttab CRYPTTAB NAME` with the variables `env` added and
/// `stdin` fed, then `lukskit close NAME`. The open must succeed with keyslot `slot` and
/// print exactly `notices` on standard error (besides the note of a host without
/// device-mapper, whose mapping is served through FUSE). Returns the open's output.
pub fn open_check_close(
    crypttab: &str,
    name: &str,
    env: &[(&str, &str)],
    stdin: &[u8],
    slot: u32,
    notices: &str,
) -> Run {
    let r = lukskit_env(
        &["crypttab", "open", "-v", "--crypttab", crypttab, name],
        stdin,
        env,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!("Key slot {slot} unlocked.")),
        "{}",
        r.stdout
    );
    assert_eq!(without_fuse_note(&r.stderr), notices);
    lukskit(&["close", name], b"").ok("close");
    r
}

/// `stderr` without the note of a host without device-mapper (the mapping served through
/// FUSE).
fn without_fuse_note(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with("no device-mapper in this kernel: serving "))
        .map(|l| format!("{l}\n"))
        .collect()
}
