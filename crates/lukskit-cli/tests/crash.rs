//! Crash injection: the process is stopped (`_exit`, no cleanup) before its Nth metadata
//! write or Nth sync, for every N an operation reaches. Afterwards the volume must open with
//! the old or the new secret, and real cryptsetup must agree with lukskit on each secret.

mod common;
use common::*;

const FAST: [&str; 4] = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"];
const CRASH_STATUS: i32 = 86;

fn opens(img: &str, kf: &str) -> bool {
    let ours = lukskit(&["open", "--test-passphrase", "-d", kf, img], b"").code == 0;
    if let Some(c) = cryptsetup(&["open", "--test-passphrase", "-d", kf, img], b"") {
        assert_eq!(
            c.code == 0,
            ours,
            "cryptsetup and lukskit disagree on {kf}: {}",
            c.stderr
        );
    }
    ours
}

/// Run `op` with a crash at every write and every sync; return the number of crash points.
fn crash_all(
    kind: &str,
    name: &str,
    op: &dyn Fn(&str, &[String]) -> Vec<String>,
    replaces_secret: bool,
) -> usize {
    let dir = tmp();
    let base = sparse(dir.path(), "base.img", 20 << 20);
    let k = |n: &str, s: &[u8]| write_file(dir.path(), n, s);
    let keys = vec![k("k0", b"zero"), k("k1", b"one"), k("k2", b"two")];
    let mut fmt = vec!["luksFormat", "-q", "--type", kind, "-d", &keys[0]];
    fmt.extend_from_slice(&FAST);
    fmt.push(&base);
    lukskit(&fmt, b"").ok("format");
    let mut add = vec!["luksAddKey", "-q", "-d", &keys[0], &base, &keys[1]];
    add.extend_from_slice(&FAST);
    lukskit(&add, b"").ok("add k1");
    let pristine = std::fs::read(&base).unwrap();
    let img = dir.path().join("work.img");
    let img = img.to_str().unwrap().to_string();
    let mut points = 0;
    for what in ["write", "sync"] {
        for n in 1.. {
            std::fs::write(&img, &pristine).unwrap();
            let args = op(&img, &keys);
            let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
            let spec = format!("{what}:{n}");
            let r = lukskit_env(&argv, b"", &[("LUKSKIT_CRASH_AT", &spec)]);
            if r.code == 0 {
                break;
            }
            assert_eq!(
                r.code, CRASH_STATUS,
                "{kind} {name} {spec}: unexpected failure {}",
                r.stderr
            );
            points += 1;
            if replaces_secret {
                let old = opens(&img, &keys[1]);
                let new = opens(&img, &keys[2]);
                assert!(
                    old || new,
                    "{kind} {name} crashed at {spec}: neither old nor new secret opens"
                );
            }
            // The keyslot the operation does not touch always survives.
            assert!(
                opens(&img, &keys[0]),
                "{kind} {name} at {spec}: untouched keyslot lost"
            );
            assert!(n < 200, "runaway");
        }
    }
    points
}

#[test]
fn crash_at_every_write_keeps_a_working_secret() {
    if !have_cryptsetup("crash injection") {
        return;
    }
    let fast: Vec<String> = FAST.iter().map(|s| s.to_string()).collect();
    let mut total = 0;
    for kind in ["luks1", "luks2"] {
        let f = fast.clone();
        total += crash_all(
            kind,
            "luksAddKey",
            &move |img, k| {
                let mut v: Vec<String> = ["luksAddKey", "-q", "-d", &k[1], img, &k[2]]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                v.extend(f.iter().cloned());
                v
            },
            true,
        );
        let f = fast.clone();
        total += crash_all(
            kind,
            "luksChangeKey",
            &move |img, k| {
                let mut v: Vec<String> = ["luksChangeKey", "-q", "-d", &k[1], img, &k[2]]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                v.extend(f.iter().cloned());
                v
            },
            true,
        );
        total += crash_all(
            kind,
            "luksKillSlot",
            &|img, _k| {
                ["luksKillSlot", "-q", img, "1"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            },
            false,
        );
        total += crash_all(
            kind,
            "luksRemoveKey",
            &|img, k| {
                ["luksRemoveKey", "-q", "-d", &k[1], img]
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            },
            false,
        );
    }
    eprintln!("crash points tried: {total}");
    assert!(
        total >= 16,
        "too few crash points ({total}): injection not reaching the writes?"
    );
}
