//! Fuzz the clevis and systemd-pkcs11 tokens (crates `lukskit-tang`, `lukskit-tpm2`,
//! `lukskit-pkcs11`): hostile token JSON (clevis pin trees: tang, tpm2, sss nested), hostile
//! sealed JWKs, PKCS#11 URIs, and a hostile TPM answering a clevis tpm2 pin's unseal.
//!
//! Input layout: byte 0 chooses what is fuzzed, the rest is the input.
//! * `0 mod 4`: the rest is token JSON for `ClevisToken::parse` and
//!   `SystemdPkcs11Token::parse`;
//! * `1 mod 4`: the rest is the protected header of a clevis JWE (its JSON), parsed as a
//!   token's pin tree;
//! * `2 mod 4`: the rest is a sealed JWK for `jwk_key` and a PKCS#11 URI;
//! * `3 mod 4`: the rest is a sequence of TPM responses (each a big-endian u16 length and
//!   that many bytes) answering, in order, the commands of the unseal of a fixed clevis
//!   tpm2 pin (with a PCR policy when bit 2 of byte 0 is set).
//!
//! Nothing may panic, loop forever or allocate without bound.
#![no_main]

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use lukskit_tpm2::transport::Replay;
use lukskit_tpm2::ClevisTpm2;

/// The `clevis.tpm2` of a pin clevis 19 wrote (PCR 7 in the SHA-1 bank), or without PCRs.
fn pin(pcrs: bool) -> serde_json::Value {
    let mut v = serde_json::json!({"hash":"sha256","key":"ecc","pcr_bank":"sha1","pcr_ids":"7",
        "jwk_priv":"AO4AIN7utgJHIUWLvIm_sqsgfx9pRuqtcgKV3nM7NpKMjo4UABCiqh5PW2v2MNqRZ2_y0QP5kXCCRLdhd8vywhYSr-AczjKlY9tiQcf2vzxXIax8z5a5JD8foT6oieiZzqBcv8wTrEmkTXS_PQ5VJFXK0yy-mmh0YKVYvVAh6nx7qDh0zWnliXblaoFUiQrKGdayowWG00Ti7HEASTuwXaEmM2Q8tV8Xjg140L8PsyG9XYtqm_y2kP66qmeYy0r25f7fjjOt1bWxgbwwBiMFKfZhSBzodETDT9Z0ibpQTC-XJovlzcqO5NOfYyZ3yOvg",
        "jwk_pub":"AE4ACAALAAAEkgAghCeLYNBUfcJ-xmZ-ev7s4HEcCbXO0Jowpls4nTr9oe8AEAAgJ-wXXXoDNPnrSeCySTvAKr2oIUiZc-RzzCnGM13Mwm0"});
    if !pcrs {
        v.as_object_mut().unwrap().remove("pcr_ids");
    }
    v
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(rest) {
                let _ = lukskit_tang::ClevisToken::parse(&v);
                let _ = lukskit_pkcs11::SystemdPkcs11Token::parse(&v);
            }
        }
        1 => {
            let protected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rest);
            let token = serde_json::json!({"type":"clevis","keyslots":["1"],"jwe":{
                "protected": protected, "iv":"AAAAAAAAAAAAAAAA","ciphertext":"AA",
                "tag":"AAAAAAAAAAAAAAAAAAAAAA","encrypted_key":""}});
            if let Ok(t) = lukskit_tang::ClevisToken::parse(&token) {
                let _ = t.pin.describe();
            }
        }
        2 => {
            let _ = lukskit_tang::jwk_key(rest);
            if let Ok(s) = std::str::from_utf8(rest) {
                let _ = lukskit_pkcs11::Pkcs11Uri::parse(s);
            }
        }
        _ => {
            let p = ClevisTpm2::parse(&pin(mode & 4 != 0)).expect("fixed pin");
            let t = Replay::new(rest);
            let _ = p.unseal_via(Box::new(t));
        }
    }
});
