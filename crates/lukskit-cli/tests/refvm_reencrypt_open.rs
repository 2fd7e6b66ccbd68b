//! `open` of a LUKS2 device whose re-encryption is in progress, against the kernel and
//! cryptsetup 2.6.1 in the reference VM (script tests/refvm/reencrypt/open.sh, one boot):
//!
//! * a re-encryption initialized by real cryptsetup (`--init-only`, new cipher and key):
//!   cryptsetup and lukskit open it in turn; `dmsetup table --showkeys` (one target per
//!   segment, keys named in the kernel keyring after their digest), the DM UUID, `status`
//!   (with "reencryption:  in-progress") and the plaintext checksum are the same; lukskit
//!   then resumes online under lukskit's mapping (auto-detected), and the data survives;
//! * lukskit re-encryptions stopped at their Nth metadata write (crash injection): clean
//!   states with two segments under two keys, and hot zones in flight, which lukskit's
//!   `open` recovers before cryptsetup opens the same device; cryptsetup finishes the
//!   re-encryption and both tools open the result;
//! * `reencrypt --encrypt --init-only --header FILE DEVICE NAME` activates NAME, with the
//!   same table, plaintext and message ("… is now active and ready for online
//!   encryption.") as cryptsetup's.

mod common;
mod refvm_common;

fn blocks(out: &str) -> std::collections::BTreeMap<(String, String), Vec<String>> {
    let mut m = std::collections::BTreeMap::new();
    for (state, tool, line) in refvm_common::block_lines(out) {
        if [
            "table: ",
            "uuid: ",
            "status: ",
            "sum: ",
            "namesum: ",
            "initout: ",
        ]
        .iter()
        .any(|p| line.starts_with(p))
        {
            m.entry((state, tool))
                .or_insert_with(Vec::new)
                .push(line.to_string());
        }
    }
    m
}

#[test]
fn open_during_reencryption_as_cryptsetup() {
    let test = "refvm_reencrypt_open";
    let dir = common::tmp();
    let Some(r) =
        refvm_common::run_script_on_blank_disks(test, "reencrypt/open.sh", dir.path(), 1, 300)
    else {
        return;
    };
    let out = &r.stdout;
    refvm_common::say(&format!("{test}: {out}"));
    assert!(out.contains("RESULT ok"), "{out}{}", r.stderr);
    let plain = out
        .lines()
        .find_map(|l| l.strip_prefix("plain: "))
        .expect("plain checksum")
        .to_string();
    let b = blocks(out);
    let states: std::collections::BTreeSet<&String> = b.keys().map(|(s, _)| s).collect();
    for state in &states {
        let cs = &b[&((*state).clone(), "cryptsetup".to_string())];
        let lk = &b[&((*state).clone(), "lukskit".to_string())];
        assert_eq!(lk, cs, "{state}: lukskit and cryptsetup differ\n{out}");
        let want = if *state == "initname" {
            let p2 = out
                .lines()
                .find_map(|l| l.strip_prefix("plain2: "))
                .expect("plain2");
            format!("namesum: {p2}")
        } else {
            format!("sum: {plain}")
        };
        assert!(cs.contains(&want), "{state}: plaintext differs\n{out}");
    }
    // The state cryptsetup's --init-only leaves (nothing re-encrypted yet): the status
    // says re-encryption, the DM UUID is cryptsetup's.
    let init = &b[&("init".to_string(), "lukskit".to_string())];
    assert!(
        init.contains(&"status:   reencryption:  in-progress".to_string()),
        "{init:?}"
    );
    assert!(
        init.iter()
            .any(|l| l.starts_with("uuid: CRYPT-LUKS2-") && l.ends_with("-v")),
        "{init:?}"
    );
    assert!(
        out.contains(&format!("resumed online: none, sum: {plain}")),
        "{out}"
    );
    // Crash points gave both kinds of state, and lukskit's open recovered the hot zones.
    let mut clean_two = 0;
    let mut crash = 0;
    for l in out.lines().filter(|l| l.starts_with("state w")) {
        if l.contains(": crash") {
            crash += 1;
        }
        if l.contains(": clean") {
            let n = l.split(':').next().unwrap().trim_start_matches("state ");
            let tables = b
                .get(&(n.to_string(), "lukskit".to_string()))
                .map_or(0, |v| v.iter().filter(|x| x.starts_with("table: ")).count());
            if tables > 1 {
                clean_two += 1;
            }
        }
        assert!(!l.contains("after open: crash"), "{l}\n{out}");
    }
    assert!(
        crash > 0 && clean_two > 0,
        "crash {crash}, clean {clean_two}\n{out}"
    );
    assert!(
        b.contains_key(&("initname".to_string(), "lukskit".to_string())),
        "{out}"
    );
}
