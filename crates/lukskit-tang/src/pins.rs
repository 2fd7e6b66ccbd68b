//! The clevis pins of a token, as clevis 19 writes them: `tang` (the McCallum-Relyea exchange
//! with a tang server), `tpm2` (a JWK sealed by the TPM, crate `lukskit-tpm2`) and `sss`
//! (Shamir's secret sharing over nested pins of any kind, `sss` too):
//!
//! - an `sss` pin's header has `clevis.sss` = `{t, p, jwe: [compact JWE, …]}`: `p` is a prime
//!   (big-endian, base64url, 32 bytes), each nested JWE encrypts one point `x ‖ y` of a
//!   random polynomial of degree `t − 1` over GF(p) (each coordinate as long as `p`), and the
//!   polynomial's value at 0 is the key (`alg: dir`) of the outer JWE;
//! - `t` points give the key by Lagrange interpolation at 0 (clevis' `sss_recover`).
//!
//! Nested pins are tried one after the other, local ones (tpm2) first, until `t` of them
//! decrypted; a tang server that does not answer costs at most its exchange's time, and all
//! of them together at most the [`Context`]'s deadline. Nesting is at most [`MAX_DEPTH`]
//! deep and an `sss` pin has at most [`MAX_PINS`] pins: a hostile header stays bounded.

use crate::jwe::Jwe;
use crate::{ec, http, Limits, TangError};
use ec::{EcPriv, EcPub};
use lukskit_crypto::SecretBuf;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// The deepest nesting of `sss` pins accepted (clevis has no limit; people nest one or two).
pub const MAX_DEPTH: usize = 4;
/// The most pins one `sss` pin may hold.
pub const MAX_PINS: usize = 16;
/// The longest prime accepted (clevis' is 32 bytes).
const MAX_PRIME: usize = 64;

/// What a pin may use to decrypt: the tang exchanges' limits, the TPM, and a deadline for
/// all of it.
#[derive(Debug, Clone)]
pub struct Context {
    /// Each tang exchange's limits (its time is cut to what is left before `deadline`).
    pub limits: Limits,
    /// When no pin may start or go on any more.
    pub deadline: Instant,
    /// The TPM for `tpm2` pins.
    pub tpm2: lukskit_tpm2::DeviceSpec,
    /// The longest a TPM command may take (cut to what is left before `deadline`).
    pub tpm2_timeout: Duration,
}

impl Context {
    /// The default context with tang `limits`: the kernel's TPM, a minute in all.
    pub fn new(limits: Limits) -> Context {
        Context {
            limits,
            deadline: Instant::now() + Duration::from_secs(60),
            tpm2: lukskit_tpm2::DeviceSpec::Auto,
            tpm2_timeout: lukskit_tpm2::transport::DEFAULT_TIMEOUT,
        }
    }

    fn left(&self) -> Result<Duration, TangError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(TangError::OutOfTime)
        } else {
            Ok(left)
        }
    }
}

/// A clevis pin and the JWE it decrypts.
#[derive(Debug, Clone)]
pub enum Pin {
    /// `tang`: the server's URL.
    Tang {
        /// `clevis.tang.url`.
        url: String,
        /// The JWE (`ECDH-ES`).
        jwe: Jwe,
    },
    /// `tpm2`: the sealed JWK.
    Tpm2 {
        /// `clevis.tpm2`.
        pin: lukskit_tpm2::ClevisTpm2,
        /// The JWE (`dir`).
        jwe: Jwe,
    },
    /// `sss`: `t` of `pins`.
    Sss {
        /// The threshold.
        t: usize,
        /// The prime, big-endian.
        prime: Vec<u8>,
        /// The nested pins, each decrypting to a point.
        pins: Vec<Pin>,
        /// The JWE (`dir`).
        jwe: Jwe,
    },
}

impl Pin {
    /// The pin of a JWE (its `clevis` header), `depth` levels inside `sss` pins.
    pub(crate) fn from_jwe(jwe: Jwe, depth: usize) -> Result<Pin, TangError> {
        let name = jwe
            .header
            .pointer("/clevis/pin")
            .and_then(Value::as_str)
            .ok_or(TangError::Malformed("clevis.pin"))?;
        match name {
            "tang" => {
                let url = jwe
                    .header
                    .pointer("/clevis/tang/url")
                    .and_then(Value::as_str)
                    .ok_or(TangError::Malformed("clevis.tang.url"))?
                    .to_string();
                Ok(Pin::Tang { url, jwe })
            }
            "tpm2" => {
                let pin = lukskit_tpm2::ClevisTpm2::parse(
                    jwe.header
                        .pointer("/clevis/tpm2")
                        .ok_or(TangError::Malformed("clevis.tpm2"))?,
                )?;
                Ok(Pin::Tpm2 { pin, jwe })
            }
            "sss" => {
                if depth >= MAX_DEPTH {
                    return Err(TangError::Malformed("sss pins nested too deep"));
                }
                let sss = jwe
                    .header
                    .pointer("/clevis/sss")
                    .ok_or(TangError::Malformed("clevis.sss"))?;
                let t = sss
                    .get("t")
                    .and_then(Value::as_u64)
                    .filter(|&t| t >= 1)
                    .ok_or(TangError::Malformed("clevis.sss.t"))?;
                let prime = sss
                    .get("p")
                    .and_then(Value::as_str)
                    .filter(|p| p.len() <= MAX_PRIME * 2)
                    .and_then(|p| crate::b64d(p).ok())
                    .filter(|p| !p.is_empty() && p.len() <= MAX_PRIME)
                    .ok_or(TangError::Malformed("clevis.sss.p"))?;
                if prime[prime.len() - 1] & 1 == 0 || prime[0] == 0 {
                    return Err(TangError::Malformed("clevis.sss.p is not an odd prime"));
                }
                let list = sss
                    .get("jwe")
                    .and_then(Value::as_array)
                    .ok_or(TangError::Malformed("clevis.sss.jwe"))?;
                if list.len() > MAX_PINS {
                    return Err(TangError::Malformed("clevis.sss.jwe has too many pins"));
                }
                let pins = list
                    .iter()
                    .map(|j| {
                        let s = j.as_str().ok_or(TangError::Malformed("clevis.sss.jwe"))?;
                        Pin::from_jwe(Jwe::parse_compact(s)?, depth + 1)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let t = usize::try_from(t).unwrap_or(usize::MAX);
                if t > pins.len() {
                    return Err(TangError::Malformed("clevis.sss.t is more than its pins"));
                }
                Ok(Pin::Sss {
                    t,
                    prime,
                    pins,
                    jwe,
                })
            }
            other => Err(TangError::UnsupportedPin(other.chars().take(32).collect())),
        }
    }

    /// A short description: `tang URL`, `tpm2`, `sss 2 of (tang URL, tpm2)`.
    pub fn describe(&self) -> String {
        match self {
            Pin::Tang { url, .. } => format!("tang {url}"),
            Pin::Tpm2 { .. } => "tpm2".to_string(),
            Pin::Sss { t, pins, .. } => format!(
                "sss {t} of ({})",
                pins.iter()
                    .map(Pin::describe)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The order nested pins are tried in: the TPM answers at once, a tang server may not.
    fn cost(&self) -> u8 {
        match self {
            Pin::Tpm2 { .. } => 0,
            Pin::Sss { .. } => 1,
            Pin::Tang { .. } => 2,
        }
    }

    /// Decrypt the pin's JWE.
    pub fn decrypt(&self, ctx: &Context) -> Result<SecretBuf, TangError> {
        let left = ctx.left()?;
        match self {
            Pin::Tang { url, jwe } => {
                let limits = Limits {
                    timeout: ctx.limits.timeout.min(left),
                    ..ctx.limits
                };
                tang_decrypt(url, jwe, &limits)
            }
            Pin::Tpm2 { pin, jwe } => {
                let jwk = pin.unseal(&ctx.tpm2, ctx.tpm2_timeout.min(left))?;
                let cek = jwk_key(jwk.as_bytes())?;
                jwe.decrypt_direct(&cek)
            }
            Pin::Sss {
                t,
                prime,
                pins,
                jwe,
            } => {
                let mut order: Vec<&Pin> = pins.iter().collect();
                order.sort_by_key(|p| p.cost());
                let mut points = Vec::new();
                let mut reasons = Vec::new();
                for p in order {
                    if points.len() == *t {
                        break;
                    }
                    match p.decrypt(ctx) {
                        Ok(pt) if pt.len() == 2 * prime.len() => points.push(pt),
                        Ok(_) => reasons.push(format!("{}: not a point", p.describe())),
                        Err(e) => reasons.push(format!("{}: {e}", p.describe())),
                    }
                }
                if points.len() < *t {
                    return Err(TangError::Threshold {
                        needed: *t,
                        got: points.len(),
                        reasons: reasons.join("; "),
                    });
                }
                let key = crate::shamir::recover(prime, &points)?;
                jwe.decrypt_direct(&key)
            }
        }
    }
}

/// The McCallum-Relyea exchange with the tang server at `url` for `jwe`, then its
/// decryption.
fn tang_decrypt(url: &str, jwe: &Jwe, limits: &Limits) -> Result<SecretBuf, TangError> {
    let h = &jwe.header;
    let kid = h
        .get("kid")
        .and_then(Value::as_str)
        .ok_or(TangError::Malformed("kid"))?;
    let c = EcPub::from_jwk(h.get("epk").ok_or(TangError::Malformed("epk"))?)?;
    let keys = h
        .pointer("/clevis/tang/adv/keys")
        .and_then(Value::as_array)
        .ok_or(TangError::Malformed("clevis.tang.adv"))?;
    let srv = keys
        .iter()
        .find(|k| ec::has_thumbprint(k, kid))
        .ok_or_else(|| TangError::KidNotAdvertised(kid.to_string()))?;
    let s = EcPub::from_jwk(srv)?;
    if s.crv != c.crv {
        return Err(TangError::BadKey("epk and server key on different curves"));
    }
    let e = EcPriv::generate(c.crv)?;
    let x = c.add(&e.public)?;
    let mut req = x.to_jwk();
    req["alg"] = "ECMR".into();
    req["key_ops"] = json!(["deriveKey"]);
    let url = format!("{}/rec/{}", url.trim_end_matches('/'), kid);
    let body = serde_json::to_vec(&req).map_err(|_| TangError::Malformed("request"))?;
    let reply = http::post(&url, "application/jwk+json", &body, limits)?;
    let reply: Value = serde_json::from_slice(&reply).map_err(|_| TangError::BadReply {
        url: url.clone(),
        reason: "not JSON",
    })?;
    let y = EcPub::from_jwk(&reply).map_err(|_| TangError::BadReply {
        url: url.clone(),
        reason: "not an EC key on the token's curve",
    })?;
    if y.crv != c.crv {
        return Err(TangError::BadReply {
            url,
            reason: "not an EC key on the token's curve",
        });
    }
    let z = e.recover(&y, &s)?;
    jwe.decrypt(&z)
}

/// The key (`k`, base64url) of the JWK a `tpm2` pin sealed: `{"alg":"A256GCM","k":"…",
/// "key_ops":[…],"kty":"oct"}` and a newline. Read here rather than by a JSON library so
/// that the key goes from one locked buffer to the next and nowhere else. Only the flat
/// object a JWK is (string values, arrays of strings) is accepted.
pub fn jwk_key(json: &[u8]) -> Result<SecretBuf, TangError> {
    let bad = TangError::Malformed("the sealed JWK");
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < json.len() && json[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    // A string without escapes (JWK members and base64url need none): its bytes' range.
    let string = |i: &mut usize| -> Result<(usize, usize), TangError> {
        if json.get(*i) != Some(&b'"') {
            return Err(TangError::Malformed("the sealed JWK"));
        }
        let start = *i + 1;
        let len = json[start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')
            .ok_or(TangError::Malformed("the sealed JWK"))?;
        if json[start + len] != b'"' {
            return Err(TangError::Malformed("the sealed JWK"));
        }
        *i = start + len + 1;
        Ok((start, start + len))
    };
    ws(&mut i);
    if json.get(i) != Some(&b'{') {
        return Err(bad);
    }
    i += 1;
    let mut key = None;
    let mut kty_oct = false;
    loop {
        ws(&mut i);
        let (ks, ke) = string(&mut i)?;
        ws(&mut i);
        if json.get(i) != Some(&b':') {
            return Err(bad);
        }
        i += 1;
        ws(&mut i);
        if json.get(i) == Some(&b'[') {
            i += 1;
            ws(&mut i);
            if json.get(i) != Some(&b']') {
                loop {
                    string(&mut i)?;
                    ws(&mut i);
                    match json.get(i) {
                        Some(b',') => {
                            i += 1;
                            ws(&mut i);
                        }
                        Some(b']') => break,
                        _ => return Err(bad),
                    }
                }
            }
            i += 1;
        } else {
            let (vs, ve) = string(&mut i)?;
            match &json[ks..ke] {
                b"k" => {
                    let mut out = SecretBuf::zeroed((ve - vs) * 3 / 4 + 3);
                    let n = base64::Engine::decode_slice(
                        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                        &json[vs..ve],
                        out.as_mut_bytes(),
                    )
                    .map_err(|_| TangError::Malformed("the sealed JWK's key"))?;
                    key = Some(SecretBuf::from_slice(&out.as_bytes()[..n]));
                }
                b"kty" => kty_oct = &json[vs..ve] == b"oct",
                _ => {}
            }
        }
        ws(&mut i);
        match json.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return Err(bad),
        }
    }
    i += 1;
    ws(&mut i);
    if i != json.len() || !kty_oct {
        return Err(bad);
    }
    key.ok_or(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwk_key_reads_what_jose_writes() {
        let k = jwk_key(
            b"{\"alg\":\"A256GCM\",\"k\":\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\",\
              \"key_ops\":[\"encrypt\",\"decrypt\"],\"kty\":\"oct\"}\n",
        )
        .unwrap();
        assert_eq!(k.as_bytes(), (0u8..32).collect::<Vec<_>>());
        for bad in [
            &b"{\"k\":\"AAAA\"}"[..],
            b"{\"k\":\"AA\\\"AA\",\"kty\":\"oct\"}",
            b"{\"kty\":\"oct\"}",
            b"{\"k\":\"AAAA\",\"kty\":\"oct\"} x",
            b"{\"k\":\"AAAA\",\"kty\":\"oct\",\"n\":1}",
            b"[",
            b"",
            b"{\"k\":\"AAAA\",\"kty\":\"oct\"",
        ] {
            assert!(jwk_key(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
