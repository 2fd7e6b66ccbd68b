//! Enrolment of a `systemd-tpm2` token, as `systemd-cryptenroll --tpm2-device=…` of systemd
//! 252 (Debian 12) makes it:
//!
//! 1. a transient primary key under the owner hierarchy from systemd's legacy template, ECC
//!    NIST P-256, or RSA 2048 where the TPM has no ECC;
//! 2. the policy digest from a trial session: `TPM2_PolicyPCR` over the chosen PCRs with
//!    their current values in the chosen bank, then `TPM2_PolicyAuthValue` for PIN tokens;
//! 3. a sealed data object (`TPM2_Create`: keyed-hash, SHA-256 name, `fixedTPM |
//!    fixedParent`, that policy) holding 32 random bytes, its authValue SHA-256 of the PIN
//!    for PIN tokens; the secret travels to the TPM encrypted (a salted session with
//!    `decrypt`);
//! 4. the token JSON systemd 252 writes: `tpm2-blob` (`TPM2B_PRIVATE` then `TPM2B_PUBLIC`),
//!    `tpm2-pcrs`, `tpm2-pcr-bank`, `tpm2-primary-alg`, `tpm2-policy-hash` (hex), `tpm2-pin`;
//! 5. the keyslot passphrase: the base64 of the secret.
//!
//! As systemd does, the new object is unsealed once before anything is written to the
//! volume ([`seal`] fails otherwise).

use crate::error::{Result, Tpm2Error};
use crate::token::SystemdTpm2Token;
use crate::tpm::{self, alg, object_attr, Tpm};
use crate::transport::DeviceSpec;
use base64::Engine as _;
use lukskit_crypto::SecretBuf;
use serde_json::{json, Value};
use std::time::Duration;

/// Bytes of the secret sealed in the TPM (systemd 252 seals 32).
const SECRET_LEN: usize = 32;

/// What to seal against.
#[derive(Clone, Debug)]
pub struct SealRequest {
    /// The PCRs of the policy (bit n: PCR n); 0 for none.
    pub pcr_mask: u32,
    /// The PCR bank (`TPM_ALG_ID`); `None`: SHA-256, or SHA-1 where the TPM has no SHA-256
    /// bank.
    pub pcr_bank: Option<u16>,
}

/// A sealed secret and the token describing it.
pub struct Sealed {
    /// The keyslot passphrase: base64 of the sealed secret.
    pub passphrase: SecretBuf,
    blob: Vec<u8>,
    pcr_mask: u32,
    bank: u16,
    primary_alg: u16,
    policy_hash: Vec<u8>,
    pin: bool,
}

/// The name systemd gives a PCR bank in tokens.
pub fn bank_name(bank: u16) -> &'static str {
    match bank {
        alg::SHA1 => "sha1",
        alg::SHA384 => "sha384",
        alg::SHA512 => "sha512",
        _ => "sha256",
    }
}

/// Parse a PCR list as systemd-cryptenroll's `--tpm2-pcrs=` takes it: numbers 0-23
/// separated by `+` or `,`; the empty string is no PCR. Returns the mask.
pub fn parse_pcr_list(s: &str) -> Result<u32> {
    let mut mask = 0u32;
    for part in s.split(['+', ',']).filter(|p| !p.is_empty()) {
        let n: u32 = part
            .trim()
            .parse()
            .ok()
            .filter(|&n| n < 24)
            .ok_or_else(|| Tpm2Error::BadToken(format!("'{part}' is not a PCR index 0-23")))?;
        mask |= 1 << n;
    }
    Ok(mask)
}

impl Sealed {
    /// The token JSON for `keyslot`, field for field as systemd 252's
    /// `tpm2_make_luks2_json` writes it.
    pub fn token_json(&self, keyslot: u32) -> Value {
        let pcrs: Vec<u32> = (0..24).filter(|n| self.pcr_mask & (1 << n) != 0).collect();
        json!({
            "type": "systemd-tpm2",
            "keyslots": [keyslot.to_string()],
            "tpm2-blob": base64::engine::general_purpose::STANDARD.encode(&self.blob),
            "tpm2-pcrs": pcrs,
            "tpm2-pcr-bank": bank_name(self.bank),
            "tpm2-primary-alg": if self.primary_alg == alg::RSA { "rsa" } else { "ecc" },
            "tpm2-policy-hash": hex::encode(&self.policy_hash),
            "tpm2-pin": self.pin,
        })
    }
}

/// The sealed object's template: what systemd 252 passes to `TPM2_Create`.
fn sealed_template(policy: &[u8]) -> Vec<u8> {
    use object_attr::*;
    let mut w = crate::codec::Writer::new();
    w.u16(alg::KEYEDHASH)
        .u16(alg::SHA256)
        .u32(FIXED_TPM | FIXED_PARENT);
    w.tpm2b(policy);
    w.u16(alg::NULL); // keyedHashDetail: no scheme
    w.tpm2b(&[0u8; 32]); // unique (the TPM computes it)
    w.buf
}

/// The policy digest of a trial session: PolicyPCR over `mask` in `bank` (current values),
/// PolicyAuthValue with a PIN.
fn trial_policy(tpm: &mut Tpm, bank: u16, mask: u32, pin: bool) -> Result<Vec<u8>> {
    let trial = tpm.start_trial_session()?;
    let digest = (|| {
        if mask != 0 {
            tpm.policy_pcr(&trial, bank, mask)?;
        }
        if pin {
            tpm.policy_auth_value(&trial)?;
        }
        tpm.policy_get_digest(&trial)
    })();
    tpm.flush(trial.handle);
    digest
}

/// Seal a new random secret on the TPM `device` (each command may take `timeout`) under
/// `req`'s policy, with `pin` when given, and check that it unseals. Nothing is written
/// anywhere: the caller adds the keyslot ([`Sealed::passphrase`]) and the token
/// ([`Sealed::token_json`]).
pub fn seal(
    device: &DeviceSpec,
    req: &SealRequest,
    pin: Option<&SecretBuf>,
    timeout: Duration,
) -> Result<Sealed> {
    let mut secret = SecretBuf::zeroed(SECRET_LEN);
    getrandom::fill(secret.as_mut_bytes()).map_err(|_| Tpm2Error::Random)?;
    let sealed = {
        let mut tpm = Tpm::new(device.open(timeout)?);
        seal_on(&mut tpm, req, pin, &secret)?
        // The TPM's transient objects and sessions are flushed here.
    };
    // Unseal it once, on a connection of its own, as systemd-cryptenroll checks.
    let token = SystemdTpm2Token::parse(&sealed.token_json(0))?;
    let check = token.unseal(
        device,
        || pin.map(|p| SecretBuf::from_slice(p.as_bytes())),
        timeout,
    )?;
    if !check.ct_eq(sealed.passphrase.as_bytes()) {
        return Err(Tpm2Error::BadResponse(
            "the sealed secret did not unseal to what was sealed",
        ));
    }
    Ok(sealed)
}

fn seal_on(
    tpm: &mut Tpm,
    req: &SealRequest,
    pin: Option<&SecretBuf>,
    secret: &SecretBuf,
) -> Result<Sealed> {
    // ECC first, RSA where the TPM has no ECC (systemd 252's tpm2_make_primary).
    let (primary, primary_alg) = match tpm.create_primary(&tpm::legacy_primary_template(alg::ECC)) {
        Ok((h, _)) => (h, alg::ECC),
        Err(_) => {
            let (h, _) = tpm.create_primary(&tpm::legacy_primary_template(alg::RSA))?;
            (h, alg::RSA)
        }
    };
    let (primary_pub, primary_name) = tpm.read_public(primary)?;
    let banks: &[u16] = match req.pcr_bank {
        Some(b) => &[b][..],
        None => &[alg::SHA256, alg::SHA1][..],
    };
    let mut found = None;
    let mut last = None;
    for &b in banks {
        match trial_policy(tpm, b, req.pcr_mask, pin.is_some()) {
            Ok(d) => {
                found = Some((b, d));
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some((bank, policy_hash)) = found else {
        return Err(last.unwrap_or(Tpm2Error::BadResponse("no PCR bank")));
    };
    let auth = pin.map_or_else(
        || SecretBuf::zeroed(0),
        |p| SecretBuf::from_slice(&crate::crypto::sha256(&[p.as_bytes()])),
    );
    let mut session = tpm.start_session((primary, &primary_pub.key), None, false)?;
    let created = tpm.create_sealed(
        primary,
        &primary_name,
        &mut session,
        &sealed_template(&policy_hash),
        auth.as_bytes(),
        secret.as_bytes(),
    );
    tpm.flush(session.handle);
    let (private, public) = created?;
    let mut w = crate::codec::Writer::new();
    w.tpm2b(&private).tpm2b(&public);
    let passphrase = SecretBuf::from_vec(
        base64::engine::general_purpose::STANDARD
            .encode(secret.as_bytes())
            .into_bytes(),
    );
    Ok(Sealed {
        passphrase,
        blob: w.buf,
        pcr_mask: req.pcr_mask,
        bank,
        primary_alg,
        policy_hash,
        pin: pin.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcr_lists_as_systemd_cryptenroll_takes_them() {
        assert_eq!(parse_pcr_list("7").unwrap(), 1 << 7);
        assert_eq!(parse_pcr_list("7+8").unwrap(), (1 << 7) | (1 << 8));
        assert_eq!(parse_pcr_list("0,2,7").unwrap(), 0b1000_0101);
        assert_eq!(parse_pcr_list("").unwrap(), 0);
        assert!(parse_pcr_list("24").is_err());
        assert!(parse_pcr_list("x").is_err());
        assert!(parse_pcr_list("-1").is_err());
    }

    #[test]
    fn template_is_what_systemd_252_seals_with() {
        // The TPM2B_PUBLIC contents of a systemd-cryptenroll 252 token (PCRs 7+8, swtpm)
        // with the unique field zeroed: only authPolicy differs between enrolments.
        let policy =
            hex::decode("47f797e7e47b3c474904752d92a7ec1dee1ab975f759265fa14c6fcc33d92f4d")
                .unwrap();
        let want = hex::decode(
            "0008000b00000012002047f797e7e47b3c474904752d92a7ec1dee1ab975f759265fa14c6fcc33d92f4d00100020",
        )
        .unwrap();
        let t = sealed_template(&policy);
        assert_eq!(&t[..want.len()], &want[..]);
        assert_eq!(&t[want.len()..], &[0u8; 32]);
    }
}
