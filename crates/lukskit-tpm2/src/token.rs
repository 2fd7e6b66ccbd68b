//! The `systemd-tpm2` LUKS2 token, as `systemd-cryptenroll --tpm2-device=…` writes it
//! (systemd 252, Debian 12; fields of newer systemd where lukskit can honour them), and its
//! unlock as `systemd-cryptsetup` and systemd's cryptsetup token plugin do it:
//!
//! 1. `tpm2-blob` is the sealed object: a marshalled `TPM2B_PRIVATE` then `TPM2B_PUBLIC`;
//! 2. the transient primary key systemd sealed under is made again (`TPM2_CreatePrimary`
//!    under the owner hierarchy, the legacy ECC or RSA template, `tpm2-primary-alg`), the
//!    sealed object is loaded under it;
//! 3. an HMAC session salted to the primary key and bound to the sealed object (its
//!    authValue is the PIN's for PIN tokens) encrypts the unsealed secret on its way back;
//! 4. a policy session, salted too, replays the token's policy: `TPM2_PolicyPCR` over
//!    `tpm2-pcrs` in `tpm2-pcr-bank`, then `TPM2_PolicyAuthValue` for `tpm2-pin` tokens; its
//!    digest is checked against `tpm2-policy-hash` before anything is asked of the sealed
//!    object, so changed PCRs cost no dictionary-attack counter;
//! 5. `TPM2_Unseal`; the keyslot's passphrase is the base64 of the unsealed bytes.
//!
//! The PIN becomes the authValue as systemd makes it: SHA-256 of the PIN (systemd 252), or,
//! for tokens with `tpm2-salt` (systemd 253 and later), SHA-256 of the base64 of
//! PBKDF2-HMAC-SHA256(PIN, salt).
//!
//! Tokens of systemd 254 and later that name a persistent storage root key (`tpm2-srk`, an
//! `ESYS_TR` serialization) load under that key when the TPM holds it (its name is checked).
//!
//! Not supported (refused with [`Tpm2Error::Unsupported`]): signed PCR policies
//! (`tpm2-pubkey`) and pcrlock policies.

use crate::error::{ResponseCode, Result, Tpm2Error};
use crate::tpm::{self, alg, Tpm};
use crate::transport::DeviceSpec;
use base64::Engine as _;
use lukskit_crypto::SecretBuf;
use serde_json::Value;
use std::time::Duration;

/// The most base64 characters of `tpm2-blob` lukskit decodes (a sealed object is a few
/// hundred bytes).
const MAX_BLOB_B64: usize = 8192;

/// The most bytes of a sealed key file (two `TPM2B`s of at most 1024 bytes each).
pub const MAX_SEALED_BLOB: usize = 2 * (2 + 1024);

/// How many times the unseal is tried again when a PCR changed during the policy session
/// (`TPM_RC_PCR_CHANGED`), as systemd does.
const PCR_CHANGED_RETRIES: u32 = 3;

/// The PBKDF2 iterations systemd's `tpm2_util_pbkdf2_hmac_sha256` uses for `tpm2-salt`.
const SALT_PBKDF2_ITERATIONS: u32 = 10_000;

/// A parsed `systemd-tpm2` token.
#[derive(Clone, Debug)]
pub struct SystemdTpm2Token {
    private: Vec<u8>,
    public: Vec<u8>,
    /// The PCRs of the policy (bit n: PCR n).
    pub pcr_mask: u32,
    /// The PCR bank (`TPM_ALG_ID`), or `None` when the token names none (systemd then picks
    /// SHA-256, or SHA-1 where SHA-256 is not there).
    pub pcr_bank: Option<u16>,
    /// The primary key's algorithm (`TPM_ALG_ECC` or `TPM_ALG_RSA`), or `None`: ECC, then
    /// RSA, as systemd 250 and older sealed.
    pub primary_alg: Option<u16>,
    /// `tpm2-policy-hash`.
    pub policy_hash: Option<Vec<u8>>,
    /// Whether a PIN is needed (`tpm2-pin`).
    pub pin: bool,
    /// `tpm2-salt` (systemd 253+): the PIN is salted with it.
    pub salt: Option<Vec<u8>>,
    /// `tpm2-srk` (systemd 254+): the persistent storage root key the object was sealed
    /// under, its handle and name.
    pub srk: Option<(u32, Vec<u8>)>,
}

fn bad(s: impl Into<String>) -> Tpm2Error {
    Tpm2Error::BadToken(s.into())
}

fn b64(v: &Value, field: &str, max_chars: usize) -> Result<Vec<u8>> {
    let s = v
        .as_str()
        .ok_or_else(|| bad(format!("{field} is not a string")))?;
    if s.len() > max_chars {
        return Err(bad(format!("{field} is too long")));
    }
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|_| bad(format!("{field} is not base64")))
}

/// A PCR bank name as systemd writes it.
pub fn bank_from_name(s: &str) -> Option<u16> {
    Some(match s {
        "sha1" => alg::SHA1,
        "sha256" => alg::SHA256,
        "sha384" => alg::SHA384,
        "sha512" => alg::SHA512,
        _ => return None,
    })
}

impl SystemdTpm2Token {
    /// Parse the JSON of a `systemd-tpm2` token. Hostile input is bounded: sizes are capped
    /// and every field's type is checked.
    pub fn parse(json: &Value) -> Result<Self> {
        let obj = json.as_object().ok_or_else(|| bad("not an object"))?;
        if obj.get("type").and_then(Value::as_str) != Some("systemd-tpm2") {
            return Err(bad("type is not systemd-tpm2"));
        }
        if obj.get("tpm2_pcrlock").and_then(Value::as_bool) == Some(true) {
            return Err(Tpm2Error::Unsupported(
                "pcrlock policies (tpm2_pcrlock)".into(),
            ));
        }
        if obj
            .get("tpm2-pubkey")
            .is_some_and(|v| v.as_str() != Some("") && !v.is_null())
        {
            return Err(Tpm2Error::Unsupported(
                "signed PCR policies (tpm2-pubkey)".into(),
            ));
        }
        let blob = b64(
            obj.get("tpm2-blob").ok_or_else(|| bad("no tpm2-blob"))?,
            "tpm2-blob",
            MAX_BLOB_B64,
        )?;
        let (private, public) = split_blob(&blob)?;
        let pcrs = obj
            .get("tpm2-pcrs")
            .ok_or_else(|| bad("no tpm2-pcrs"))?
            .as_array()
            .ok_or_else(|| bad("tpm2-pcrs is not an array"))?;
        if pcrs.len() > 24 {
            return Err(bad("tpm2-pcrs has too many entries"));
        }
        let mut pcr_mask = 0u32;
        for p in pcrs {
            // systemd writes numbers; accept their string form too.
            let n = p
                .as_u64()
                .or_else(|| p.as_str().and_then(|s| s.parse().ok()))
                .filter(|&n| n < 24)
                .ok_or_else(|| bad("tpm2-pcrs holds something that is not a PCR 0-23"))?;
            pcr_mask |= 1 << n;
        }
        let pcr_bank = match obj.get("tpm2-pcr-bank") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(bank_from_name)
                    .ok_or_else(|| bad("unknown tpm2-pcr-bank"))?,
            ),
        };
        let primary_alg = match obj.get("tpm2-primary-alg") {
            None | Some(Value::Null) => None,
            Some(v) => Some(match v.as_str() {
                Some("ecc") => alg::ECC,
                Some("rsa") => alg::RSA,
                _ => return Err(bad("unknown tpm2-primary-alg")),
            }),
        };
        let policy_hash = match obj.get("tpm2-policy-hash") {
            None | Some(Value::Null) => None,
            Some(v) => {
                let s = v
                    .as_str()
                    .filter(|s| s.len() <= 128)
                    .ok_or_else(|| bad("tpm2-policy-hash is not a short string"))?;
                Some(hex::decode(s).map_err(|_| bad("tpm2-policy-hash is not hex"))?)
            }
        };
        let pin = match obj.get("tpm2-pin") {
            None | Some(Value::Null) => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad("tpm2-pin is not a boolean"))?,
        };
        let srk = match obj.get("tpm2-srk") {
            None | Some(Value::Null) => None,
            Some(v) => Some(parse_srk(&b64(v, "tpm2-srk", 2048)?)?),
        };
        let salt = match obj.get("tpm2-salt") {
            None | Some(Value::Null) => None,
            Some(v) => Some(b64(v, "tpm2-salt", 256)?),
        };
        if let Some(k) = obj.get("tpm2-pubkey-pcrs") {
            let a = k
                .as_array()
                .ok_or_else(|| bad("tpm2-pubkey-pcrs is not an array"))?;
            if !a.is_empty() {
                return Err(Tpm2Error::Unsupported(
                    "signed PCR policies (tpm2-pubkey-pcrs)".into(),
                ));
            }
        }
        Ok(SystemdTpm2Token {
            private,
            public,
            pcr_mask,
            pcr_bank,
            primary_alg,
            policy_hash,
            pin,
            salt,
            srk,
        })
    }

    /// A sealed key file, as systemd 252's `systemd-cryptsetup` unseals one for a volume
    /// without a token (crypttab's key field with `tpm2-device=`): `blob` is the raw
    /// `TPM2B_PRIVATE` then `TPM2B_PUBLIC` (a token's `tpm2-blob`, base64-decoded), bound to
    /// the PCRs of `pcr_mask` and, with `pin`, to the PIN (SHA-256 of it, no salt). Nothing
    /// else is known: no bank (SHA-256, else SHA-1, as systemd picks), the primary key ECC
    /// then RSA (systemd's `primary_alg` 0). The policy digest the sealed object's public
    /// area demands (`authPolicy`) takes the place of `tpm2-policy-hash`: PCRs that changed
    /// are found before a PIN is asked or the object is tried.
    pub fn from_sealed_blob(blob: &[u8], pcr_mask: u32, pin: bool) -> Result<Self> {
        if blob.len() > MAX_SEALED_BLOB {
            return Err(bad("the sealed key file is too long"));
        }
        if pcr_mask >> 24 != 0 {
            return Err(bad("PCR mask names a PCR above 23"));
        }
        let (private, public) = split_blob(blob)?;
        let area = tpm::parse_public(&public)
            .map_err(|_| bad("the public part of the sealed key does not parse"))?;
        if area.kind != alg::KEYEDHASH {
            return Err(bad("the sealed key is not a sealed data object"));
        }
        let policy_hash = (!area.auth_policy.is_empty()).then(|| area.auth_policy.clone());
        Ok(SystemdTpm2Token {
            private,
            public,
            pcr_mask,
            pcr_bank: None,
            primary_alg: None,
            policy_hash,
            pin,
            salt: None,
            srk: None,
        })
    }

    /// Whether unsealing needs a PIN.
    pub fn needs_pin(&self) -> bool {
        self.pin
    }

    /// The authValue of the sealed object for `pin`, as systemd computes it.
    pub fn pin_auth(&self, pin: &[u8]) -> SecretBuf {
        match &self.salt {
            None => SecretBuf::from_slice(&crate::crypto::sha256(&[pin])),
            Some(salt) => {
                let mut salted = SecretBuf::zeroed(32);
                lukskit_crypto::kdf::pbkdf2(
                    lukskit_crypto::hash::HashAlg::Sha256,
                    pin,
                    salt,
                    SALT_PBKDF2_ITERATIONS,
                    salted.as_mut_bytes(),
                )
                .ok();
                let b64 = SecretBuf::from_vec(
                    base64::engine::general_purpose::STANDARD
                        .encode(salted.as_bytes())
                        .into_bytes(),
                );
                SecretBuf::from_slice(&crate::crypto::sha256(&[b64.as_bytes()]))
            }
        }
    }

    /// Unseal the secret on the TPM `device` (each command may take `timeout`) and return
    /// the keyslot passphrase: the base64 of the unsealed bytes. For PIN tokens
    /// ([`SystemdTpm2Token::needs_pin`]) `pin` is asked for the PIN once the TPM is there
    /// and the PCR policy matches (a TPM that is missing or PCRs that changed ask nothing);
    /// it returns `None` when there is none.
    pub fn unseal(
        &self,
        device: &DeviceSpec,
        pin: impl FnOnce() -> Option<SecretBuf>,
        timeout: Duration,
    ) -> Result<SecretBuf> {
        self.unseal_via(device.open(timeout)?, pin)
    }

    /// [`SystemdTpm2Token::unseal`] over an open `transport` (a TPM of any kind; the fuzz
    /// target passes a hostile one).
    pub fn unseal_via(
        &self,
        transport: Box<dyn crate::transport::Transport>,
        pin: impl FnOnce() -> Option<SecretBuf>,
    ) -> Result<SecretBuf> {
        Ok(self.unseal_secret_via(transport, pin)?.to_base64())
    }

    /// The unsealed bytes themselves (not the passphrase made of them): what systemd gives a
    /// plain volume with `hash=plain` as its key. Otherwise as [`SystemdTpm2Token::unseal`].
    pub fn unseal_secret(
        &self,
        device: &DeviceSpec,
        pin: impl FnOnce() -> Option<SecretBuf>,
        timeout: Duration,
    ) -> Result<SecretBuf> {
        self.unseal_secret_via(device.open(timeout)?, pin)
    }

    fn unseal_secret_via(
        &self,
        transport: Box<dyn crate::transport::Transport>,
        pin: impl FnOnce() -> Option<SecretBuf>,
    ) -> Result<SecretBuf> {
        let mut tpm = Tpm::new(transport);
        self.unseal_on(&mut tpm, pin)
    }

    /// A policy session with the token's policy, checked against `tpm2-policy-hash`.
    fn policy_session(
        &self,
        tpm: &mut Tpm,
        key: (u32, &tpm::PublicKey),
        bank: u16,
    ) -> Result<tpm::Session> {
        let policy = tpm.start_session(key, None, true)?;
        let check = (|| {
            if self.pcr_mask != 0 {
                tpm.policy_pcr(&policy, bank, self.pcr_mask)?;
            }
            if self.pin {
                tpm.policy_auth_value(&policy)?;
            }
            let digest = tpm.policy_get_digest(&policy)?;
            match &self.policy_hash {
                Some(want) if &digest != want => Err(Tpm2Error::PolicyMismatch),
                _ => Ok(()),
            }
        })();
        match check {
            Ok(()) => Ok(policy),
            Err(e) => {
                tpm.flush(policy.handle);
                Err(e)
            }
        }
    }

    /// The transient primary key systemd 252 seals under (`tpm2-primary-alg`; without it
    /// ECC, then RSA, as systemd tried them).
    fn transient_primary(&self, tpm: &mut Tpm) -> Result<(u32, tpm::Public)> {
        let algs: &[u16] = match self.primary_alg {
            Some(a) => &[a][..],
            None => &[alg::ECC, alg::RSA][..],
        };
        let mut last = None;
        for &a in algs {
            match tpm.create_primary(&tpm::legacy_primary_template(a)) {
                Ok(p) => return Ok(p),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or(Tpm2Error::BadResponse("no primary key")))
    }

    fn unseal_on(
        &self,
        tpm: &mut Tpm,
        pin: impl FnOnce() -> Option<SecretBuf>,
    ) -> Result<SecretBuf> {
        let public = tpm::parse_public(&self.public)
            .map_err(|_| bad("the public part of tpm2-blob does not parse"))?;
        if public.kind != alg::KEYEDHASH {
            return Err(bad("tpm2-blob is not a sealed data object"));
        }
        let name = tpm::object_name(&self.public, public.name_alg)?;
        let (primary, primary_pub) = match &self.srk {
            Some((handle, srk_name)) => {
                // The persistent SRK: the one sealed under, or a refusal (nothing of it is
                // flushed: it is not ours).
                let (public, srk_read_name) = tpm.read_public(*handle).map_err(|e| match e {
                    Tpm2Error::Command { .. } => Tpm2Error::Unsupported(format!(
                        "the TPM has no storage root key at 0x{handle:x} (tpm2-srk)"
                    )),
                    e => e,
                })?;
                if &srk_read_name != srk_name {
                    return Err(Tpm2Error::Unsupported(format!(
                        "the storage root key at 0x{handle:x} is not the one the token was sealed under"
                    )));
                }
                (*handle, public)
            }
            None => self.transient_primary(tpm)?,
        };
        let (item, loaded_name) = tpm.load(primary, &self.private, &self.public)?;
        if loaded_name != name {
            return Err(Tpm2Error::BadResponse(
                "the TPM named the loaded object differently",
            ));
        }
        let key = (primary, &primary_pub.key);
        // The policy first: changed PCRs fail here, before a PIN is asked or anything is
        // tried against the sealed object (no dictionary-attack count).
        let banks: &[u16] = match (self.pcr_bank, &self.policy_hash) {
            (Some(b), _) => &[b][..],
            // No bank named: SHA-256, else SHA-1 (the policy hash tells which).
            (None, Some(_)) => &[alg::SHA256, alg::SHA1][..],
            (None, None) => &[alg::SHA256][..],
        };
        let mut found = None;
        for (i, &b) in banks.iter().enumerate() {
            match self.policy_session(tpm, key, b) {
                Ok(p) => {
                    found = Some((p, b));
                    break;
                }
                Err(Tpm2Error::PolicyMismatch) if i + 1 < banks.len() => {}
                Err(e) => return Err(e),
            }
        }
        let Some((mut policy, bank)) = found else {
            return Err(Tpm2Error::PolicyMismatch);
        };
        let auth = if self.pin {
            let p = pin().ok_or(Tpm2Error::PinRequired)?;
            self.pin_auth(p.as_bytes())
        } else {
            SecretBuf::zeroed(0)
        };
        // Bound to the sealed object (its authValue: the PIN's), salted to the primary key:
        // only the TPM that holds the object can answer in this session.
        let mut enc = tpm.start_session(key, Some((item, auth.as_bytes())), false)?;
        let mut tries = 0;
        loop {
            let result = tpm.unseal(item, &name, &mut policy, auth.as_bytes(), &mut enc);
            tpm.flush(policy.handle);
            match result {
                Ok(s) => return Ok(s),
                Err(Tpm2Error::Command { rc, .. })
                    if rc.base() == ResponseCode::PCR_CHANGED && tries < PCR_CHANGED_RETRIES =>
                {
                    tries += 1;
                    policy = self.policy_session(tpm, key, bank)?;
                }
                Err(Tpm2Error::Command { rc, .. })
                    if self.pin
                        && matches!(
                            rc.base(),
                            ResponseCode::AUTH_FAIL | ResponseCode::BAD_AUTH
                        ) =>
                {
                    return Err(Tpm2Error::BadPin)
                }
                Err(Tpm2Error::Command { rc, .. }) if rc.base() == ResponseCode::POLICY_FAIL => {
                    return Err(Tpm2Error::PolicyMismatch)
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Split `tpm2-blob` into the contents of its `TPM2B_PRIVATE` and `TPM2B_PUBLIC`.
pub fn split_blob(blob: &[u8]) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut r = crate::codec::Reader::new(blob);
    let private = r
        .tpm2b(1024)
        .map_err(|_| bad("tpm2-blob: bad TPM2B_PRIVATE"))?
        .to_vec();
    let public = r
        .tpm2b(1024)
        .map_err(|_| bad("tpm2-blob: bad TPM2B_PUBLIC"))?
        .to_vec();
    if r.remaining() != 0 {
        return Err(bad("tpm2-blob: trailing bytes"));
    }
    if private.is_empty() || public.is_empty() {
        return Err(bad("tpm2-blob: empty part"));
    }
    Ok((private, public))
}

/// The handle and name of the key in `tpm2-srk`: a tpm2-tss `ESYS_TR` serialization
/// (`Esys_TR_Serialize`: handle, `TPM2B_NAME`, resource type, and for keys their
/// `TPM2B_PUBLIC`). Only persistent handles are accepted.
pub fn parse_srk(data: &[u8]) -> Result<(u32, Vec<u8>)> {
    let mut r = crate::codec::Reader::new(data);
    let handle = r.u32().map_err(|_| bad("tpm2-srk is truncated"))?;
    if handle >> 24 != 0x81 {
        return Err(bad(format!(
            "tpm2-srk names handle 0x{handle:x}, not a persistent key"
        )));
    }
    let name = r.tpm2b(68).map_err(|_| bad("tpm2-srk: bad name"))?.to_vec();
    if name.len() < 2 {
        return Err(bad("tpm2-srk: empty name"));
    }
    Ok((handle, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A token systemd-cryptenroll 252 wrote (swtpm, PCR 7, ECC primary, no PIN).
    fn sample() -> Value {
        json!({"type":"systemd-tpm2","keyslots":["1"],
            "tpm2-blob":"AJ4AICbNMe5rK+eU7wxhlJEKsiqpBs3BCghP/9cm6JGcSaG3ABDpng6dLaVQ8RafQB7t414BIybBROWYCkgpm4qupza8aO7G88ZwodCDouBdZwsLQ6nq0nxDQavK9+PKMDPAR1Hz+7jfqHWmo4HJMenLWXBO8TwvyCjUqJscDWOg/qBxoTXXtRXeLRehuB3Ud49Mh61kj7Kl4f+C2ydKOQBOAAgACwAAABIAIItWgtgbKUNdCNeSeBUGEdx+WSOy/vzOaEoJV3tAEwqLABAAIEgarxJuPP3/3X/9Uv4x+BpkXkzLacWzLK2AhD8an6Jg",
            "tpm2-pcrs":[7],"tpm2-pcr-bank":"sha256","tpm2-primary-alg":"ecc",
            "tpm2-policy-hash":"8b5682d81b29435d08d79278150611dc7e5923b2fefcce684a09577b40130a8b",
            "tpm2-pin":false})
    }

    #[test]
    fn parses_what_systemd_252_writes() {
        let t = SystemdTpm2Token::parse(&sample()).unwrap();
        assert_eq!(t.pcr_mask, 1 << 7);
        assert_eq!(t.pcr_bank, Some(alg::SHA256));
        assert_eq!(t.primary_alg, Some(alg::ECC));
        assert!(!t.needs_pin());
        let p = tpm::parse_public(&t.public).unwrap();
        assert_eq!(p.kind, alg::KEYEDHASH);
        assert_eq!(p.auth_policy, t.policy_hash.clone().unwrap());
    }

    #[test]
    fn a_sealed_key_file_is_the_decoded_blob_with_its_auth_policy() {
        let tok = sample();
        let blob = base64::engine::general_purpose::STANDARD
            .decode(tok["tpm2-blob"].as_str().unwrap())
            .unwrap();
        let t = SystemdTpm2Token::from_sealed_blob(&blob, 1 << 7, false).unwrap();
        // The object's authPolicy is the token's policy hash: the same check, without a token.
        assert_eq!(
            t.policy_hash.as_deref().map(hex::encode).as_deref(),
            tok["tpm2-policy-hash"].as_str()
        );
        assert_eq!((t.pcr_bank, t.primary_alg, t.pin), (None, None, false));
        // Hostile files: too long, trailing bytes, truncated, a PCR above 23, not sealed data.
        let mut long = blob.clone();
        long.resize(MAX_SEALED_BLOB + 1, 0);
        let mut trailing = blob.clone();
        trailing.push(0);
        for (bad_blob, mask) in [
            (&long[..], 1 << 7),
            (&trailing[..], 1 << 7),
            (&blob[..blob.len() - 1], 1 << 7),
            (&blob[..], 1 << 24),
            (&[][..], 1 << 7),
        ] {
            assert!(
                matches!(
                    SystemdTpm2Token::from_sealed_blob(bad_blob, mask, false),
                    Err(Tpm2Error::BadToken(_))
                ),
                "{} bytes, mask {mask:x}",
                bad_blob.len()
            );
        }
    }

    #[test]
    fn refuses_hostile_or_unsupported_tokens() {
        let mut v = sample();
        v["tpm2-pcrs"] = json!([24]);
        assert!(matches!(
            SystemdTpm2Token::parse(&v),
            Err(Tpm2Error::BadToken(_))
        ));
        let mut v = sample();
        v["tpm2-blob"] = json!("A".repeat(100_000));
        assert!(matches!(
            SystemdTpm2Token::parse(&v),
            Err(Tpm2Error::BadToken(_))
        ));
        let mut v = sample();
        v["tpm2-blob"] = json!(7);
        assert!(SystemdTpm2Token::parse(&v).is_err());
        let mut v = sample();
        v["tpm2-pin"] = json!("yes");
        assert!(SystemdTpm2Token::parse(&v).is_err());
        let mut v = sample();
        v["tpm2-srk"] = json!("AAAA");
        assert!(matches!(
            SystemdTpm2Token::parse(&v),
            Err(Tpm2Error::BadToken(_))
        ));
        // A persistent handle and a name parse; a transient handle does not.
        let mut v = sample();
        v["tpm2-srk"] = json!("gQAAAQAEAAsAAQ==");
        let t = SystemdTpm2Token::parse(&v).unwrap();
        assert_eq!(t.srk, Some((0x8100_0001, vec![0, 0x0b, 0, 1])));
        v["tpm2-srk"] = json!("gAAAAQAEAAsAAQ==");
        assert!(SystemdTpm2Token::parse(&v).is_err());
        let mut v = sample();
        v["tpm2-pubkey"] = json!("AAAA");
        assert!(matches!(
            SystemdTpm2Token::parse(&v),
            Err(Tpm2Error::Unsupported(_))
        ));
        let mut v = sample();
        v["tpm2-primary-alg"] = json!("dsa");
        assert!(SystemdTpm2Token::parse(&v).is_err());
        // A blob whose sizes lie.
        let mut v = sample();
        v["tpm2-blob"] = json!("//8AAA==");
        assert!(SystemdTpm2Token::parse(&v).is_err());
    }

    #[test]
    fn pin_becomes_sha256_as_in_systemd_252() {
        let t = SystemdTpm2Token::parse(&sample()).unwrap();
        assert_eq!(
            hex::encode(t.pin_auth(b"1234").as_bytes()),
            "03ac674216f3e15c761ee1a5e255f067953623c8b388b4459e13f978d7c846f4"
        );
    }
}
