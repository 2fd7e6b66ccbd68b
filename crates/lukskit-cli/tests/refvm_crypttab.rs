//! crypttab against Debian's boot tooling and cryptsetup 2.6.1 on real dm-crypt (reference VM,
//! script tests/refvm/crypttab/crypttab.sh). One crypttab — a LUKS2 entry found by `UUID=`
//! with a key file, a LUKS1 entry with a typed passphrase (`tries=`), a `noauto` entry, a
//! `nofail` entry whose device is missing, a plain entry with cipher/size/offset/skip and
//! performance flags, and a LUKS2 entry with a detached header, key slot and key file
//! offset/size (`readonly`) — is set up by Debian's `cryptdisks_start` with real cryptsetup
//! (the reference), by `lukskit crypttab open`, and by `cryptdisks_start` with lukskit
//! installed as `/sbin/cryptsetup`. Every mapping must be the same: `dmsetup table
//! --showkeys`, the DM UUID, the attributes and real cryptsetup's `status` — except that
//! Debian's scripts open as `NAME_unformatted` and rename (`dmsetup rename`), which leaves
//! `_unformatted` in the DM UUID, while `lukskit crypttab` opens as NAME (as
//! systemd-cryptsetup does). `cryptdisks_stop` and `lukskit crypttab close` must leave no
//! mapping. Debian's initramfs boot script (`scripts/local-top/cryptroot` of
//! cryptsetup-initramfs, which opens as NAME) run on the same entries with cryptsetup and
//! with lukskit as `/sbin/cryptsetup` must make exactly the mappings `lukskit crypttab open`
//! makes. The systemd dialect: key files and a detached header on another device by
//! `UUID=`/`LABEL=`, an ignored token option (warned), a refused `swap` entry and a missing
//! device without `nofail` (exit status 4, the other entries opened all the same). `UUID=` of LUKS on an md RAID-1
//! with metadata 1.0 (whose legs start with the LUKS header too) finds the array, never a leg,
//! assembled or stopped. `lukskit rename` renames lukskit's and cryptsetup's kernel mappings.

mod common;
mod refvm_common;

use std::collections::BTreeMap;

const NAMES: [&str; 5] = ["ctkey", "ctprompt", "ctnoauto", "ctplain", "ctdetached"];
/// The entries given to Debian's initramfs boot script (a root has no noauto entries).
const BOOT_NAMES: [&str; 4] = ["ctkey", "ctprompt", "ctplain", "ctdetached"];

#[test]
fn crypttab_matches_debian_cryptdisks() {
    const T: &str = "refvm_crypttab";
    let dir = common::tmp();
    // 40 to 105 s of VM time here (one boot), depending on the host's load.
    let Some(r) =
        refvm_common::run_script_on_blank_disks(T, "crypttab/crypttab.sh", dir.path(), 6, 100)
    else {
        return;
    };
    let out = &r.stdout;
    assert!(out.contains("crypttab: done"), "{out}\n{}", r.stderr);
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "{fails:#?}\n{out}");
    for ok in [
        "A: cryptdisks_stop closed every mapping",
        "B: noauto entry not opened by default",
        "B: noauto entry opened when named",
        "B: opening an active entry again succeeds",
        "B: crypttab close closed every mapping",
        "B2: key file on a device by UUID= gives cryptsetup's table",
        "B2: the key device is unmounted again",
        "B2: refused entry not opened",
        "B2: key file on a device by LABEL=",
        "B2: same table by LABEL=",
        "B2: detached header on a device by UUID=",
        "B2: same table as cryptdisks_start's for the detached header",
        "B2: closes",
        "rename: lukskit renames",
        "rename: the new name is active",
        "rename: cryptsetup status of the new name",
        "rename: refuses an existing name",
        "rename: renames cryptsetup's mapping",
        "rename: closes",
        "B2: everything closed",
        "raid: a leg shows the array's LUKS header",
        "raid: opens on the assembled array",
        "raid: the mapping is on md0",
        "raid: closes",
        "raid: a stopped array's legs are not the source",
        "C: /sbin/cryptsetup is lukskit",
        "C: cryptdisks_stop closed every mapping",
        "DR: every boot mapping closed",
        "DL: every boot mapping closed",
    ] {
        assert!(
            out.lines().any(|l| l == format!("ok: {ok}")),
            "missing check {ok:?}:\n{out}"
        );
    }
    for rc in [
        "A start rc=0",
        "A missing rc=1",
        "A stop rc=0",
        "B list rc=0",
        // ctmissing has nofail: its failure does not count.
        "B open rc=0",
        "B close rc=0",
        // ctgone (no nofail) is missing: exit 4, as cryptsetup's for a missing device.
        "B2 open rc=4",
        "C start rc=0",
        "C missing rc=1",
        "C stop rc=0",
        "DR boot rc=0",
        "DL boot rc=0",
    ] {
        assert!(out.lines().any(|l| l == rc), "expected {rc:?}:\n{out}");
    }
    for line in [
        "list: ctnoauto (line 4): opened only when named (noauto)",
        "list: ctmissing (line 5): fails: device UUID=0badc0de-0000-4000-8000-000000000000 not found",
        "list:   command: lukskit open --type plain --cipher aes-xts-plain64 --key-size 512 \
         --offset 2048 --skip 16 --key-file /etc/keys/k64 --tries 1 --perf-same_cpu_crypt \
         --perf-no_read_workqueue /dev/vdd ctplain",
        "list:   command: lukskit open --type luks --header /etc/keys/hdr --key-slot 1 \
         --keyfile-size 16 --keyfile-offset 4 --key-file /etc/keys/kb --tries 1 --readonly \
         /dev/vde ctdetached",
        "list:   command: lukskit open --type luks --tries 2 /dev/vdb ctprompt",
        "B log: ctmissing: Device UUID=0badc0de-0000-4000-8000-000000000000 not found. \
         (nofail: not counted as a failure)",
        "B2 log: ctgone: Device UUID=0badc0de-0000-4000-8000-000000000000 not found.",
        "B2 log: ctvc: option 'swap' is not supported: lukskit does not make swap areas \
         (mkswap) on mappings; not opened.",
    ] {
        assert!(out.lines().any(|l| l == line), "expected {line:?}:\n{out}");
    }
    // (way, name) -> the lines of its block.
    let mut blocks: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (way, name, line) in refvm_common::block_lines(out) {
        if ["table: ", "uuid: ", "attr: ", "status: ", "missing: "]
            .iter()
            .any(|p| line.starts_with(p))
        {
            blocks
                .entry((way, name))
                .or_default()
                .push(line.to_string());
        }
    }
    let block = |way: &str, name: &str| {
        blocks
            .get(&(way.to_string(), name.to_string()))
            .unwrap_or_else(|| panic!("no block {way} {name} in:\n{out}"))
            .clone()
    };
    for name in NAMES {
        let a = block("A", name);
        assert!(
            a.iter().any(|l| l.starts_with("table: 0 ")),
            "{name}: Debian's cryptdisks_start made no mapping: {a:#?}\n{out}"
        );
        assert!(
            a.iter().any(|l| l.starts_with("status: ")),
            "{name}: {a:#?}"
        );
        // Debian's scripts open as NAME_unformatted and rename; lukskit opens as NAME.
        let a_named: Vec<String> = a
            .iter()
            .map(|l| {
                if l.starts_with("uuid: ") {
                    l.replace(&format!("-{name}_unformatted"), &format!("-{name}"))
                } else {
                    l.clone()
                }
            })
            .collect();
        assert_eq!(
            block("B", name),
            a_named,
            "{name}: lukskit crypttab open differs from cryptdisks_start with cryptsetup"
        );
        assert_eq!(
            block("C", name),
            a,
            "{name}: cryptdisks_start with lukskit as /sbin/cryptsetup differs from it with \
             cryptsetup"
        );
    }
    // Debian's initramfs boot script opens each entry as NAME: with lukskit as
    // /sbin/cryptsetup the same mappings as with cryptsetup, and the same as lukskit crypttab.
    for name in BOOT_NAMES {
        let dr = block("DR", name);
        assert!(
            dr.iter().any(|l| l.starts_with("table: 0 ")),
            "{name}: Debian's boot script made no mapping: {dr:#?}\n{out}"
        );
        assert_eq!(
            block("DL", name),
            dr,
            "{name}: Debian's boot script with lukskit as /sbin/cryptsetup differs from it \
             with cryptsetup"
        );
        assert_eq!(
            block("B", name),
            dr,
            "{name}: lukskit crypttab open differs from Debian's boot script"
        );
        for way in ["DR", "DL"] {
            assert!(
                out.lines()
                    .any(|l| l == format!("{way} log: cryptsetup: {name}: set up successfully")),
                "{way} {name}:\n{out}"
            );
        }
    }
    // The cases cover what they claim: a UUID= source, a LUKS1 passphrase, flags, read-only.
    let a_plain = block("A", "ctplain").join("\n");
    assert!(
        a_plain.contains(" 2048 2 same_cpu_crypt no_read_workqueue"),
        "{a_plain}"
    );
    assert!(block("A", "ctkey").join("\n").contains("allow_discards"));
    assert!(block("A", "ctprompt").join("\n").contains("type:    LUKS1"));
    assert!(block("A", "ctdetached").iter().any(|l| l == "attr: L--r"));
}
