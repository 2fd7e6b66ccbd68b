//! The clevis `tang` pin, as clevis 19 (Debian's `clevis`, `clevis-luks`) stores it in a LUKS2
//! token and as Debian's `tang` 11 server answers it:
//!
//! - a clevis token is `{"type":"clevis","keyslots":["N"],"jwe":{protected,iv,ciphertext,tag,
//!   encrypted_key:""}}`, a flattened JWE (RFC 7516) whose plaintext is the passphrase of
//!   keyslot N;
//! - the JWE is `ECDH-ES` + `A256GCM` (RFC 7518 §4.6, §5.3) to the tang server's exchange key
//!   `S` (named by its thumbprint in `kid`); the protected header carries the client key
//!   `C = c·G` (`epk`), the server's advertisement and URL;
//! - unlocking is the McCallum-Relyea exchange: a fresh `E = e·G`, POST `X = C + E` to
//!   `URL/rec/KID`, the server answers `Y = s·X`, and `s·C = Y − e·S` is the ECDH point whose x
//!   coordinate the Concat KDF turns into the content key. The server never sees `s·C`, and a
//!   listener learns nothing from `X` and `Y`.
//!
//! Binding ([`bind`]) fetches `URL/adv`, checks its JWS signatures, and encrypts a passphrase
//! as `clevis encrypt tang` does.
//!
//! The other pins clevis-luks binds are read too ([`Pin`]): `tpm2` (the JWK sealed by the TPM,
//! unsealed with crate `lukskit-tpm2`) and `sss` (Shamir's threshold over nested pins of any
//! kind), the JWE then being `dir` to the recovered key.
//!
//! Secrets (the passphrase, the ECDH x coordinate, the content key, private scalars) live in
//! [`SecretBuf`]s. HTTP bodies and the time an exchange may take are capped ([`Limits`]).
//! This crate never prints: errors are typed ([`TangError`]).

#![forbid(unsafe_code)]

pub mod bind_config;
mod bind_pins;
pub mod ec;
mod http;
mod jwe;
mod pins;
pub mod shamir;

use base64::Engine as _;
use ec::{EcPriv, EcPub};
use lukskit_crypto::SecretBuf;
use serde_json::{json, Value};
use std::time::Duration;

pub use bind_config::{PinConfig, SssConfig, TangConfig, Tpm2Config};
pub use bind_pins::Plan;
pub use http::Limits;
pub use pins::{jwk_key, Context, Pin};

/// What can go wrong with a clevis token or a tang server.
#[derive(Debug, thiserror::Error)]
pub enum TangError {
    /// A pin configuration to bind is invalid or asks for what lukskit does not do.
    #[error("{0}")]
    Config(String),
    /// The token is not a clevis token or its JWE is malformed.
    #[error("malformed clevis token: {0}")]
    Malformed(&'static str),
    /// A clevis pin other than tang, tpm2 and sss.
    #[error("clevis pin {0} is not supported (only tang, tpm2 and sss)")]
    UnsupportedPin(String),
    /// The TPM of a `tpm2` pin could not unseal its key.
    #[error("{0}")]
    Tpm2(#[from] lukskit_tpm2::Tpm2Error),
    /// Fewer pins of an `sss` pin decrypted than its threshold.
    #[error("{got} of the {needed} pins needed decrypted ({reasons})")]
    Threshold {
        /// The threshold `t`.
        needed: usize,
        /// How many pins decrypted.
        got: usize,
        /// Why the others did not, one `pin: reason` each, `; ` between them.
        reasons: String,
    },
    /// The clevis time budget ran out before a pin's turn.
    #[error("no time left (the clevis tokens' time is used up)")]
    OutOfTime,
    /// A JWE algorithm other than ECDH-ES with AES-GCM.
    #[error("unsupported JWE algorithm {0}")]
    UnsupportedAlg(String),
    /// A curve other than P-256, P-384, P-521.
    #[error("unsupported curve {0}")]
    UnsupportedCurve(String),
    /// A key that is not a valid EC key.
    #[error("invalid EC key ({0})")]
    BadKey(&'static str),
    /// The advertisement in the token does not hold the key named by `kid`.
    #[error("the advertisement in the token has no key with thumbprint {0}")]
    KidNotAdvertised(String),
    /// The server could not be reached or answered with an error.
    #[error("tang server {url}: {reason}")]
    Http {
        /// The URL asked.
        url: String,
        /// What happened (connection refused, timeout, HTTP status …).
        reason: String,
    },
    /// The server's answer is not what the protocol says.
    #[error("tang server {url} sent an invalid reply: {reason}")]
    BadReply {
        /// The URL asked.
        url: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The advertisement's signatures do not verify.
    #[error("the advertisement of {0} is not signed by all its signing keys")]
    BadSignature(String),
    /// No signing key of the advertisement has the thumbprint the user trusts.
    #[error("no signing key of {url} has thumbprint {thumbprint}")]
    Untrusted {
        /// The server.
        url: String,
        /// The thumbprint asked for.
        thumbprint: String,
    },
    /// The JWE does not decrypt (wrong key: the server's key was rotated away, or the data
    /// was altered).
    #[error("the JWE does not decrypt with the key the server gave")]
    Decrypt,
    /// The system RNG failed.
    #[error("random number generator failed")]
    Random,
}

pub(crate) fn b64e(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

pub(crate) fn b64d(s: &str) -> Result<Vec<u8>, base64::DecodeError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s.trim_end_matches('='))
}

/// The clevis part of a token: its keyslots and its pin (a tree for `sss`), parsed and
/// checked enough to know what to ask (tang servers, the TPM).
#[derive(Debug, Clone)]
pub struct ClevisToken {
    /// Keyslots the token unlocks.
    pub keyslots: Vec<u32>,
    /// The pin the JWE is encrypted with.
    pub pin: Pin,
}

impl ClevisToken {
    /// Parse a LUKS2 token's JSON. Fails with [`TangError::UnsupportedPin`] for clevis pins
    /// other than tang, tpm2 and sss.
    pub fn parse(token: &Value) -> Result<ClevisToken, TangError> {
        if token.get("type").and_then(Value::as_str) != Some("clevis") {
            return Err(TangError::Malformed("type is not clevis"));
        }
        let keyslots = token
            .get("keyslots")
            .and_then(Value::as_array)
            .ok_or(TangError::Malformed("keyslots"))?
            .iter()
            .map(|k| k.as_str().and_then(|s| s.parse().ok()))
            .collect::<Option<Vec<u32>>>()
            .ok_or(TangError::Malformed("keyslots"))?;
        let jwe = jwe::Jwe::parse(token.get("jwe").ok_or(TangError::Malformed("no jwe"))?)?;
        let pin = Pin::from_jwe(jwe, 0)?;
        Ok(ClevisToken { keyslots, pin })
    }

    /// The tang server's URL, for a token of the `tang` pin.
    pub fn url(&self) -> Option<&str> {
        match &self.pin {
            Pin::Tang { url, .. } => Some(url),
            _ => None,
        }
    }

    /// Decrypt: ask the tang servers and the TPM the pins name (`ctx`), and return the
    /// keyslot passphrase.
    pub fn unlock_with(&self, ctx: &Context) -> Result<SecretBuf, TangError> {
        self.pin.decrypt(ctx)
    }

    /// Ask the tang server and decrypt: the keyslot passphrase (a token of the `tang` pin;
    /// other pins get the default [`Context`] with `limits`).
    pub fn unlock(&self, limits: &Limits) -> Result<SecretBuf, TangError> {
        self.unlock_with(&Context::new(*limits))
    }
}

/// A tang server's advertisement, verified.
#[derive(Debug, Clone)]
pub struct Advertisement {
    /// The server URL.
    pub url: String,
    /// The advertised key set (`{"keys":[…]}`), stored in the token as `clevis.tang.adv`.
    pub jwks: Value,
    /// SHA-256 thumbprints of the signing keys (what `tang-show-keys` prints).
    pub signing_thumbprints: Vec<String>,
    exchange: Value,
}

impl Advertisement {
    /// Whether a signing key has thumbprint `thp` (SHA-256 or SHA-1).
    pub fn trusts(&self, thp: &str) -> bool {
        self.jwks["keys"].as_array().is_some_and(|keys| {
            keys.iter()
                .filter(|k| key_ops(k, "verify"))
                .any(|k| ec::has_thumbprint(k, thp))
        })
    }
}

fn key_ops(k: &Value, op: &str) -> bool {
    k.get("key_ops")
        .and_then(Value::as_array)
        .is_some_and(|ops| ops.iter().any(|o| o.as_str() == Some(op)))
}

/// GET `URL/adv` and check it as `clevis encrypt tang` does: a JWS over a JWK set, signed by
/// every key of the set whose `key_ops` has `verify`, with an ECMR `deriveKey` key.
pub fn fetch_advertisement(url: &str, limits: &Limits) -> Result<Advertisement, TangError> {
    let adv_url = format!("{}/adv", url.trim_end_matches('/'));
    let body = http::get(&adv_url, limits)?;
    parse_advertisement(url, &adv_url, &body)
}

fn parse_advertisement(url: &str, adv_url: &str, body: &[u8]) -> Result<Advertisement, TangError> {
    let bad = |reason| TangError::BadReply {
        url: adv_url.to_string(),
        reason,
    };
    let jws: Value = serde_json::from_slice(body).map_err(|_| bad("not JSON"))?;
    let payload = jws
        .get("payload")
        .and_then(Value::as_str)
        .ok_or(bad("no JWS payload"))?;
    // Flattened (`protected`, `signature`) or general (`signatures`) JWS serialization.
    let sigs: Vec<Value> = match jws.get("signatures").and_then(Value::as_array) {
        Some(a) => a.clone(),
        None => vec![jws.clone()],
    };
    let jwks: Value = serde_json::from_slice(&b64d(payload).map_err(|_| bad("payload"))?)
        .map_err(|_| bad("payload is not JSON"))?;
    let keys = jwks
        .get("keys")
        .and_then(Value::as_array)
        .ok_or(bad("payload is not a JWK set"))?;
    let mut thumbprints = Vec::new();
    let mut signers = 0;
    for k in keys.iter().filter(|k| key_ops(k, "verify")) {
        signers += 1;
        let key = EcPub::from_jwk(k).map_err(|_| bad("signing key"))?;
        let signed = sigs.iter().any(|s| {
            let (Some(p), Some(sig)) = (
                s.get("protected").and_then(Value::as_str),
                s.get("signature").and_then(Value::as_str),
            ) else {
                return false;
            };
            let alg = b64d(p)
                .ok()
                .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
                .and_then(|h| h.get("alg").and_then(Value::as_str).map(str::to_string));
            let (Some(alg), Ok(sig)) = (alg, b64d(sig)) else {
                return false;
            };
            ec::verify_es(&alg, &key, format!("{p}.{payload}").as_bytes(), &sig)
        });
        if !signed {
            return Err(TangError::BadSignature(url.to_string()));
        }
        thumbprints.extend(ec::thumbprint(k, false));
    }
    if signers == 0 {
        return Err(TangError::BadSignature(url.to_string()));
    }
    let exchange = keys
        .iter()
        .find(|k| key_ops(k, "deriveKey") && k.get("alg").and_then(Value::as_str) == Some("ECMR"))
        .ok_or(bad("no ECMR exchange key"))?
        .clone();
    EcPub::from_jwk(&exchange).map_err(|_| bad("exchange key"))?;
    Ok(Advertisement {
        url: url.to_string(),
        jwks,
        signing_thumbprints: thumbprints,
        exchange,
    })
}

/// Encrypt `passphrase` to the tang server of `adv` as `clevis encrypt tang` does and return
/// the LUKS2 token for `keyslot` (`{"type":"clevis","keyslots":[…],"jwe":{…}}`).
pub fn bind(adv: &Advertisement, passphrase: &SecretBuf, keyslot: u32) -> Result<Value, TangError> {
    let jwe = tang_jwe(adv, passphrase)?;
    Ok(json!({
        "type": "clevis",
        "keyslots": [keyslot.to_string()],
        "jwe": jwe.to_json(),
    }))
}

/// `plaintext` encrypted to the tang server of `adv`, as `clevis encrypt tang` does.
fn tang_jwe(adv: &Advertisement, plaintext: &SecretBuf) -> Result<jwe::Jwe, TangError> {
    let s = EcPub::from_jwk(&adv.exchange)?;
    let kid = ec::thumbprint(&adv.exchange, false).ok_or(TangError::BadKey("exchange key"))?;
    let c = EcPriv::generate(s.crv)?;
    let z = c.ecdh(&s)?;
    let header = json!({
        "alg": "ECDH-ES",
        "clevis": {"pin": "tang", "tang": {"adv": adv.jwks, "url": adv.url}},
        "enc": "A256GCM",
        "epk": c.public.to_jwk(),
        "kid": kid,
    });
    jwe::Jwe::encrypt(header, &z, plaintext)
}

/// A clevis token for `keyslot` holding `passphrase` under a clevis `tpm2` pin, as
/// `clevis luks bind -d DEV tpm2 CONFIG` of clevis 19 makes it: a new JWK
/// (`{"alg":"A256GCM","k":…,"key_ops":["encrypt","decrypt"],"kty":"oct"}`, what `jose jwk
/// gen -i '{"alg":"A256GCM"}'` makes) sealed in the TPM `device` (name algorithm SHA-256, ECC
/// primary key, a PCR policy over `pcr_mask` in `pcr_bank` when the mask is not 0), and the
/// passphrase encrypted with it (`alg: dir`, `enc: A256GCM`) in a JWE whose protected header
/// carries `clevis.tpm2` (`hash`, `key`, `pcr_bank`, `pcr_ids`, `jwk_pub`, `jwk_priv`).
/// The token is unlocked once with `device` before it is returned.
pub fn bind_tpm2(
    device: &lukskit_tpm2::DeviceSpec,
    pcr_bank: u16,
    pcr_mask: u32,
    passphrase: &SecretBuf,
    keyslot: u32,
    timeout: Duration,
) -> Result<Value, TangError> {
    let cfg = PinConfig::Tpm2(Tpm2Config { pcr_bank, pcr_mask });
    let ctx = Context {
        tpm2: device.clone(),
        tpm2_timeout: timeout,
        ..Context::new(default_limits())
    };
    Plan::resolve(&cfg, &default_limits())?.token(passphrase, keyslot, &ctx)
}

/// `plaintext` encrypted under a clevis `tpm2` pin, as `clevis encrypt tpm2` does: a new
/// JWK sealed in the TPM `device`, the JWE `dir` to it.
fn tpm2_jwe(
    device: &lukskit_tpm2::DeviceSpec,
    pcr_bank: u16,
    pcr_mask: u32,
    plaintext: &SecretBuf,
    timeout: Duration,
) -> Result<jwe::Jwe, TangError> {
    let b64u = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let cek = SecretBuf::random(32).map_err(|_| TangError::Random)?;
    // jose's member order (sorted): alg, k, key_ops, kty.
    let jwk = SecretBuf::from_vec(
        format!(
            r#"{{"alg":"A256GCM","k":"{}","key_ops":["encrypt","decrypt"],"kty":"oct"}}"#,
            b64u(cek.as_bytes())
        )
        .into_bytes(),
    );
    let sealed = lukskit_tpm2::clevis_seal::seal(device, pcr_bank, pcr_mask, &jwk, timeout)?;
    let mut tpm2 = serde_json::Map::new();
    tpm2.insert("hash".into(), json!("sha256"));
    tpm2.insert("key".into(), json!("ecc"));
    if pcr_mask != 0 {
        let ids: Vec<String> = (0..24)
            .filter(|n| pcr_mask & (1 << n) != 0)
            .map(|n: u32| n.to_string())
            .collect();
        let bank = match pcr_bank {
            lukskit_tpm2::tpm::alg::SHA1 => "sha1",
            lukskit_tpm2::tpm::alg::SHA384 => "sha384",
            lukskit_tpm2::tpm::alg::SHA512 => "sha512",
            _ => "sha256",
        };
        tpm2.insert("pcr_bank".into(), json!(bank));
        tpm2.insert("pcr_ids".into(), json!(ids.join(",")));
    }
    tpm2.insert("jwk_pub".into(), json!(b64u(&sealed.public)));
    tpm2.insert("jwk_priv".into(), json!(b64u(&sealed.private)));
    let header = json!({
        "alg": "dir",
        "clevis": {"pin": "tpm2", "tpm2": Value::Object(tpm2)},
        "enc": "A256GCM",
    });
    jwe::Jwe::encrypt_direct(header, &cek, plaintext)
}

/// A passphrase for a new clevis keyslot: 32 random bytes as base64url (43 printable
/// characters, so that clevis' shell scripts carry it unchanged).
pub fn new_passphrase() -> Result<SecretBuf, TangError> {
    let raw = SecretBuf::random(32).map_err(|_| TangError::Random)?;
    let mut out = SecretBuf::zeroed(43);
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode_slice(raw.as_bytes(), out.as_mut_bytes())
        .map_err(|_| TangError::Random)?;
    Ok(out)
}

/// The default limits: 10 s for each exchange, 1 MiB for a reply.
pub fn default_limits() -> Limits {
    Limits {
        timeout: Duration::from_secs(10),
        max_body: 1 << 20,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passphrase_is_printable_and_random() {
        let a = new_passphrase().unwrap();
        let b = new_passphrase().unwrap();
        assert_eq!(a.len(), 43);
        assert!(a
            .as_bytes()
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_'));
        assert_ne!(a.as_bytes(), b.as_bytes());
    }

    #[test]
    fn unknown_pin_is_refused() {
        let hdr = b64e(br#"{"alg":"ECDH-ES","enc":"A256GCM","clevis":{"pin":"yubikey"}}"#);
        let t = json!({"type":"clevis","keyslots":["1"],"jwe":{"protected":hdr,"iv":"AAAAAAAAAAAAAAAA","ciphertext":"AA","tag":"AAAAAAAAAAAAAAAAAAAAAA","encrypted_key":""}});
        assert!(matches!(
            ClevisToken::parse(&t),
            Err(TangError::UnsupportedPin(p)) if p == "yubikey"
        ));
    }
}
