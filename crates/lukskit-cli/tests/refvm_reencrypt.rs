//! Online LUKS2 re-encryption under a kernel dm-crypt mapping, against the kernel and
//! cryptsetup 2.6.1 in the reference VM (script tests/refvm/reencrypt/online.sh, one boot
//! per case, a 64 MiB volume, 1 MiB hot zones):
//!
//! * `io`: ext4 on a lukskit kernel mapping, mounted, re-encrypted online by lukskit to a new
//!   key and cipher while a checksummed write / fsync / drop-caches / read-back loop runs on
//!   it (fio is not in the VM image); the files verify, the helper devices are gone, the
//!   mapping is the new cipher, and real cryptsetup opens the result (e2fsck clean);
//! * `cs-kill`: cryptsetup's online re-encryption killed with kill -9 at a random moment, the
//!   crashed stack torn down, recovered by `cryptsetup open`, resumed online by lukskit;
//! * `lk-kill` (the "done when"): a volume made by cryptsetup, re-encrypted online to
//!   a new key and cipher by lukskit, killed with kill -9 at a random moment, recovered and
//!   finished online by cryptsetup; both tools open the result, the file system is intact;
//! * `dshift-kill`: the offline decryption of a device with its header at the start
//!   (`--decrypt --header FILE`, the data moves over the old header area) by cryptsetup,
//!   killed with kill -9 and finished by lukskit, then the other way round; the plain ext4
//!   on the device is intact.
//! * `dshift-online-kill`: the same decryption online (cryptsetup 2.6.1 moves the mapping
//!   along with the data): ext4 on the mapping, mounted, under the checksummed I/O loop; one
//!   tool killed with kill -9 in the middle, the crashed stack torn down, the other recovers
//!   it (`open --header FILE`) and finishes online; cryptsetup first, then lukskit. The files
//!   written before the kill verify on the plain device, e2fsck is clean.
//! * `luks1-kill`: LUKS1 re-encryption (the legacy offline algorithm, with its log and header
//!   files in the current directory, `--write-log --use-fsync`) of an image file to a new key
//!   and cipher, interrupted in the middle by SIGTERM by cryptsetup and resumed by lukskit,
//!   then the other way round; the plaintext's checksum is unchanged and both tools open the
//!   result. Not kill -9: the legacy algorithm is safe only between blocks, and real
//!   cryptsetup killed with -9 and resumed by itself lost the plaintext in the VM
//!   (2026-11-25). Not /dev/vda itself: cryptsetup 2.6.1 finds a LUKS1 re-encryption in
//!   progress only where stat() gives at least a page, which a block device never does.

mod common;
mod refvm_common;

/// Run `case` of online.sh on a blank 64 MiB disk; `None` when the VM cannot be had (and a
/// skip is allowed). The run must have passed.
fn run_case(case: &str, expected: u64) -> Option<String> {
    let test = format!("refvm_reencrypt {case}");
    if !refvm_common::vm_ready(&test) {
        return None;
    }
    let dir = common::tmp();
    let disk = dir.path().join("disk.img");
    std::fs::File::create(&disk)
        .and_then(|f| f.set_len(64 << 20))
        .unwrap();
    let case_file = dir.path().join("case");
    std::fs::write(&case_file, case).unwrap();
    let copy = format!("{}:/refvm/files/case", case_file.display());
    let script = refvm_common::refvm_dir().join("reencrypt/online.sh");
    let args: Vec<&std::ffi::OsStr> = vec![
        "--copy".as_ref(),
        copy.as_ref(),
        script.as_os_str(),
        disk.as_os_str(),
    ];
    let r = refvm_common::run_vm(&test, refvm_common::timeout_for(expected), &args, true);
    if !r.ran(&test) {
        return None;
    }
    refvm_common::say(&format!("{test}: {}", r.stdout));
    assert_eq!(r.code, 0, "{test}: {}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!("RESULT {case} ok")),
        "{test}: {}{}",
        r.stdout,
        r.stderr
    );
    Some(r.stdout)
}

fn lines_with<'a>(out: &'a str, prefix: &str) -> Vec<&'a str> {
    out.lines().filter_map(|l| l.strip_prefix(prefix)).collect()
}

#[test]
fn online_reencryption_under_io_then_cryptsetup_opens() {
    let Some(out) = run_case("io", 150) else {
        return;
    };
    assert_eq!(lines_with(&out, "before: "), ["aes-xts-plain64"], "{out}");
    assert!(
        out.contains("Auto-detected active dm device 'v' for data device /dev/vda."),
        "{out}"
    );
    assert!(out.contains("lukskit reencrypt: 0,"), "{out}");
    // The helper devices are gone; the mapping is one target of the new cipher.
    assert_eq!(lines_with(&out, "device: "), ["v"], "{out}");
    let after = lines_with(&out, "after: ");
    assert_eq!(after.len(), 1, "{out}");
    assert!(
        after[0].starts_with("0 98304 crypt aes-cbc-essiv:sha256"),
        "{out}"
    );
    assert!(out.contains("header cipher: aes-cbc-essiv:sha256"), "{out}");
}

#[test]
fn cryptsetup_online_killed_lukskit_resumes_online() {
    let Some(out) = run_case("cs-kill", 200) else {
        return;
    };
    // Killed in the middle: cryptsetup had re-encrypted part of the device.
    assert!(lines_with(&out, "resumed from: ").len() >= 2, "{out}");
    // cryptsetup's stack was there when it was killed.
    assert!(out.contains("v-overlay"), "{out}");
    assert!(out.contains("v-hotzone-forward"), "{out}");
    // lukskit found cryptsetup's (multi-segment) mapping and finished under it.
    assert!(
        out.contains("Auto-detected active dm device 'v' for data device /dev/vda."),
        "{out}"
    );
    assert_eq!(lines_with(&out, "device: "), ["v"], "{out}");
    let after = lines_with(&out, "after: ");
    assert_eq!(after, ["0 98304 crypt aes-cbc-essiv:sha256"], "{out}");
}

#[test]
fn lukskit_online_killed_cryptsetup_finishes() {
    let Some(out) = run_case("lk-kill", 200) else {
        return;
    };
    // Killed in the middle: lukskit had re-encrypted part of the device.
    assert!(lines_with(&out, "resumed from: ").len() >= 2, "{out}");
    // lukskit's stack has cryptsetup's names and DM UUIDs.
    assert!(
        out.lines()
            .any(|l| l.starts_with("v-overlay") && l.contains("CRYPT-SUBDEV-UUID-v-overlay")),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l.starts_with("v-hotzone-forward")
            && l.contains("CRYPT-SUBDEV-UUID-v-hotzone-forward")),
        "{out}"
    );
    assert_eq!(lines_with(&out, "device: "), ["v"], "{out}");
    let after = lines_with(&out, "after: ");
    assert_eq!(after, ["0 98304 crypt serpent-xts-plain64"], "{out}");
    assert!(out.contains("header cipher: serpent-xts-plain64"), "{out}");
}

#[test]
fn decrypt_with_data_shift_killed_and_finished_by_the_other_tool() {
    let Some(out) = run_case("dshift-kill", 300) else {
        return;
    };
    for (first, second) in [("cryptsetup", "lukskit"), ("lukskit", "cryptsetup")] {
        assert!(
            out.contains(&format!("decrypted: {first} killed, {second} finished")),
            "{out}"
        );
        // Killed in the middle: the header file had the decryption's segments.
        assert!(
            !lines_with(&out, &format!("state after {first}: ")).is_empty(),
            "{out}"
        );
    }
}

#[test]
fn online_decrypt_with_data_shift_killed_and_finished_by_the_other_tool() {
    let Some(out) = run_case("dshift-online-kill", 400) else {
        return;
    };
    for (first, second) in [("cryptsetup", "lukskit"), ("lukskit", "cryptsetup")] {
        assert!(
            out.contains(&format!(
                "decrypted online: {first} killed, {second} finished"
            )),
            "{out}"
        );
        // Killed in the middle of the online run: the decryption's segments in the header
        // file, and the mapping the second tool resumed from has more than one segment.
        assert!(
            !lines_with(&out, &format!("state after {first}: ")).is_empty(),
            "{out}"
        );
        assert!(
            lines_with(&out, &format!("resumed from ({first}): ")).len() >= 2,
            "{out}"
        );
        // The second tool finished under the live mapping: no helper device is left, and
        // the mapping is the plain device (dm-linear).
        assert_eq!(
            lines_with(&out, &format!("device ({first} killed): ")),
            ["v"],
            "{out}"
        );
        let after = lines_with(&out, &format!("after ({first} killed): "));
        assert_eq!(after.len(), 1, "{out}");
        assert!(after[0].contains(" linear "), "{out}");
        // Finished, the decryption removed the mapping (deferred until the unmount).
        assert!(
            out.contains(&format!("mapping removed at the unmount ({first} killed)")),
            "{out}"
        );
    }
    // lukskit's stack (when it was the one killed) had cryptsetup's names.
    assert!(out.contains("v-hotzone-forward"), "{out}");
}

#[test]
fn luks1_reencryption_interrupted_and_resumed_by_the_other_tool() {
    let Some(out) = run_case("luks1-kill", 300) else {
        return;
    };
    for (first, second) in [("cryptsetup", "lukskit"), ("lukskit", "cryptsetup")] {
        assert!(
            out.contains(&format!(
                "luks1: {first} killed, {second} finished, plaintext intact"
            )),
            "{out}"
        );
        // Interrupted in the middle: its log was there, with the offset it had reached.
        assert!(
            lines_with(&out, &format!("log after {first}: "))
                .iter()
                .any(|l| l.starts_with("offset")),
            "{out}"
        );
    }
}
