//! Fuzz the BitLocker metadata parser (`lukskit_volume::formats::bitlk`): the input is the
//! FVE metadata area (block header, metadata header, entries) behind a fixed valid volume
//! header whose three metadata offsets point at it. What parses is dumped, laid out and,
//! unless a VMK would need the slow password stretch, unlocked with the input as a startup
//! key: nothing may panic, overflow or allocate beyond the input's bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_crypto::SecretBuf;
use lukskit_volume::formats::bitlk::header::{Metadata, Protection};
use lukskit_volume::formats::bitlk::{dump, keys, layout};

const AREA: usize = 4096;
const GUID_NORMAL: [u8; 16] = [
    0x3b, 0xd6, 0x67, 0x49, 0x29, 0x2e, 0xd8, 0x4a, 0x83, 0x99, 0xf6, 0xa3, 0x39, 0xe3, 0xd0, 0x01,
];

fuzz_target!(|data: &[u8]| {
    let data = &data[..data.len().min(70_000)];
    let mut img = vec![0u8; AREA + data.len()];
    img[..13].copy_from_slice(b"\xeb\x58\x90-FVE-FS-\x00\x02");
    img[160..176].copy_from_slice(&GUID_NORMAL);
    for i in 0..3 {
        img[176 + 8 * i..184 + 8 * i].copy_from_slice(&(AREA as u64).to_le_bytes());
    }
    img[AREA..].copy_from_slice(data);
    let Ok(md) = Metadata::read(&img[..], "fuzz") else {
        return;
    };
    let _ = dump::BitlkDescription {
        path: "fuzz".into(),
        metadata: md.clone(),
    }
    .to_string();
    let _ = layout::table(&md, &SecretBuf::zeroed(32), 1 << 30);
    let slow = md.vmks.iter().any(|v| {
        matches!(
            v.protection,
            Protection::Passphrase | Protection::RecoveryPassphrase
        )
    });
    if !slow {
        let _ = keys::volume_key(&md, data);
    }
});
