//! Fuzz the FileVault 2 metadata reader (as `fvault2Dump` and `open --type fvault2` use it):
//! the input as a whole device (volume header, disk label, descriptor, encrypted blocks), the
//! input as one decrypted metadata block (its plist parts, which the encrypted path reaches
//! only with valid checksums), and the plist helpers on the raw input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_format::io::MemStorage;
use lukskit_volume::formats::fvault2::{header, metadata, plist, read_metadata};

fuzz_target!(|data: &[u8]| {
    let _ = read_metadata(&MemStorage::from_vec(data.to_vec()));
    let mut block = Box::new([0u8; header::MD_BLOCK_SIZE]);
    let n = data.len().min(header::MD_BLOCK_SIZE);
    block[..n].copy_from_slice(&data[..n]);
    let _ = metadata::parse_block(&block);
    for (key, ty) in [
        ("PassphraseWrappedKEKStruct", "data"),
        ("com.apple.corestorage.lv.size", "integer"),
        ("com.apple.corestorage.lv.familyUUID", "string"),
    ] {
        if let Some(v) = plist::search(data, key, ty) {
            let _ = plist::base64_decode(v);
            let _ = plist::strtoull_hex(v);
            let _ = plist::parse_uuid(v);
        }
    }
});
