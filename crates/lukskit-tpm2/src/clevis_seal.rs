//! Sealing for the clevis `tpm2` pin, as clevis 19's `clevis-encrypt-tpm2` does it with
//! tpm2-tools 5 (the other half of [`crate::clevis`]):
//!
//! 1. `tpm2_createprimary -C o -g sha256 -G ecc`: the transient primary key of
//!    [`tpm::primary_template`] (ECC P-256, SHA-256 name);
//! 2. with PCRs, `tpm2_createpolicy --policy-pcr -l BANK:IDS`: a trial session's digest of
//!    `TPM2_PolicyPCR` over the PCRs' current values;
//! 3. `tpm2_create -g sha256 -a "fixedtpm|fixedparent|noda|adminwithpolicy" [-L policy]`
//!    (`|userwithauth` without a policy) of a keyed-hash object holding the data (clevis
//!    seals its JWK); the data travels to the TPM encrypted (a session salted to the primary
//!    key with command parameter encryption);
//! 4. the object's `TPM2B_PUBLIC` and `TPM2B_PRIVATE`, marshalled as tpm2-tools writes its
//!    `-u` and `-r` files: clevis' `jwk_pub` and `jwk_priv` (base64url).

use crate::error::Result;
use crate::tpm::{self, alg, object_attr, Tpm};
use crate::transport::DeviceSpec;
use lukskit_crypto::SecretBuf;
use std::time::Duration;

/// A sealed clevis object: the marshalled `TPM2B_PUBLIC` and `TPM2B_PRIVATE`.
pub struct ClevisSealed {
    /// `jwk_pub`, before base64url.
    pub public: Vec<u8>,
    /// `jwk_priv`, before base64url.
    pub private: Vec<u8>,
}

fn template(policy: &[u8]) -> Vec<u8> {
    use object_attr::*;
    let mut attrs = FIXED_TPM | FIXED_PARENT | NO_DA | ADMIN_WITH_POLICY;
    if policy.is_empty() {
        attrs |= USER_WITH_AUTH;
    }
    let mut w = crate::codec::Writer::new();
    w.u16(alg::KEYEDHASH).u16(alg::SHA256).u32(attrs);
    w.tpm2b(policy);
    w.u16(alg::NULL); // no scheme: a sealed data object
    w.tpm2b(&[]); // unique (the TPM computes it)
    w.buf
}

/// Seal `data` (at most 128 bytes) on the TPM `device` under a PCR policy over `pcr_mask`
/// in `pcr_bank` (none when the mask is 0), as clevis' tpm2 pin seals its JWK.
pub fn seal(
    device: &DeviceSpec,
    pcr_bank: u16,
    pcr_mask: u32,
    data: &SecretBuf,
    timeout: Duration,
) -> Result<ClevisSealed> {
    let mut tpm = Tpm::new(device.open(timeout)?);
    let (primary, _) = tpm.create_primary(&tpm::primary_template(alg::ECC, alg::SHA256))?;
    let (primary_pub, primary_name) = tpm.read_public(primary)?;
    let policy = if pcr_mask == 0 {
        Vec::new()
    } else {
        let trial = tpm.start_trial_session()?;
        let digest = tpm
            .policy_pcr(&trial, pcr_bank, pcr_mask)
            .and_then(|()| tpm.policy_get_digest(&trial));
        tpm.flush(trial.handle);
        digest?
    };
    let mut session = tpm.start_session((primary, &primary_pub.key), None, false)?;
    let created = tpm.create_sealed(
        primary,
        &primary_name,
        &mut session,
        &template(&policy),
        &[],
        data.as_bytes(),
    );
    tpm.flush(session.handle);
    let (private, public) = created?;
    let tpm2b = |b: &[u8]| {
        let mut w = crate::codec::Writer::new();
        w.tpm2b(b);
        w.buf
    };
    Ok(ClevisSealed {
        public: tpm2b(&public),
        private: tpm2b(&private),
    })
}
