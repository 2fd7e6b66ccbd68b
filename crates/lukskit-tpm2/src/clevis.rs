//! The clevis `tpm2` pin as clevis 19 (Debian 12's `clevis-tpm2`, its shell pin over
//! tpm2-tools 5) seals it, and its unseal:
//!
//! - the JWE's protected header carries `clevis.tpm2` = `{hash, key, pcr_bank, pcr_ids,
//!   jwk_pub, jwk_priv}`: the sealed object as `tpm2_create` wrote it (`-u`: a marshalled
//!   `TPM2B_PUBLIC`, `-r`: a `TPM2B_PRIVATE`, both base64url), the name algorithm (`-g`) and
//!   the primary key's algorithm (`-G`), and the PCRs of its policy (none: no policy);
//! - the parent is the primary key `tpm2_createprimary -C o -g HASH -G KEY` makes: the same
//!   template as systemd's legacy primary (restricted decryption key, AES-128-CFB, ECC P-256
//!   or RSA 2048, empty unique) with `HASH` as name algorithm;
//! - the sealed object (`fixedtpm|fixedparent|noda|adminwithpolicy`, and `userwithauth`
//!   when it has no PCR policy) holds the JWK (`{"alg":"A256GCM","k":…,"kty":"oct",…}`)
//!   whose key decrypts the JWE (`alg: dir`);
//! - with PCRs the object's policy is `TPM2_PolicyPCR` over `pcr_ids` in `pcr_bank`
//!   (`tpm2_unseal -p pcr:BANK:IDS`); the policy digest is compared with the object's
//!   `authPolicy` before the unseal, so changed PCRs end there.
//!
//! As for systemd's tokens, every session is salted to the primary key and the unsealed
//! JWK comes back encrypted (AES-128-CFB parameter encryption). The objects are `noDA`: a
//! failed unseal costs no dictionary-attack count.

use crate::error::{ResponseCode, Result, Tpm2Error};
use crate::tpm::{self, alg, Tpm};
use crate::transport::{DeviceSpec, Transport};
use base64::Engine as _;
use lukskit_crypto::SecretBuf;
use serde_json::Value;
use std::time::Duration;

/// The most base64 characters of `jwk_pub` / `jwk_priv` lukskit decodes.
const MAX_PART_B64: usize = 4096;

/// A parsed `clevis.tpm2` header.
#[derive(Clone, Debug)]
pub struct ClevisTpm2 {
    /// The object's name algorithm (`hash`).
    pub name_alg: u16,
    /// The primary key's algorithm (`key`: `TPM_ALG_ECC` or `TPM_ALG_RSA`).
    pub key: u16,
    /// The PCR bank of the policy (`pcr_bank`), when there are PCRs.
    pub pcr_bank: Option<u16>,
    /// The PCRs of the policy (bit n: PCR n); 0: no policy.
    pub pcr_mask: u32,
    private: Vec<u8>,
    public: Vec<u8>,
}

fn bad(s: impl Into<String>) -> Tpm2Error {
    Tpm2Error::BadClevisPin(s.into())
}

fn unsupported(s: impl Into<String>) -> Tpm2Error {
    Tpm2Error::UnsupportedClevisPin(s.into())
}

fn string<'a>(obj: &'a serde_json::Map<String, Value>, field: &str) -> Result<Option<&'a str>> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad(format!("{field} is not a string"))),
    }
}

/// The contents of a marshalled `TPM2B_*` as `tpm2_create` writes its `-u` / `-r` files,
/// base64url-encoded by `jose b64 enc`.
fn tpm2b_part(obj: &serde_json::Map<String, Value>, field: &str) -> Result<Vec<u8>> {
    let s = string(obj, field)?.ok_or_else(|| bad(format!("no {field}")))?;
    if s.len() > MAX_PART_B64 {
        return Err(bad(format!("{field} is too long")));
    }
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .map_err(|_| bad(format!("{field} is not base64url")))?;
    let mut r = crate::codec::Reader::new(&raw);
    let inner = r
        .tpm2b(MAX_PART_B64)
        .map_err(|_| bad(format!("{field} is not a TPM2B structure")))?
        .to_vec();
    if r.remaining() != 0 || inner.is_empty() {
        return Err(bad(format!("{field} is not one TPM2B structure")));
    }
    Ok(inner)
}

/// The PCR list of `pcr_ids`: clevis stores a string ("7", "0,2,7"); its configuration also
/// takes an array, so both are read.
fn pcr_mask(v: &Value) -> Result<u32> {
    let items: Vec<String> = match v {
        Value::String(s) => s.split(',').map(|p| p.trim().to_string()).collect(),
        Value::Array(a) if a.len() <= 24 => a
            .iter()
            .map(|p| match p {
                Value::String(s) => Ok(s.trim().to_string()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(bad("pcr_ids holds something that is not a PCR")),
            })
            .collect::<Result<_>>()?,
        _ => return Err(bad("pcr_ids is not a string")),
    };
    if items.len() > 24 {
        return Err(bad("pcr_ids has too many entries"));
    }
    let mut mask = 0u32;
    for p in items.iter().filter(|p| !p.is_empty()) {
        let n: u32 = p
            .parse()
            .ok()
            .filter(|&n| n < 24)
            .ok_or_else(|| bad("pcr_ids holds something that is not a PCR 0-23"))?;
        mask |= 1 << n;
    }
    Ok(mask)
}

impl ClevisTpm2 {
    /// Parse the `clevis.tpm2` object of a clevis JWE header. Hostile input is bounded:
    /// sizes are capped, every field's type is checked.
    pub fn parse(v: &Value) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| bad("clevis.tpm2 is not an object"))?;
        let hash = string(obj, "hash")?.unwrap_or("sha256");
        let name_alg = crate::token::bank_from_name(hash)
            .ok_or_else(|| unsupported(format!("hash {:?}", short(hash))))?;
        let key = match string(obj, "key")?.unwrap_or("ecc") {
            "ecc" | "ecc256" => alg::ECC,
            "rsa" | "rsa2048" => alg::RSA,
            other => return Err(unsupported(format!("primary key {:?}", short(other)))),
        };
        let pcr_mask = match obj.get("pcr_ids") {
            None | Some(Value::Null) => 0,
            Some(v) => pcr_mask(v)?,
        };
        let pcr_bank = if pcr_mask == 0 {
            None
        } else {
            let b = string(obj, "pcr_bank")?.ok_or_else(|| bad("pcr_ids without pcr_bank"))?;
            Some(
                crate::token::bank_from_name(b)
                    .ok_or_else(|| unsupported(format!("PCR bank {:?}", short(b))))?,
            )
        };
        if pcr_mask != 0 && name_alg != alg::SHA256 {
            // The policy digest is in the object's name algorithm; lukskit's policy
            // sessions are SHA-256 ones (as tpm2-tools' `-p pcr:` sessions are).
            return Err(unsupported(format!("a PCR policy with hash {hash}")));
        }
        let private = tpm2b_part(obj, "jwk_priv")?;
        let public = tpm2b_part(obj, "jwk_pub")?;
        Ok(ClevisTpm2 {
            name_alg,
            key,
            pcr_bank,
            pcr_mask,
            private,
            public,
        })
    }

    /// Unseal the JWK on the TPM `device` (each command may take `timeout`): the bytes
    /// `tpm2_create -i` sealed (the JWK's JSON, with the newline clevis' here-string
    /// added).
    pub fn unseal(&self, device: &DeviceSpec, timeout: Duration) -> Result<SecretBuf> {
        self.unseal_via(device.open(timeout)?)
    }

    /// [`ClevisTpm2::unseal`] over an open `transport` (the fuzz target passes a hostile
    /// one).
    pub fn unseal_via(&self, transport: Box<dyn Transport>) -> Result<SecretBuf> {
        let mut tpm = Tpm::new(transport);
        let out = self.unseal_on(&mut tpm);
        drop(tpm);
        out
    }

    fn unseal_on(&self, tpm: &mut Tpm) -> Result<SecretBuf> {
        let public = tpm::parse_public(&self.public)
            .map_err(|_| bad("jwk_pub does not parse as a TPMT_PUBLIC"))?;
        if public.kind != alg::KEYEDHASH {
            return Err(bad("jwk_pub is not a sealed data object"));
        }
        if public.name_alg != self.name_alg {
            return Err(bad("jwk_pub's name algorithm is not the pin's hash"));
        }
        let name = tpm::object_name(&self.public, public.name_alg)?;
        let (primary, primary_pub) =
            tpm.create_primary(&tpm::primary_template(self.key, self.name_alg))?;
        let (item, loaded_name) = tpm.load(primary, &self.private, &self.public)?;
        if loaded_name != name {
            return Err(Tpm2Error::BadResponse(
                "the TPM named the loaded object differently",
            ));
        }
        let key = (primary, &primary_pub.key);
        let Some(bank) = self.pcr_bank.filter(|_| self.pcr_mask != 0) else {
            if public.attributes & tpm::object_attr::USER_WITH_AUTH == 0 {
                return Err(bad("an object without PCRs that needs a policy"));
            }
            let mut enc = tpm.start_session(key, Some((item, &[])), false)?;
            return tpm.unseal_by_hmac(item, &name, &mut enc);
        };
        let mut enc = tpm.start_session(key, Some((item, &[])), false)?;
        let mut tries = 0;
        loop {
            let mut policy = tpm.start_session(key, None, true)?;
            let built = (|| {
                tpm.policy_pcr(&policy, bank, self.pcr_mask)?;
                let digest = tpm.policy_get_digest(&policy)?;
                if digest != public.auth_policy {
                    return Err(Tpm2Error::PolicyMismatch);
                }
                tpm.unseal(item, &name, &mut policy, &[], &mut enc)
            })();
            tpm.flush(policy.handle);
            match built {
                Err(Tpm2Error::Command { rc, .. })
                    if rc.base() == ResponseCode::PCR_CHANGED && tries < 3 =>
                {
                    tries += 1;
                }
                Err(Tpm2Error::Command { rc, .. }) if rc.base() == ResponseCode::POLICY_FAIL => {
                    return Err(Tpm2Error::PolicyMismatch)
                }
                other => return other,
            }
        }
    }
}

/// At most 32 characters of a string from a header, for a message.
fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The `clevis.tpm2` of a pin `clevis luks bind … tpm2 '{"pcr_ids":"7"}'` wrote
    /// (clevis 19, tpm2-tools 5.4, swtpm).
    fn sample() -> Value {
        json!({"hash":"sha256","key":"ecc","pcr_bank":"sha1","pcr_ids":"7",
            "jwk_priv":"AO4AIN7utgJHIUWLvIm_sqsgfx9pRuqtcgKV3nM7NpKMjo4UABCiqh5PW2v2MNqRZ2_y0QP5kXCCRLdhd8vywhYSr-AczjKlY9tiQcf2vzxXIax8z5a5JD8foT6oieiZzqBcv8wTrEmkTXS_PQ5VJFXK0yy-mmh0YKVYvVAh6nx7qDh0zWnliXblaoFUiQrKGdayowWG00Ti7HEASTuwXaEmM2Q8tV8Xjg140L8PsyG9XYtqm_y2kP66qmeYy0r25f7fjjOt1bWxgbwwBiMFKfZhSBzodETDT9Z0ibpQTC-XJovlzcqO5NOfYyZ3yOvg",
            "jwk_pub":"AE4ACAALAAAEkgAghCeLYNBUfcJ-xmZ-ev7s4HEcCbXO0Jowpls4nTr9oe8AEAAgJ-wXXXoDNPnrSeCySTvAKr2oIUiZc-RzzCnGM13Mwm0"})
    }

    #[test]
    fn parses_what_clevis_19_writes() {
        let p = ClevisTpm2::parse(&sample()).unwrap();
        assert_eq!(p.pcr_mask, 1 << 7);
        assert_eq!(p.pcr_bank, Some(alg::SHA1));
        assert_eq!((p.name_alg, p.key), (alg::SHA256, alg::ECC));
        let public = tpm::parse_public(&p.public).unwrap();
        assert_eq!(public.kind, alg::KEYEDHASH);
        // fixedtpm|fixedparent|adminwithpolicy|noda
        assert_eq!(public.attributes, 0x492);
        assert_eq!(public.auth_policy.len(), 32);
    }

    #[test]
    fn refuses_hostile_or_unsupported_pins() {
        for (field, value) in [
            ("pcr_ids", json!("24")),
            ("pcr_ids", json!("7,x")),
            ("pcr_ids", json!({"a": 1})),
            ("pcr_bank", json!(7)),
            ("jwk_pub", json!("A".repeat(10_000))),
            ("jwk_pub", json!("//8AAA")),
            ("jwk_priv", json!(null)),
            ("hash", json!([])),
        ] {
            let mut v = sample();
            v[field] = value.clone();
            assert!(
                matches!(ClevisTpm2::parse(&v), Err(Tpm2Error::BadClevisPin(_))),
                "{field} = {value}"
            );
        }
        for (field, value) in [
            ("key", json!("ecc384")),
            ("hash", json!("md5")),
            ("hash", json!("sha1")),
            ("pcr_bank", json!("sm3_256")),
        ] {
            let mut v = sample();
            v[field] = value.clone();
            assert!(
                matches!(
                    ClevisTpm2::parse(&v),
                    Err(Tpm2Error::UnsupportedClevisPin(_))
                ),
                "{field} = {value}"
            );
        }
        // No PCRs: no bank needed, and a SHA-1 object is fine then.
        let mut v = sample();
        v.as_object_mut().unwrap().remove("pcr_ids");
        v["hash"] = json!("sha1");
        let p = ClevisTpm2::parse(&v).unwrap();
        assert_eq!((p.pcr_mask, p.pcr_bank), (0, None));
        // The array form of pcr_ids.
        let mut v = sample();
        v["pcr_ids"] = json!(["0", 7]);
        assert_eq!(ClevisTpm2::parse(&v).unwrap().pcr_mask, 0x81);
    }
}
