//! Online LUKS2 re-encryption under a kernel dm-crypt mapping, against the kernel and
//! cryptsetup 2.6.1 in the reference VM (script tests/refvm/reencrypt/online.sh, one boot
//! per case, a 64 MiB volume, 1 MiB hot zones):
//!
//! * `io`: ext4 on a lukskit kernel mapping, mounted, re-encrypted online by lukskit to a new
//!   key and cipher while a checksummed write / fsync / drop-caches / read-back loop runs on
//!   it; the files verify, the helper devices are gone, the mapping is the new cipher, and
//!   real cryptsetup opens the result (e2fsck clean);
//! * `fio:lukskit` / `fio:cryptsetup` (the control): fio verify jobs (random writes with
//!   crc32c verify headers, a verify backlog and a full verify after each loop; two files
//!   with O_DIRECT, two buffered with fsync) on the mounted ext4 while the tool re-encrypts it
//!   online; fio started before the re-encryption and still runs when it has finished (so it
//!   overlapped every hot zone), exits 0 with no verify error, and a verify-only pass over
//!   every block passes, after the run and again once the other tool opened the result. The
//!   VM gets a static fio built from Debian's source package (`run.sh --fio`).
//! * `cs-kill`: cryptsetup's online re-encryption killed with kill -9 at a random point (a
//!   crash: the power is cut at once, the top device fails all I/O from then on), the
//!   crashed stack torn down, recovered by `cryptsetup open`, resumed online by lukskit;
//! * `lk-kill` (the "done when"): a volume made by cryptsetup, re-encrypted online to
//!   a new key and cipher by lukskit, killed with kill -9 at a random point, recovered and
//!   finished online by cryptsetup; both tools open the result, the file system is intact;
//! * `dshift-kill`: the offline decryption of a device with its header at the start
//!   (`--decrypt --header FILE`, the data moves over the old header area) by cryptsetup,
//!   killed with kill -9 and finished by lukskit, then the other way round; the plain ext4
//!   on the device is intact.
//! * `shift-online` (luks2-reencryption-test [2]): an encryption with a data shift
//!   initialized with a name to activate (`--init-only ... --reduce-device-size 8M NAME`),
//!   resumed online by each tool with the mapping auto-detected: the mapping keeps its size
//!   (the device less the shift: lukskit's once grew to the header's `whole device`
//!   segment), its plaintext is unchanged and the helper devices are gone, as with
//!   cryptsetup.
//! * `dshift-online-kill`: the same decryption online (cryptsetup 2.6.1 moves the mapping
//!   along with the data): ext4 on the mapping, mounted, under the checksummed I/O loop; one
//!   tool killed with kill -9 in the middle (the power cut at once), the crashed stack torn
//!   down, the other recovers it (`open --header FILE`) and finishes online; cryptsetup
//!   first, then lukskit. The files written and fsync'd before the kill verify on the plain
//!   device, e2fsck is clean. (Failing only the hot zone at the kill, as this case did until
//!   2026-11-27, lost fsync'd files with either tool killed: ext4 wrote dirty metadata that
//!   lay in the failing hot zone back at the unmount, the kernel dropped it and ext4 cleared
//!   its journal.)
//! * `init-mismatch` (luks2-reencryption-test [4]): an online re-encryption under a mapping
//!   whose key description names a digest the header no longer has fails with cryptsetup's
//!   words and leaves the header as it was (no re-encryption initialized, no keyslot added),
//!   with each tool.
//! * `fixed-online` (luks2-reencryption-test [17]): a mapping resized smaller than the data,
//!   re-encrypted online: only its size is re-encrypted, a `--device-size` other than its
//!   size is refused, a size that is not whole new sectors is refused; each tool.
//! * `null-online` (luks2-reencryption-test [24]): a cipher_null volume re-encrypted online
//!   to aes-xts: the new key in the kernel keyring, as cryptsetup puts it; each tool.
//! * `reduce-online`: `--reduce-device-size` under a live mapping: a mapping that would not
//!   fit after the shift is refused with cryptsetup's words (lukskit writes nothing, where
//!   cryptsetup leaves the header in re-encryption); a mapping resized to fit is
//!   re-encrypted online under I/O by each tool, with cryptsetup's table and segments.
//! * `reduce-kill`: the online re-encryption of `reduce-online` killed with kill -9 in the
//!   middle (the power cut at once), the crashed stack torn down, the other tool recovers it
//!   (`open`) and finishes online; cryptsetup killed first, then lukskit. The files fsync'd
//!   before the kill verify, the mapping ends 8 MiB further on, e2fsck is clean, and the
//!   killed tool opens the result.
//! * `status-online`: `status` of a LUKS2 mapping in re-encryption says what cryptsetup's
//!   says: an encryption with a data shift initialized with a name (dm-linear segments),
//!   resumed online (the helper stack) and caught midway, and an online re-encryption of an
//!   opened volume caught midway.
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
    run_case_with(case, expected, &[])
}

/// `run_case` with more run.sh options (e.g. `--fio`).
fn run_case_with(case: &str, expected: u64, options: &[&str]) -> Option<String> {
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
    let mut args: Vec<&std::ffi::OsStr> = options.iter().map(|o| o.as_ref()).collect();
    args.extend([
        "--copy".as_ref(),
        copy.as_ref(),
        script.as_os_str(),
        disk.as_os_str(),
    ]);
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

/// The lines a case printed as `LABEL TOOL: ...` for one tool, without that prefix.
fn tool_lines(out: &str, label: &str, tool: &str) -> Vec<String> {
    lines_with(out, &format!("{label} {tool}: "))
        .into_iter()
        .map(String::from)
        .collect()
}

#[test]
fn online_reencryption_under_io_then_cryptsetup_opens() {
    let Some(out) = run_case("io", 150) else {
        return;
    };
    assert_eq!(lines_with(&out, "before: "), ["aes-xts-plain64"], "{out}");
    // `status v` while v was a linear target over v-overlay: found through the overlay.
    let during = lines_with(&out, "during: ");
    for want in ["  type:    LUKS2", "  device:  /dev/vda"] {
        assert!(during.contains(&want), "{want}: {out}");
    }
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

/// The `fio:TOOL` case: `tool` re-encrypts online under fio verify jobs; the other tool opens
/// the result.
fn fio_case(tool: &str, other: &str) {
    let case = format!("fio:{tool}");
    let Some(out) = run_case_with(&case, 300, &["--fio"]) else {
        return;
    };
    assert_eq!(lines_with(&out, "before: "), ["aes-xts-plain64"], "{out}");
    assert!(out.contains(&format!("{tool} reencrypt: 0,")), "{out}");
    // More than one hot zone was re-encrypted (1 MiB each, 48 MiB of data), all while fio ran.
    let progress: usize = out
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{tool} reencrypt: 0, progress lines: ")))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no progress line count: {out}"));
    assert!(progress >= 2, "{out}");
    assert!(
        out.contains("fio running at the end of the re-encryption: yes"),
        "{out}"
    );
    assert!(out.contains("fio stopped at "), "{out}");
    assert!(out.contains(": exit 0"), "{out}");
    // Four jobs reported, none with an error, in the run and in both verify-only passes.
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("fio: ") && l.contains("err= 0"))
            .count(),
        4,
        "{out}"
    );
    assert!(
        out.contains("fio verified after the re-encryption: 4 jobs"),
        "{out}"
    );
    assert!(
        out.contains(&format!("fio verified after {other} open: 4 jobs")),
        "{out}"
    );
    assert_eq!(
        lines_with(&out, "after: "),
        ["0 98304 crypt aes-cbc-essiv:sha256"],
        "{out}"
    );
    assert!(out.contains("header cipher: aes-cbc-essiv:sha256"), "{out}");
}

#[test]
fn online_reencryption_under_fio_verify_jobs() {
    fio_case("lukskit", "cryptsetup");
}

/// The control: the same workload and checks with cryptsetup's own online re-encryption.
#[test]
fn cryptsetup_online_reencryption_under_fio_verify_jobs_control() {
    fio_case("cryptsetup", "lukskit");
}

#[test]
fn cryptsetup_online_killed_lukskit_resumes_online() {
    let Some(out) = run_case("cs-kill", 200) else {
        return;
    };
    // Killed in the middle: cryptsetup had re-encrypted part of the device; the kill was a
    // crash (the power cut at once).
    assert!(lines_with(&out, "resumed from: ").len() >= 2, "{out}");
    assert_eq!(lines_with(&out, "power cut at the kill").len(), 1, "{out}");
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
    // Killed in the middle: lukskit had re-encrypted part of the device; the kill was a
    // crash (the power cut at once).
    assert!(lines_with(&out, "resumed from: ").len() >= 2, "{out}");
    assert_eq!(lines_with(&out, "power cut at the kill").len(), 1, "{out}");
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
fn encryption_with_data_shift_resumed_online_keeps_the_mapping_size() {
    let Some(out) = run_case("shift-online", 200) else {
        return;
    };
    for tool in ["cryptsetup", "lukskit"] {
        assert_eq!(
            lines_with(&out, &format!("shift-online {tool}: ")),
            ["0 114688 crypt aes-cbc-essiv:sha256"],
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
    // Each kill was a crash: the power cut at once, so the files the writer fsync'd before
    // it (checked above: "writer files differ" fails the case) came back from the journal.
    assert_eq!(lines_with(&out, "power cut at the kill").len(), 2, "{out}");
}

/// `reencrypt --reduce-device-size 8M` under a live mapping (as
/// [`online_reencryption_with_a_data_shift_as_cryptsetup`]) killed with kill -9 in the
/// middle: the other tool recovers the crashed data shift and finishes it online, and nothing
/// fsync'd before the kill is lost; each tool killed once.
#[test]
fn online_reencryption_with_a_data_shift_killed_and_finished_by_the_other_tool() {
    let Some(out) = run_case("reduce-kill", 400) else {
        return;
    };
    for (first, second) in [("cryptsetup", "lukskit"), ("lukskit", "cryptsetup")] {
        assert!(
            out.contains(&format!(
                "reduce-kill: {first} killed, {second} finished online"
            )),
            "{out}"
        );
        // Killed in the middle (kill_midway checked the header's online-reencrypt
        // requirement): the header holds the re-encryption's segments, and the mapping the
        // second tool recovered has more than one.
        assert!(
            lines_with(&out, &format!("reduce-kill: state after {first}: ")).len() >= 2,
            "{out}"
        );
        let resumed = lines_with(
            &out,
            &format!("reduce-kill: resumed from ({first} killed): "),
        );
        assert_eq!(resumed.len(), 1, "{out}");
        assert!(!resumed[0].starts_with("1 segments"), "{out}");
        // Finished online: the data 8 MiB further on, no helper device left, and the killed
        // tool opens the same mapping.
        let table = "0 81920 crypt aes-xts-plain64 254:0 49152";
        assert_eq!(
            lines_with(&out, &format!("reduce-kill: after ({first} killed): ")),
            [table],
            "{out}"
        );
        assert_eq!(
            lines_with(&out, &format!("reduce-kill: mappings ({first} killed): ")),
            ["v "],
            "{out}"
        );
        assert_eq!(
            lines_with(
                &out,
                &format!("reduce-kill: {first} opens ({first} killed): ")
            ),
            [table],
            "{out}"
        );
        let n: u64 = lines_with(
            &out,
            &format!("reduce-kill: writer iterations before the kill ({first}): "),
        )
        .first()
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
        assert!(
            n >= 1,
            "{first}: the writer did not run before the kill: {out}"
        );
    }
    assert_eq!(lines_with(&out, "power cut at the kill").len(), 2, "{out}");
}

/// `status` of a mapping in re-encryption prints cryptsetup's words: the smallest offset of
/// the mapping's own segments (0 under the online re-encryption's helper stack, the shifted
/// data's offset where the mapping is dm-linear segments). lukskit printed its first crypt
/// segment's offset (32768 and 8192 sectors where cryptsetup says 0, 122880 where it says
/// 8192).
#[test]
fn status_during_a_reencryption_as_cryptsetup() {
    let Some(out) = run_case("status-online", 300) else {
        return;
    };
    for moment in [
        "shift initialized",
        "shift online",
        "shift done",
        "opened",
        "online",
    ] {
        assert!(
            out.contains(&format!("status-online: {moment}: same")),
            "{moment}: {out}"
        );
    }
    // The moments differ as cryptsetup's own words do.
    for (moment, offset) in [
        ("shift initialized", 8192),
        ("shift online", 0),
        ("online", 0),
        ("opened", 32768),
    ] {
        assert!(
            out.contains(&format!(
                "status-online: {moment}:   offset:  {offset} sectors"
            )),
            "{moment}: {out}"
        );
    }
}

/// luks2-reencryption-test [4]: `reencrypt --active-name NAME2` under a mapping whose key
/// description names the digest of a volume key the header no longer has must fail as
/// cryptsetup's does and leave the header as it was: cryptsetup 2.6.1 checks the mapping
/// against the metadata before it writes anything and removes the keyslot it added for the
/// new key; lukskit initialized the re-encryption first and failed only when the online run
/// started, leaving `online-reencrypt` (and the new keyslot) behind.
#[test]
fn online_start_under_a_mismatching_mapping_leaves_the_header_as_before() {
    let Some(out) = run_case("init-mismatch", 120) else {
        return;
    };
    let of = |tool: &str| tool_lines(&out, "mismatch", tool);
    let cs = of("cryptsetup");
    // The reference: cryptsetup refuses with its words and writes nothing.
    for want in [
        "exit 1",
        "stderr: Mismatching parameters on device b.",
        "stderr: Failed to initialize LUKS2 reencryption in metadata.",
        "not in reencryption",
        "header as before",
        "mappings: a b ",
    ] {
        assert!(cs.iter().any(|l| l == want), "cryptsetup: {want}: {out}");
    }
    assert_eq!(of("lukskit"), cs, "{out}");
}

/// luks2-reencryption-test [17] (online re-encryption with a fixed device size): a mapping
/// resized to 28 MiB of 56 MiB of data, re-encrypted online, has only its 28 MiB
/// re-encrypted (the data beyond is untouched; lukskit re-encrypted the whole data area),
/// keeps its size and plaintext, and the header's segments are cryptsetup's; a
/// `--device-size` other than the mapping's is refused with cryptsetup's words and the same
/// is taken; a mapping that is not whole sectors of the new layout is refused. Every line
/// of lukskit is cryptsetup's.
#[test]
fn online_reencryption_of_a_resized_mapping_as_cryptsetup() {
    let Some(out) = run_case("fixed-online", 200) else {
        return;
    };
    let of = |tool: &str| tool_lines(&out, "fixed", tool);
    let cs = of("cryptsetup");
    for want in [
        "size 57344",
        "mappings: v ",
        "data beyond the mapping untouched",
        "plaintext intact",
        "--device-size not the mapping's: exit 1",
        "stderr: Active device size and requested reencryption size don't match.",
        "--device-size of the mapping: size 57344",
        "mapping not whole new sectors: exit 1",
        "stderr: Illegal device size requested in reencryption parameters.",
    ] {
        assert!(cs.iter().any(|l| l == want), "cryptsetup: {want}: {out}");
    }
    assert_eq!(of("lukskit"), cs, "{out}");
}

/// luks2-reencryption-test [24] (online re-encryption from cipher_null): the mapping of a
/// cipher_null volume has no key, so nothing tells where the new one goes; cryptsetup puts
/// it in the kernel keyring (as for any LUKS2 mapping where dm-crypt takes keys from it),
/// lukskit put it in the table as hex, and upstream's `status | grep "key location:
/// keyring"` failed. Every line of lukskit (status before and after, the table's key form,
/// the plaintext) is cryptsetup's.
#[test]
fn online_reencryption_from_cipher_null_keeps_the_key_in_the_keyring() {
    let Some(out) = run_case("null-online", 150) else {
        return;
    };
    let of = |tool: &str| tool_lines(&out, "null", tool);
    let cs = of("cryptsetup");
    assert!(
        cs.iter().any(|l| l == "plaintext intact"),
        "cryptsetup: {out}"
    );
    assert!(
        cs.iter().any(|l| l.starts_with("table key: keyring ")),
        "cryptsetup: {out}"
    );
    assert!(
        cs.iter()
            .any(|l| l.starts_with("after:") && l.contains("key location: keyring")),
        "cryptsetup: {out}"
    );
    assert_eq!(of("lukskit"), cs, "{out}");
}

/// `reencrypt --reduce-device-size` of a LUKS2 volume under a live mapping (the data moves
/// 8 MiB further on). The mapping of the whole data area does not fit after the shift:
/// refused with cryptsetup's words and exit code, but where cryptsetup 2.6.1 has written the
/// metadata first (the header is left in re-encryption), lukskit writes nothing. A mapping
/// resized to the data less the shift (ext4 shrunk first) is re-encrypted online under the
/// checksummed I/O loop by each tool: the mapping ends 8 MiB further on, the header's
/// segments are cryptsetup's, the files verify and the other tool opens the result.
#[test]
fn online_reencryption_with_a_data_shift_as_cryptsetup() {
    let Some(out) = run_case("reduce-online", 200) else {
        return;
    };
    let of = |tool: &str| -> Vec<String> {
        lines_with(&out, &format!("reduce {tool}: "))
            .into_iter()
            .filter(|l| !l.starts_with("writer iterations"))
            .map(|l| l.replace(other(tool), "OTHER"))
            .collect()
    };
    fn other(tool: &str) -> &'static str {
        if tool == "cryptsetup" {
            "lukskit"
        } else {
            "cryptsetup"
        }
    }
    let cs = of("cryptsetup");
    let lk = of("lukskit");
    for want in [
        "whole mapping: exit 1",
        "whole mapping: stderr: Illegal device size requested in reencryption parameters.",
        "whole mapping: table: 0 98304 crypt aes-xts-plain64 254:0 32768",
        "online: exit 0",
        "online: table: 0 81920 crypt aes-xts-plain64 254:0 49152",
        "online: mappings: v ",
        "OTHER opens: 0 81920 crypt aes-xts-plain64 254:0 49152",
    ] {
        assert!(cs.iter().any(|l| l == want), "cryptsetup: {want}: {out}");
        assert!(lk.iter().any(|l| l == want), "lukskit: {want}: {out}");
    }
    // The one difference: cryptsetup leaves the refused shift initialized in the header.
    assert!(
        cs.iter()
            .any(|l| l == "whole mapping: left in reencryption"),
        "{out}"
    );
    for want in [
        "whole mapping: not in reencryption",
        "whole mapping: header as before",
    ] {
        assert!(lk.iter().any(|l| l == want), "lukskit: {want}: {out}");
    }
    let rest = |v: &[String]| -> Vec<String> {
        v.iter()
            .filter(|l| !l.starts_with("whole mapping: "))
            .cloned()
            .collect()
    };
    assert_eq!(rest(&lk), rest(&cs), "{out}");
    for tool in ["cryptsetup", "lukskit"] {
        let n: u64 = lines_with(&out, &format!("reduce {tool}: writer iterations: "))
            .first()
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(n >= 3, "{tool}: {out}");
    }
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
