//! Fuzz the LUKS1 phdr parser and its validation (as `luksDump` and `open` use them).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_format::luks1::Luks1Header;

fuzz_target!(|data: &[u8]| {
    let Ok(hdr) = Luks1Header::parse(data) else {
        return;
    };
    // The device size is taken from the input length (the fuzzer sees both small and
    // large devices), and also left unknown.
    let dev = (data.len() as u64) << 12;
    for size in [Some(dev), None] {
        if hdr.validate(size).is_ok() {
            let _ = hdr.check_hash();
            let _ = hdr.check_keyslots();
            let _ = hdr.check_data_device_size(dev);
            for slot in 0..8 {
                let _ = hdr.keyslot_area(slot);
            }
            let _ = hdr.keyslots_end_bytes();
            let _ = hdr.to_bytes();
        }
    }
});
