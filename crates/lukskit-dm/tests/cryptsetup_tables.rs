//! Table lines and DM UUIDs captured from real cryptsetup 2.6.1, parsed and re-rendered.
//!
//! How they were captured: in the reference VM (`tests/refvm/run.sh`, Debian 12, Linux
//! 6.1.0-56-amd64, dm-crypt v1.24.0, cryptsetup 2.6.1, `DM_DISABLE_UDEV=1`) on a 80 MiB
//! `/dev/vda` (254:0), each mapping was opened with the cryptsetup command in the comment and
//! read with `dmsetup table --showkeys NAME` and `dmsetup info -c -o name,uuid,attr NAME`.
//! The keys are random test keys of that run. The kernel prints the table back (device as
//! major:minor, options in its own order), so these lines are the kernel's view of what
//! cryptsetup loaded.

use lukskit_crypto::SecretBuf;
use lukskit_dm::dm_uuid::{crypt_dm_uuid, parse_crypt_dm_uuid};
use lukskit_dm::keyring::luks2_key_description;
use lukskit_dm::{CryptFlags, CryptKey, CryptTarget, DevT, KeyType, Target};

const VK64: &str = "58fe44e95d71d352a5ba4f3910e511b18d05d339ca3089c233d0ce9151e3a3473e78afedc6f6d8f23cc08a13fb098d8238503ff22f0874330431879dbed37bf0";
const VK32: &str = "60568b5461e0ac711c52b9f06ada67e7b657f49ec44959d661ea43ea7c3e76bf";

fn crypt(line: &str) -> CryptTarget {
    match Target::parse_line(line, true).unwrap() {
        Target::Crypt(c) => c,
        other => panic!("not crypt: {other:?}"),
    }
}

fn hex_key(h: &str) -> CryptKey {
    CryptKey::Hex(SecretBuf::from_vec(hex::decode(h).unwrap()))
}

/// Parse `line`, check it re-renders to itself, and return the target.
fn round_trip(line: &str) -> CryptTarget {
    let c = crypt(line);
    assert_eq!(Target::Crypt(c.clone()).to_line().as_str(), line);
    c
}

// cryptsetup luksFormat --type luks2 -s 512 --uuid 11111111-2222-3333-4444-555555555555
// cryptsetup open /dev/vda l2          (uuid CRYPT-LUKS2-11111111222233334444555555555555-l2)
const LUKS2_KEYRING: &str = "0 131072 crypt aes-xts-plain64 :64:logon:cryptsetup:11111111-2222-3333-4444-555555555555-d0 0 254:0 32768";
// cryptsetup open --disable-keyring /dev/vda l2h
const LUKS2_HEX: &str = "0 131072 crypt aes-xts-plain64 58fe44e95d71d352a5ba4f3910e511b18d05d339ca3089c233d0ce9151e3a3473e78afedc6f6d8f23cc08a13fb098d8238503ff22f0874330431879dbed37bf0 0 254:0 32768";
// cryptsetup open --readonly --allow-discards --perf-same_cpu_crypt
//   --perf-submit_from_crypt_cpus --perf-no_read_workqueue --perf-no_write_workqueue (attr L--r)
const LUKS2_FLAGS: &str = "0 131072 crypt aes-xts-plain64 :64:logon:cryptsetup:11111111-2222-3333-4444-555555555555-d0 0 254:0 32768 5 allow_discards same_cpu_crypt submit_from_crypt_cpus no_read_workqueue no_write_workqueue";
// luksFormat --sector-size 4096 --uuid ...556; cryptsetup open /dev/vda l24k
const LUKS2_4K: &str = "0 131072 crypt aes-xts-plain64 :64:logon:cryptsetup:11111111-2222-3333-4444-555555555556-d0 0 254:0 32768 1 sector_size:4096";
// cryptsetup luksSuspend l2 (after `key wipe` the kernel prints a zero key of the same size)
const LUKS2_SUSPENDED: &str = "0 131072 crypt aes-xts-plain64 00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000 0 254:0 32768";
// luksFormat --type luks1 -s 256 --uuid ...557; open l1 (CRYPT-LUKS1-...557-l1)
const LUKS1: &str = "0 159744 crypt aes-xts-plain64 60568b5461e0ac711c52b9f06ada67e7b657f49ec44959d661ea43ea7c3e76bf 0 254:0 4096";
// cryptsetup open --type plain -c aes-xts-plain64 -s 512 --offset 2048 --skip 16 (CRYPT-PLAIN-pl)
const PLAIN_SKIP: &str = "0 161792 crypt aes-xts-plain64 58fe44e95d71d352a5ba4f3910e511b18d05d339ca3089c233d0ce9151e3a3473e78afedc6f6d8f23cc08a13fb098d8238503ff22f0874330431879dbed37bf0 16 254:0 2048";
// plain --sector-size 4096 --iv-large-sectors --allow-discards --perf-no_read_workqueue
const PLAIN_4K_LARGE: &str = "0 163840 crypt aes-xts-plain64 58fe44e95d71d352a5ba4f3910e511b18d05d339ca3089c233d0ce9151e3a3473e78afedc6f6d8f23cc08a13fb098d8238503ff22f0874330431879dbed37bf0 0 254:0 0 4 allow_discards no_read_workqueue sector_size:4096 iv_large_sectors";
// plain -c null -s 256 (cryptsetup turns it into cipher_null-ecb with no key)
const PLAIN_NULL: &str = "0 163840 crypt cipher_null-ecb - 0 254:0 0";
// plain -c aes-cbc-essiv:sha256 -s 256
const PLAIN_ESSIV: &str = "0 163840 crypt aes-cbc-essiv:sha256 60568b5461e0ac711c52b9f06ada67e7b657f49ec44959d661ea43ea7c3e76bf 0 254:0 0";
// luksFormat --type luks2 -c cipher_null-ecb --uuid ...558; open l2n
const LUKS2_NULL: &str = "0 131072 crypt cipher_null-ecb - 0 254:0 32768";

#[test]
fn luks2_keyring_line() {
    let c = round_trip(LUKS2_KEYRING);
    assert_eq!(
        (c.start, c.sectors, c.offset, c.iv_offset),
        (0, 131072, 32768, 0)
    );
    assert_eq!(c.device, DevT::new(254, 0));
    assert_eq!(c.cipher, "aes-xts-plain64");
    match &c.key {
        CryptKey::Keyring(k) => {
            assert_eq!(k.size, 64);
            assert_eq!(k.key_type, KeyType::Logon);
            assert_eq!(
                k.description,
                luks2_key_description("11111111-2222-3333-4444-555555555555", 0)
            );
        }
        other => panic!("{other:?}"),
    }
    // Built from scratch, the way the activation layer will build it.
    let vk = SecretBuf::from_vec(hex::decode(VK64).unwrap());
    let desc = luks2_key_description("11111111-2222-3333-4444-555555555555", 0);
    let mut t = CryptTarget::new(
        131072,
        "aes-xts-plain64",
        CryptKey::for_volume_key(&vk, Some(&desc), true),
        DevT::new(254, 0),
        32768,
    );
    assert_eq!(Target::Crypt(t.clone()).to_line().as_str(), LUKS2_KEYRING);
    t.key = CryptKey::for_volume_key(&vk, Some(&desc), false);
    assert_eq!(Target::Crypt(t.clone()).to_line().as_str(), LUKS2_HEX);
    t.key = CryptKey::for_volume_key(&vk, Some(&desc), true);
    t.flags = CryptFlags {
        allow_discards: true,
        same_cpu_crypt: true,
        submit_from_crypt_cpus: true,
        no_read_workqueue: true,
        no_write_workqueue: true,
        ..Default::default()
    };
    assert_eq!(Target::Crypt(t.clone()).to_line().as_str(), LUKS2_FLAGS);
    t.flags = CryptFlags::default();
    t.sector_size = 4096;
    t.key = CryptKey::for_volume_key(
        &vk,
        Some(&luks2_key_description(
            "11111111-2222-3333-4444-555555555556",
            0,
        )),
        true,
    );
    assert_eq!(Target::Crypt(t).to_line().as_str(), LUKS2_4K);
}

#[test]
fn luks2_hex_flags_4k_suspended_lines() {
    let c = round_trip(LUKS2_HEX);
    match &c.key {
        CryptKey::Hex(k) => assert_eq!(hex::encode(k.as_bytes()), VK64),
        other => panic!("{other:?}"),
    }
    let f = round_trip(LUKS2_FLAGS).flags;
    assert!(f.allow_discards && f.same_cpu_crypt && f.submit_from_crypt_cpus);
    assert!(f.no_read_workqueue && f.no_write_workqueue && !f.iv_large_sectors);
    assert_eq!(round_trip(LUKS2_4K).sector_size, 4096);
    let s = round_trip(LUKS2_SUSPENDED);
    assert_eq!(s.key.size(), 64);
    assert!(!s.key.in_keyring());
}

#[test]
fn luks1_plain_null_essiv_lines() {
    let c = round_trip(LUKS1);
    assert_eq!(c.key.size(), 32);
    assert_eq!(c.offset, 4096);
    let built = CryptTarget::new(
        159744,
        "aes-xts-plain64",
        hex_key(VK32),
        DevT::new(254, 0),
        4096,
    );
    assert_eq!(Target::Crypt(built).to_line().as_str(), LUKS1);

    let p = round_trip(PLAIN_SKIP);
    assert_eq!((p.iv_offset, p.offset), (16, 2048));

    let n = round_trip(PLAIN_NULL);
    assert!(matches!(n.key, CryptKey::Empty));
    let n2 = round_trip(LUKS2_NULL);
    assert_eq!(n2.cipher, "cipher_null-ecb");
    let built = CryptTarget::new(
        131072,
        "cipher_null-ecb",
        CryptKey::Empty,
        DevT::new(254, 0),
        32768,
    );
    assert_eq!(Target::Crypt(built).to_line().as_str(), LUKS2_NULL);

    assert_eq!(round_trip(PLAIN_ESSIV).cipher, "aes-cbc-essiv:sha256");
}

/// The kernel prints `sector_size` before `iv_large_sectors`; cryptsetup (and we) load them
/// the other way round. Parsing the kernel's line gives the same target, and rendering gives
/// cryptsetup's order, which the kernel turns back into this line (checked in the VM test).
#[test]
fn plain_4k_iv_large_sectors_kernel_order() {
    let c = crypt(PLAIN_4K_LARGE);
    assert_eq!(c.sector_size, 4096);
    assert!(c.flags.allow_discards && c.flags.no_read_workqueue && c.flags.iv_large_sectors);
    assert!(!c.flags.same_cpu_crypt);
    assert_eq!(
        Target::Crypt(c).to_line().as_str(),
        format!("0 163840 crypt aes-xts-plain64 {VK64} 0 254:0 0 4 allow_discards no_read_workqueue iv_large_sectors sector_size:4096")
    );
}

#[test]
fn reading_without_keys_redacts_hex_but_keeps_keyring_refs() {
    match Target::parse_line(LUKS2_HEX, false).unwrap() {
        Target::Crypt(c) => {
            assert!(matches!(c.key, CryptKey::Redacted { size: 64 }));
            // Like `dmsetup table` without --showkeys: zeros of the key's length.
            assert_eq!(Target::Crypt(c).to_line().as_str(), LUKS2_SUSPENDED);
        }
        other => panic!("{other:?}"),
    }
    match Target::parse_line(LUKS2_KEYRING, false).unwrap() {
        Target::Crypt(c) => assert!(c.key.in_keyring()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn dm_uuids_observed() {
    // `dmsetup info -c -o name,uuid,attr`: l2 CRYPT-LUKS2-11111111222233334444555555555555-l2
    // L--w; l2f ...-l2f L--r; l1 CRYPT-LUKS1-11111111222233334444555555555557-l1 L--w;
    // pl CRYPT-PLAIN-pl L--w; l2n CRYPT-LUKS2-11111111222233334444555555555558-l2n L--w.
    for (ty, uuid, name, want) in [
        (
            "LUKS2",
            Some("11111111-2222-3333-4444-555555555555"),
            "l2",
            "CRYPT-LUKS2-11111111222233334444555555555555-l2",
        ),
        (
            "LUKS2",
            Some("11111111-2222-3333-4444-555555555555"),
            "l2f",
            "CRYPT-LUKS2-11111111222233334444555555555555-l2f",
        ),
        (
            "LUKS1",
            Some("11111111-2222-3333-4444-555555555557"),
            "l1",
            "CRYPT-LUKS1-11111111222233334444555555555557-l1",
        ),
        ("PLAIN", None, "pl", "CRYPT-PLAIN-pl"),
        (
            "LUKS2",
            Some("11111111-2222-3333-4444-555555555558"),
            "l2n",
            "CRYPT-LUKS2-11111111222233334444555555555558-l2n",
        ),
    ] {
        assert_eq!(crypt_dm_uuid(ty, uuid, name).unwrap(), want);
        let p = parse_crypt_dm_uuid(want).unwrap();
        assert_eq!(p.crypt_type, ty);
        assert_eq!(p.name, name);
        assert_eq!(p.uuid_hex, uuid.map(|u| u.replace('-', "")));
    }
}
