//! A new re-encryption through the library alone, as a program embedding lukskit would run
//! it (no command line): a LUKS2 image made by cryptsetup gets a new volume key, offline,
//! with the steps `lukskit-reencrypt` documents — `start::check`, the device claim,
//! `initialize` with an `InitHost` that answers from memory, the lock, `run`. cryptsetup then
//! reads the result: the re-encryption is complete in its eyes, its passphrase opens the new
//! key, and the data decrypted with the key cryptsetup dumps is what it was before.

use lukskit_crypto::engine::SectorCipher;
use lukskit_crypto::spec::CipherSpec;
use lukskit_crypto::SecretBuf;
use lukskit_reencrypt::initialize::{InitHost, InitRequest, Unlock};
use lukskit_reencrypt::{claim, start, ClaimRefusal, Progress, ReencryptRequest};
use lukskit_reencrypt::{RunRequest, RunTarget};
use lukskit_volume::device::Access;
use lukskit_volume::pbkdf::{PbkdfKind, PbkdfRequest};
use lukskit_volume::reencrypt::{device_block_size, Outcome, Status};
use lukskit_volume::Volume;
use std::os::unix::fs::FileExt;
use std::process::Command;

const PASS: &[u8] = b"library re-encryption";
const MIB: u64 = 1 << 20;
/// cryptsetup's default LUKS2 data offset for this image.
const DATA_OFFSET: u64 = 16 * MIB;
const DATA_SIZE: u64 = 4 * MIB;

/// The passphrase, from memory.
struct Answers;

impl InitHost for Answers {
    type Error = lukskit_volume::VolumeError;

    fn unlock(&mut self, vol: &Volume, ask: Unlock) -> Result<(SecretBuf, SecretBuf), Self::Error> {
        let slot = match ask {
            Unlock::Volume(slot) => slot,
            Unlock::Keyslot(slot) => Some(slot),
        };
        let (_, vk) = vol.unlock(PASS, slot, false)?;
        Ok((vk, SecretBuf::from_slice(PASS)))
    }

    fn passphrases_read(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }

    fn cipher_switched(&mut self, _cipher: &CipherSpec) {}

    fn volume_key_file(&mut self, _len: usize) -> Result<Option<SecretBuf>, Self::Error> {
        Ok(None)
    }

    fn sector_increase_allowed(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Counts the progress reports.
struct Reports(u32);

impl Progress for Reports {
    fn update(&mut self, done: u64, total: u64) -> bool {
        assert!(done <= total);
        self.0 += 1;
        true
    }
}

/// Run cryptsetup with the passphrase in a key file (never in argv); its standard output.
fn cryptsetup(args: &[&str], key_file: &std::path::Path) -> String {
    let out = Command::new("cryptsetup")
        .args(args)
        .arg("--key-file")
        .arg(key_file)
        .output()
        .expect("cryptsetup (Debian's cryptsetup-bin) must be installed for this test");
    assert!(
        out.status.success(),
        "cryptsetup {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The volume key cryptsetup dumps.
fn volume_key(image: &str, key_file: &std::path::Path) -> Vec<u8> {
    let dump = cryptsetup(
        &["luksDump", "--dump-volume-key", "--batch-mode", image],
        key_file,
    );
    let hex: String = dump
        .split("MK dump:")
        .nth(1)
        .expect("a volume key dump")
        .split_whitespace()
        .collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// The data area of `image` decrypted with `key` (aes-xts-plain64, 4096-byte sectors, IVs
/// in 512-byte units as LUKS2 counts them).
fn plaintext(image: &str, key: &[u8]) -> Vec<u8> {
    let all = std::fs::read(image).unwrap();
    let mut data = all[DATA_OFFSET as usize..].to_vec();
    let spec = CipherSpec::parse("aes-xts-plain64").unwrap();
    let engine = SectorCipher::new(&spec, key, 4096, false).unwrap();
    for (i, sector) in data.chunks_mut(4096).enumerate() {
        engine.decrypt(sector, i as u64 * 8).unwrap();
    }
    data
}

#[test]
fn a_new_volume_key_offline_through_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("disk.img");
    let image = image.to_str().unwrap();
    let key_file = dir.path().join("pass");
    std::fs::write(&key_file, PASS).unwrap();
    let f = std::fs::File::create(image).unwrap();
    f.set_len(DATA_OFFSET + DATA_SIZE).unwrap();
    // Ciphertext that is no run of zeros, so that a sector left alone or moved shows.
    f.write_all_at(
        &lukskit_testkit::pattern(DATA_SIZE as usize, 7),
        DATA_OFFSET,
    )
    .unwrap();
    drop(f);
    cryptsetup(
        &[
            "luksFormat",
            "--batch-mode",
            "--type",
            "luks2",
            "--cipher",
            "aes-xts-plain64",
            "--key-size",
            "512",
            "--sector-size",
            "4096",
            "--pbkdf",
            "pbkdf2",
            "--pbkdf-force-iterations",
            "1000",
            image,
        ],
        &key_file,
    );
    let old_key = volume_key(image, &key_file);
    let before = plaintext(image, &old_key);

    // The library's steps.
    let req = ReencryptRequest {
        pbkdf_given: true,
        ..ReencryptRequest::default()
    };
    let pbkdf = PbkdfRequest {
        kind: Some(PbkdfKind::Pbkdf2),
        force_iterations: Some(1000),
        ..PbkdfRequest::default()
    };
    let mut vol = Volume::load(image, None, Access::Write).unwrap();
    let status = start::check(vol.luks2().unwrap(), &req, false).unwrap();
    assert_eq!(status, Status::None);
    let _claim = claim::claim(&vol.data_path, ClaimRefusal::Run).unwrap();
    let block = device_block_size(vol.dev.file());
    let init = InitRequest {
        req: &req,
        data_dev: None,
        block,
        online: None,
        cipher: None,
        key_bits: None,
        key_file: true,
        pbkdf: &pbkdf,
        new_header: None,
    };
    let keys = lukskit_reencrypt::initialize(&mut vol, init, &mut Answers).unwrap();
    let _lock = lukskit_reencrypt::lock(vol.uuid(), false).unwrap();
    let mut reports = Reports(0);
    let out = lukskit_reencrypt::run(
        &mut vol,
        None,
        block,
        &keys,
        RunTarget::Offline,
        RunRequest::default(),
        &mut reports,
    )
    .unwrap();
    assert_eq!(out, Outcome::Finished);
    assert!(reports.0 > 0);
    drop(vol);

    // What cryptsetup sees.
    let dump = cryptsetup(&["luksDump", image], &key_file);
    assert!(!dump.contains("reencrypt"), "{dump}");
    assert!(!dump.contains("Requirements"), "{dump}");
    cryptsetup(&["open", "--test-passphrase", image], &key_file);
    let new_key = volume_key(image, &key_file);
    assert_eq!(new_key.len(), old_key.len());
    assert_ne!(new_key, old_key);
    assert!(plaintext(image, &new_key) == before, "the data changed");
}
