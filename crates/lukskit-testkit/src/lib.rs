//! Test support shared by every lukskit crate (a dev-dependency only).
//!
//! A test that cannot run — a tool, a kernel feature, a CPU feature or root is missing — must
//! not count as passed. [`skip_or_fail`] is the one rule for that: it fails the test with a
//! message naming what is missing and how to get it, unless the person running the tests has
//! opted out with `LUKSKIT_ALLOW_SKIP=1`, in which case it prints a visible `SKIP:` line and
//! the caller returns early. CI (scripts/test.sh) never sets the opt-out.

#![forbid(unsafe_code)]

/// The environment variable that lets tests skip instead of failing when their environment
/// lacks something (for people whose machine cannot provide it; never set in CI).
pub const ALLOW_SKIP_ENV: &str = "LUKSKIT_ALLOW_SKIP";

/// Whether skipping is allowed: `LUKSKIT_ALLOW_SKIP=1` is set.
pub fn skip_allowed() -> bool {
    std::env::var_os(ALLOW_SKIP_ENV).is_some_and(|v| v == "1")
}

/// The failure message for `test`, which cannot run because of `reason`.
pub fn failure_message(test: &str, reason: &str) -> String {
    format!(
        "{test}: cannot run: {reason}. Fix that, or set {ALLOW_SKIP_ENV}=1 to let tests that \
         cannot run here skip (a skipped test is not a pass; CI never sets it)"
    )
}

/// `test` cannot run because of `reason` (which names what is missing and how to install it,
/// e.g. "cryptsetup is not installed (apt-get install cryptsetup-bin)").
///
/// With `LUKSKIT_ALLOW_SKIP=1` this prints `SKIP: {test}: {reason}` on standard error
/// (written directly, so the test harness's output capture does not hide it) and returns,
/// and the caller skips the test (or the part of it that needs the missing thing).
/// Otherwise it panics: the test fails with a message saying what is missing and how to
/// install it or opt out.
#[track_caller]
pub fn skip_or_fail(test: &str, reason: &str) {
    if skip_allowed() {
        use std::io::Write;
        let line = format!("SKIP: {test}: {reason} ({ALLOW_SKIP_ENV}=1)\n");
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    } else {
        panic!("{}", failure_message(test, reason));
    }
}

/// Deterministic pseudo-random bytes (xorshift64), different for each seed: test data
/// that compresses nowhere and is the same in every run.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_the_reason_and_the_opt_out() {
        let m = failure_message("t", "xz is not installed (apt-get install xz-utils)");
        assert!(m.starts_with("t: cannot run: xz is not installed (apt-get install xz-utils)"));
        assert!(m.contains("LUKSKIT_ALLOW_SKIP=1"));
    }

    /// Called only as a child process by `skip_rule_in_child_processes`, which sets or
    /// clears the opt-out for it.
    #[test]
    #[ignore = "run as a child process by skip_rule_in_child_processes"]
    fn child_skip_or_fail() {
        skip_or_fail("t", "nothing is missing");
        eprintln!("returned");
    }

    /// Without the opt-out (or with a value other than 1) the test fails with the message;
    /// with `LUKSKIT_ALLOW_SKIP=1` it prints SKIP and returns.
    #[test]
    fn skip_rule_in_child_processes() {
        let exe = std::env::current_exe().unwrap();
        let run = |allow: Option<&str>| {
            let mut c = std::process::Command::new(&exe);
            c.args([
                "--exact",
                "tests::child_skip_or_fail",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env_remove(ALLOW_SKIP_ENV);
            if let Some(v) = allow {
                c.env(ALLOW_SKIP_ENV, v);
            }
            let o = c.output().unwrap();
            let out = String::from_utf8_lossy(&o.stdout).into_owned()
                + &String::from_utf8_lossy(&o.stderr);
            (o.status.success(), out)
        };
        for allow in [None, Some("0"), Some("yes")] {
            let (ok, out) = run(allow);
            assert!(!ok, "{allow:?} must fail: {out}");
            assert!(
                out.contains("t: cannot run: nothing is missing") && !out.contains("returned"),
                "{allow:?}: {out}"
            );
        }
        let (ok, out) = run(Some("1"));
        assert!(ok, "{out}");
        assert!(
            out.contains("SKIP: t: nothing is missing") && out.contains("returned"),
            "{out}"
        );
    }
}
