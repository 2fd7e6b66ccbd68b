//! Keyslot updates on a [`CrashingStorage`]: an image made by cryptsetup, held in memory, is
//! updated through the library with a crash (every write and sync refused from then on) at
//! its Nth write, then at its Nth sync, for every N the update reaches. After each crash the
//! image must open with the old secret or the new one (as the update promises), and real
//! cryptsetup must agree with lukskit on every secret (`open --test-passphrase`).

use lukskit_crypto::SecretBuf;
use lukskit_format::io::MemStorage;
use lukskit_volume::device::Access;
use lukskit_volume::pbkdf::{PbkdfKind, PbkdfRequest};
use lukskit_volume::storage::{CrashAction, CrashOp, CrashPlan, CrashingStorage, SharedStorage};
use lukskit_volume::Volume;
use std::process::Command;
use std::sync::Arc;

const OLD: &[u8] = b"old secret";
const NEW: &[u8] = b"new secret";

/// A 16 MiB image formatted by cryptsetup (`--type luks1` or `luks2`) with `OLD` in slot 0;
/// `None` (after `skip_or_fail`) without cryptsetup.
fn cryptsetup_image(test: &str, kind: &str, dir: &std::path::Path) -> Option<Vec<u8>> {
    let img = dir.join("img");
    let kf = dir.join("old");
    std::fs::write(&kf, OLD).unwrap();
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let out = Command::new("cryptsetup")
        .args(["luksFormat", "-q", "--type", kind, "--pbkdf", "pbkdf2"])
        .args(["--pbkdf-force-iterations", "1000", "--key-file"])
        .arg(&kf)
        .arg(&img)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(std::fs::read(&img).unwrap()),
        Ok(o) => panic!(
            "cryptsetup luksFormat failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(_) => {
            lukskit_testkit::skip_or_fail(
                test,
                "cryptsetup is not installed (apt-get install cryptsetup-bin)",
            );
            None
        }
    }
}

fn fast_pbkdf() -> PbkdfRequest {
    PbkdfRequest {
        kind: Some(PbkdfKind::Pbkdf2),
        force_iterations: Some(1000),
        ..Default::default()
    }
}

/// Does `secret` open the image held in `bytes`, through lukskit? Asserts that cryptsetup
/// (on a copy in `dir`) gives the same answer.
fn opens(bytes: &[u8], secret: &[u8], dir: &std::path::Path, what: &str) -> bool {
    let storage: SharedStorage = Arc::new(MemStorage::from_vec(bytes.to_vec()));
    let ours = Volume::load_storage(storage, "image", None, Access::Read)
        .and_then(|v| v.unlock(secret, None, false))
        .is_ok();
    let img = dir.join("check.img");
    let kf = dir.join("check.key");
    std::fs::write(&img, bytes).unwrap();
    std::fs::write(&kf, secret).unwrap();
    let theirs = Command::new("cryptsetup")
        .args(["open", "--test-passphrase", "--key-file"])
        .arg(&kf)
        .arg(&img)
        .output()
        .unwrap()
        .status
        .success();
    assert_eq!(
        ours,
        theirs,
        "{what}: lukskit and cryptsetup disagree on {:?}",
        String::from_utf8_lossy(secret)
    );
    ours
}

/// An update of a loaded volume (the volume key, unlocked with `OLD`, is given).
type Update = fn(&mut Volume, &SecretBuf) -> lukskit_volume::Result<()>;

/// Run `update` on `image` with a crash at every write, then at every sync, it reaches; check
/// after each that `OLD` opens (`old_always`) or at least one of `OLD` and `NEW` does, and
/// that `NEW` opens once the update ran without a crash. Returns the number of crash points
/// tried.
fn crash_everywhere(
    image: &[u8],
    dir: &std::path::Path,
    update: Update,
    old_always: bool,
) -> usize {
    let mut tried = 0;
    for op in [CrashOp::Write, CrashOp::Sync] {
        for n in 1.. {
            let plan = Arc::new(CrashPlan::new().at(op, n, CrashAction::Fail));
            let mem = Arc::new(MemStorage::from_vec(image.to_vec()));
            let crashing: SharedStorage =
                Arc::new(CrashingStorage::new(Arc::clone(&mem), Arc::clone(&plan)));
            let mut vol = Volume::load_storage(crashing, "image", None, Access::Write).unwrap();
            let (_, key) = vol.unlock(OLD, None, false).unwrap();
            let result = update(&mut vol, &key);
            drop(vol);
            let what = format!("crash at {op:?} {n}");
            if !plan.crashed() {
                result.unwrap_or_else(|e| panic!("{what}: update failed without a crash: {e}"));
                assert!(
                    opens(&mem.to_vec(), NEW, dir, &what),
                    "{what}: done, NEW opens"
                );
                break;
            }
            assert!(result.is_err(), "{what}: a crashed update reports an error");
            tried += 1;
            let after = mem.to_vec();
            let old = opens(&after, OLD, dir, &what);
            let new = opens(&after, NEW, dir, &what);
            if old_always {
                assert!(old, "{what}: OLD must still open");
            } else {
                assert!(old || new, "{what}: neither OLD nor NEW opens");
            }
        }
    }
    tried
}

fn add_new(vol: &mut Volume, key: &SecretBuf) -> lukskit_volume::Result<()> {
    vol.add_keyslot(key, NEW, None, &fast_pbkdf(), false)
        .map(|_| ())
}

fn change_to_new(vol: &mut Volume, key: &SecretBuf) -> lukskit_volume::Result<()> {
    vol.change_keyslot(0, key, NEW, &fast_pbkdf(), false)
        .map(|_| ())
}

fn scenario(test: &str, kind: &str, update: Update, old_always: bool) {
    let dir = tempfile::tempdir().unwrap();
    let Some(image) = cryptsetup_image(test, kind, dir.path()) else {
        return;
    };
    let tried = crash_everywhere(&image, dir.path(), update, old_always);
    eprintln!("{test}: crash points tried: {tried}");
    assert!(
        tried >= 3,
        "{test}: the update has writes and syncs to crash at"
    );
}

#[test]
fn luks2_add_key_survives_a_crash_anywhere() {
    scenario("luks2_add_key", "luks2", add_new, true);
}

#[test]
fn luks2_change_key_survives_a_crash_anywhere() {
    scenario("luks2_change_key", "luks2", change_to_new, false);
}

#[test]
fn luks1_add_key_survives_a_crash_anywhere() {
    scenario("luks1_add_key", "luks1", add_new, true);
}

#[test]
fn luks1_change_key_survives_a_crash_anywhere() {
    scenario("luks1_change_key", "luks1", change_to_new, false);
}
