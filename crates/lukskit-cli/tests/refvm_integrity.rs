//! LUKS2 authenticated encryption against cryptsetup 2.6.1 and the kernel's dm-integrity
//! (reference VM, script tests/refvm/kernel/integrity.sh). For HMAC (SHA-1/256, legacy and
//! fixed padding, 512- and 4096-byte sectors, random IVs), AES-GCM, AES-CCM,
//! ChaCha20-Poly1305 and AEGIS-128: a volume cryptsetup formatted opens under lukskit with the
//! same two mappings (`dmsetup table` of NAME and NAME_dif, DM UUIDs) and the same `status`;
//! a volume lukskit formatted is the volume cryptsetup formats (same luksDump but for salts,
//! digests and the UUID; the same mappings and the same data — all zeros after the wipe,
//! equal checksums); `lukskit status` prints cryptsetup's text; `close` removes both
//! mappings; a corrupted sector reads as an I/O error.

mod common;
mod refvm_common;

use std::collections::BTreeMap;

const CASES: [&str; 7] = [
    "hmac256-legacy",
    "xts-random-4k",
    "essiv-sha1",
    "gcm",
    "ccm-4k",
    "chacha",
    "aegis",
];

#[test]
fn integrity_volumes_match_cryptsetup() {
    const T: &str = "refvm_integrity";
    let dir = common::tmp();
    // A 32 MiB disk: every case wipes it twice through dm-integrity and reads it back four
    // times under TCG (a 64 MiB one took 357 s in CI beside the host tests).
    let run = refvm_common::ScriptRun {
        mib: 32,
        ..refvm_common::ScriptRun::new(T, "kernel/integrity.sh", dir.path(), 1, 400)
    };
    let Some(r) = run.run() else {
        return;
    };
    let out = &r.stdout;
    assert!(out.contains("integrity: done"), "{out}");
    assert!(!out.contains("failed"), "{out}");
    let mut blocks: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (case, tag, line) in refvm_common::block_lines(out) {
        blocks
            .entry((case, tag))
            .or_default()
            .push(line.to_string());
    }
    let get = |case: &str, tag: &str, prefix: &str| -> Vec<String> {
        blocks
            .get(&(case.to_string(), tag.to_string()))
            .unwrap_or_else(|| panic!("{case} {tag} missing: {out}"))
            .iter()
            .filter(|l| l.starts_with(prefix))
            .cloned()
            .collect()
    };
    for case in CASES {
        let reference = get(case, "cs-cs", "");
        // Both mappings, their UUIDs and a real (non-empty) checksum from cryptsetup.
        assert_eq!(
            get(case, "cs-cs", "table: ").len(),
            2,
            "{case}: {reference:?}"
        );
        assert!(
            get(case, "cs-cs", "table: ")[1].contains(" integrity "),
            "{case}: {reference:?}"
        );
        let sum = get(case, "cs-cs", "sum: ");
        assert_eq!(sum[0].len(), "sum: ".len() + 64, "{case}: {reference:?}");
        for tag in ["cs-lk", "lk-cs", "lk-lk"] {
            for prefix in ["table: ", "uuid: ", "status: ", "sum: "] {
                assert_eq!(
                    get(case, tag, prefix),
                    get(case, "cs-cs", prefix),
                    "{case} {tag} {prefix}"
                );
            }
        }
        // lukskit status prints cryptsetup's status.
        for tag in ["cs-cs", "cs-lk", "lk-cs", "lk-lk"] {
            let lk: Vec<String> = get(case, tag, "lkstatus: ")
                .iter()
                .map(|l| l.replacen("lkstatus: ", "status: ", 1))
                .collect();
            assert_eq!(
                lk,
                get(case, tag, "status: "),
                "{case} {tag} lukskit status"
            );
        }
        assert!(
            out.contains(&format!("{case}: corruption: EIO")),
            "{case}: {out}"
        );
    }
    // luksDump: lukskit's of cryptsetup's header is cryptsetup's, and lukskit's header dumps
    // as cryptsetup's (both formatted with the same parameters).
    let dumps: Vec<(&str, Vec<&str>)> = out
        .split("== ")
        .skip(1)
        .map(|b| (b.lines().next().unwrap_or(""), b.lines().collect()))
        .collect();
    for case in CASES {
        let pick = |tag: &str, prefix: &str| -> Vec<String> {
            dumps
                .iter()
                .find(|(h, _)| *h == format!("{case} {tag}"))
                .map(|(_, l)| {
                    l.iter()
                        .filter_map(|x| x.strip_prefix(prefix))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let cs_of_cs = pick("cs-lk", "csdump: ");
        assert!(
            cs_of_cs.iter().any(|l| l.contains("integrity: ")),
            "{case}: {cs_of_cs:?}"
        );
        assert_eq!(
            pick("cs-lk", "lkdump: "),
            cs_of_cs,
            "{case}: lukskit luksDump"
        );
        assert_eq!(
            pick("lk-lk", "csdump: "),
            cs_of_cs,
            "{case}: lukskit's header"
        );
        assert_eq!(
            pick("lk-lk", "lkdump: "),
            cs_of_cs,
            "{case}: lukskit's header"
        );
    }
    assert!(
        !out.contains("left: 1") && !out.contains("left: 2"),
        "{out}"
    );
}
