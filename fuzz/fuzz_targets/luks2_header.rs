//! Fuzz the LUKS2 read path as `luksDump` uses it: both binary headers, checksum, JSON
//! parse, validation, and the typed views of keyslots, segments, digests and tokens.
//!
//! The input is the start of a device; the rest of a 1 GiB device reads as zeros (a sparse
//! in-memory storage, so no allocation follows the device size). Before reading, the
//! target rewrites the SHA-256 checksum of every copy it can find, so that the fuzzer gets
//! past the checksum into the binary-header checks, the JSON parser and validation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_format::io::Storage;
use lukskit_format::luks2;
use sha2::{Digest, Sha256};
use std::io;

/// The input bytes followed by zeros up to `size`.
struct Sparse {
    data: Vec<u8>,
    size: u64,
}

impl Storage for Sparse {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= self.size)
            .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
        buf.fill(0);
        let have = self.data.len() as u64;
        if offset < have {
            let n = (end.min(have) - offset) as usize;
            buf[..n].copy_from_slice(&self.data[offset as usize..offset as usize + n]);
        }
        Ok(())
    }
    fn write_all_at(&self, _buf: &[u8], _offset: u64) -> io::Result<()> {
        Err(io::Error::other("read only"))
    }
    fn sync(&self) -> io::Result<()> {
        Ok(())
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }
}

/// Recompute the checksum of the copy at `off` over `hdr_size` bytes (csum field zeroed).
fn fix_csum(data: &mut [u8], off: usize) {
    // `off` comes from the input (the second copy's offset): no arithmetic may wrap.
    if off.checked_add(512).is_none_or(|e| e > data.len()) {
        return;
    }
    let hdr_size = u64::from_be_bytes(data[off + 8..off + 16].try_into().unwrap());
    let Some(end) = usize::try_from(hdr_size)
        .ok()
        .and_then(|h| off.checked_add(h))
    else {
        return;
    };
    if end > data.len() || hdr_size < 4096 {
        return;
    }
    data[off + 448..off + 512].fill(0);
    let d = Sha256::digest(&data[off..end]);
    data[off + 448..off + 480].copy_from_slice(&d);
}

fuzz_target!(|input: &[u8]| {
    let mut data = input.to_vec();
    if data.len() >= 16 {
        let hdr_size = u64::from_be_bytes(data[8..16].try_into().unwrap());
        fix_csum(&mut data, 0);
        if let Ok(h) = usize::try_from(hdr_size) {
            fix_csum(&mut data, h);
        }
    }
    let storage = Sparse {
        data,
        size: 1 << 30,
    };
    let Ok(out) = luks2::read(&storage) else {
        return;
    };
    let h = out.header;
    let _ = h.metadata_size();
    let _ = h.json_area_size();
    let _ = h.keyslots_size();
    let _ = h.hdr_and_areas_size();
    if let Ok(ks) = h.keyslots() {
        for k in ks {
            let _ = k.check_usable();
        }
    }
    let _ = h.keyslot_ids();
    let _ = h.segments();
    if let Ok(ds) = h.digests() {
        for d in ds {
            let _ = d.check_usable();
        }
    }
    let _ = h.tokens();
    let _ = h.config_flags();
    let _ = h.requirements();
    let _ = h.unknown_requirements();
    let _ = h.data_offset();
    let _ = h.to_json_string();
    let _ = h.find_keyslot_area(258048);
    let _ = luks2::check_sequence_id(&storage, &h);
});
