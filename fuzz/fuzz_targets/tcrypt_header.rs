//! Fuzz the TrueCrypt/VeraCrypt header parse of decrypted bytes and everything computed from
//! a parsed header (data and IV offsets, the stacked layers, the volume key, the dump text),
//! as `tcryptDump` and `open --type tcrypt` use them. The first input byte chooses the
//! options and whether the CRCs are set right (else the parse almost always stops at them),
//! the second the cipher table entry, the next eight the device size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_volume::formats::tcrypt::{ciphers, dump, header, layout, Loaded, ENC_LEN};
use lukskit_volume::formats::TcryptOptions;

fuzz_target!(|data: &[u8]| {
    if data.len() < 10 {
        return;
    }
    let (ctl, rest) = data.split_at(10);
    let mut d = [0u8; ENC_LEN];
    let n = rest.len().min(ENC_LEN);
    d[..n].copy_from_slice(&rest[..n]);
    if ctl[0] & 1 != 0 {
        header::seal(&mut d);
    }
    let veracrypt = ctl[0] & 2 != 0;
    let Ok(h) = header::Header::parse(&d, veracrypt) else {
        return;
    };
    let options = TcryptOptions {
        hidden: ctl[0] & 4 != 0,
        system: ctl[0] & 8 != 0,
        backup: ctl[0] & 16 != 0,
        no_veracrypt: !veracrypt,
        ..TcryptOptions::default()
    };
    let cascade = &ciphers::CASCADES[usize::from(ctl[1]) % ciphers::CASCADES.len()];
    let mut size = [0u8; 8];
    size.copy_from_slice(&ctl[2..10]);
    let size = u64::from_le_bytes(size);
    let loaded = Loaded {
        header: h,
        kdf: lukskit_volume::formats::tcrypt::kdf::KDFS[0],
        cascade,
        options,
        metadata_size: size,
        system_partition_start: (ctl[0] & 32 != 0).then_some(size / 7),
    };
    let _ = layout::data_offset(&loaded);
    let _ = layout::iv_offset(&loaded);
    let _ = layout::layers(&loaded, "fuzz", size);
    let vk = loaded.volume_key();
    let _ = dump::TcryptDump::new(&loaded, "dev").to_string();
    let _ = dump::volume_key_dump("dev", cascade.long_name, cascade.mode.name(), 0, &vk);
});
