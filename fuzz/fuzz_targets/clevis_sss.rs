//! Fuzz the clevis `sss` pin trees of a token (crate `lukskit-tang`): nested pins, huge
//! `clevis.sss.jwe` arrays, hostile thresholds and primes, and the Shamir recovery.
//!
//! Input layout: byte 0 chooses what is fuzzed, the rest is the input.
//! * `0 mod 2`: the rest is JSON for a protected header. Before it is parsed, every JSON
//!   object found in a `clevis.sss.jwe` array is turned into a compact JWE whose protected
//!   header is that object (recursively, 8 levels at most), so that the fuzzer reaches the
//!   nested pins without having to write base64 itself. The token is parsed and described;
//! * `1 mod 2`: the rest is a prime's length (1 byte), the prime and points, for
//!   `shamir::recover`.
//!
//! Nothing may panic, loop forever or allocate without bound (no pin is decrypted: that
//! would ask a TPM or a server).
#![no_main]

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use lukskit_crypto::SecretBuf;
use serde_json::Value;

fn b64(s: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
}

/// `v` with the objects of its `clevis.sss.jwe` arrays made compact JWEs.
fn nest(mut v: Value, depth: usize) -> Value {
    if depth > 8 {
        return v;
    }
    if let Some(list) = v
        .pointer_mut("/clevis/sss/jwe")
        .and_then(Value::as_array_mut)
    {
        for item in list.iter_mut() {
            if item.is_object() {
                let inner = nest(item.take(), depth + 1);
                let h = b64(inner.to_string().as_bytes());
                *item = Value::String(format!("{h}..AAAAAAAAAAAAAAAA.AA.AAAAAAAAAAAAAAAAAAAAAA"));
            }
        }
    }
    v
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let Ok(v) = serde_json::from_slice::<Value>(rest) else {
            return;
        };
        let header = nest(v, 0);
        let token = serde_json::json!({"type":"clevis","keyslots":["1"],"jwe":{
            "protected": b64(header.to_string().as_bytes()), "iv":"AAAAAAAAAAAAAAAA",
            "ciphertext":"AA", "tag":"AAAAAAAAAAAAAAAAAAAAAA","encrypted_key":""}});
        if let Ok(t) = lukskit_tang::ClevisToken::parse(&token) {
            let _ = t.pin.describe();
        }
    } else {
        let Some((&len, rest)) = rest.split_first() else {
            return;
        };
        let len = usize::from(len % 65).max(1);
        if rest.len() < len {
            return;
        }
        let (prime, pts) = rest.split_at(len);
        let points: Vec<SecretBuf> = pts
            .chunks(2 * len)
            .take(16)
            .map(SecretBuf::from_slice)
            .collect();
        let _ = lukskit_tang::shamir::recover(prime, &points);
    }
});
