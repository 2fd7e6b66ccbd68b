//! Fuzz the systemd-tpm2 token (crate `lukskit-tpm2`): hostile token JSON, hostile TPM
//! structures, and a hostile TPM answering the whole unseal conversation.
//!
//! Input layout: byte 0 chooses what is fuzzed, the rest is the input.
//! * `0 mod 3`: the rest is token JSON for `SystemdTpm2Token::parse`;
//! * `1 mod 3`: the rest is a `TPMT_PUBLIC`, a `tpm2-blob`, a sealed key file (crypttab's
//!   key field with `tpm2-device=`; the PCR mask from byte 0) and a response frame;
//! * `2 mod 3`: the rest is a sequence of TPM responses (each a big-endian u16 length and
//!   that many bytes) answering, in order, the commands of an unseal of a fixed token (a PIN
//!   token when bit 2 of byte 0 is set).
//!
//! Nothing may panic, loop forever or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lukskit_crypto::SecretBuf;
use lukskit_tpm2::transport::{check_frame, Replay};
use lukskit_tpm2::{token::split_blob, tpm::parse_public, SystemdTpm2Token};

fn token(pin: bool) -> serde_json::Value {
    serde_json::json!({"type":"systemd-tpm2","keyslots":["1"],
        "tpm2-blob":"AJ4AICbNMe5rK+eU7wxhlJEKsiqpBs3BCghP/9cm6JGcSaG3ABDpng6dLaVQ8RafQB7t414BIybBROWYCkgpm4qupza8aO7G88ZwodCDouBdZwsLQ6nq0nxDQavK9+PKMDPAR1Hz+7jfqHWmo4HJMenLWXBO8TwvyCjUqJscDWOg/qBxoTXXtRXeLRehuB3Ud49Mh61kj7Kl4f+C2ydKOQBOAAgACwAAABIAIItWgtgbKUNdCNeSeBUGEdx+WSOy/vzOaEoJV3tAEwqLABAAIEgarxJuPP3/3X/9Uv4x+BpkXkzLacWzLK2AhD8an6Jg",
        "tpm2-pcrs":[7],"tpm2-pcr-bank":"sha256","tpm2-primary-alg":"ecc",
        "tpm2-policy-hash":"8b5682d81b29435d08d79278150611dc7e5923b2fefcce684a09577b40130a8b",
        "tpm2-pin":pin})
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            if let Ok(v) = serde_json::from_slice::<serde_json::Value>(rest) {
                let _ = SystemdTpm2Token::parse(&v);
            }
        }
        1 => {
            let _ = parse_public(rest);
            let _ = split_blob(rest);
            let _ = SystemdTpm2Token::from_sealed_blob(rest, u32::from(mode) << 1, mode & 4 != 0);
            let _ = check_frame(rest);
        }
        _ => {
            let tok = SystemdTpm2Token::parse(&token(mode & 4 != 0)).expect("fixed token");
            let t = Replay::new(rest);
            let _ = tok.unseal_via(Box::new(t), || Some(SecretBuf::from_slice(b"1234")));
        }
    }
});
