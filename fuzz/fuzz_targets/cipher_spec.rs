//! Fuzz `CipherSpec::parse` (cipher strings from the command line and from LUKS headers).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_crypto::spec::CipherSpec;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(spec) = CipherSpec::parse(s) {
            // A parsed spec must print without panicking.
            let _ = format!("{spec:?}");
        }
    }
});
