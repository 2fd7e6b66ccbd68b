//! Exclusive use against the real kernel (reference VM): while cryptsetup's dm-crypt mapping
//! or a mount holds a device, lukskit refuses to open, format or convert it with exactly
//! cryptsetup's messages and exit codes; while lukskit's own mapping holds a device,
//! cryptsetup and the kernel are refused as well. A forced offline re-encryption under a
//! mapping or a mount is refused alike, and lukskit leaves the header as it was (cryptsetup
//! writes the re-encryption metadata before it refuses). Script:
//! tests/refvm/exclusive/exclusive.sh.

mod common;
mod refvm_common;

use std::collections::BTreeMap;

#[test]
fn lukskit_and_cryptsetup_refuse_each_others_devices_alike() {
    const T: &str = "refvm_exclusive";
    let dir = common::tmp();
    // About 90 s on an idle host here (one boot).
    let Some(r) =
        refvm_common::run_script_on_blank_disks(T, "exclusive/exclusive.sh", dir.path(), 3, 90)
    else {
        return;
    };
    assert!(r.stdout.contains("exclusive: done"), "{}", r.stdout);
    assert!(
        !r.stdout.contains("mount of a claimed device succeeded"),
        "{}",
        r.stdout
    );
    // A forced offline re-encryption under a mapping is refused before anything is written
    // (cryptsetup writes the re-encryption metadata first, then refuses).
    for case in ["reencrypt-mapped", "reencrypt-lukskit-mapped"] {
        assert!(
            r.stdout.contains(&format!("lukskit-header {case} kept")),
            "{case}: lukskit's header changed or was not checked:\n{}",
            r.stdout
        );
    }
    assert!(
        !r.stdout
            .contains("lukskit made a header for a mounted device"),
        "{}",
        r.stdout
    );
    // CASE -> (cryptsetup's line, lukskit's line)
    let mut cases: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    for line in r.stdout.lines() {
        let mut it = line.splitn(3, ' ');
        let (Some(tool), Some(case), Some(rest)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let e = cases.entry(case.to_string()).or_default();
        match tool {
            "cryptsetup" => e.0 = Some(rest.trim().to_string()),
            "lukskit" => e.1 = Some(rest.trim().to_string()),
            _ => {}
        }
    }
    let expected = [
        "open-mapped",
        "open-ro-mapped",
        "format-mapped",
        "convert-mapped",
        "plain-mapped",
        "format-mounted",
        "plain-mounted",
        "open-lukskit-mapped",
        "format-lukskit-mapped",
        "reencrypt-mapped",
        "encrypt-mounted",
        "reencrypt-lukskit-mapped",
    ];
    for case in expected {
        let (theirs, ours) = cases
            .get(case)
            .unwrap_or_else(|| panic!("case {case} missing from the VM's output:\n{}", r.stdout));
        let theirs = theirs.as_deref().expect("cryptsetup's line");
        assert!(
            !theirs.starts_with("rc=0"),
            "{case}: cryptsetup was expected to refuse: {theirs}"
        );
        assert_eq!(
            ours.as_deref(),
            Some(theirs),
            "{case}: lukskit against cryptsetup"
        );
    }
}
