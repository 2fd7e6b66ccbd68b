//! Key files that hold a sealed key instead of the passphrase: what systemd 252's
//! `systemd-cryptsetup` does for a volume without a token (LUKS1, plain, BitLocker, LUKS2
//! without one) when crypttab gives `tpm2-device=` or `pkcs11-uri=URI` with a key file.
//!
//! * TPM2: the key file is the sealed object (a token's `tpm2-blob`, base64-decoded),
//!   unsealed under the PCR policy crypttab's `tpm2-pcrs=` names (systemd's default PCR 7)
//!   and, with `tpm2-pin=yes`, the PIN;
//! * PKCS#11: the key file is a key encrypted to the certificate of the security token the
//!   URI names (a token's `pkcs11-key`, base64-decoded), decrypted by that token.
//!
//! Either way the secret itself is returned, in a [`SecretBuf`] from the moment it exists:
//! the keyslot passphrase systemd makes of it is its base64 text
//! ([`SecretBuf::to_base64`]); a plain volume with `hash=plain` takes the bytes themselves.

use crate::{printable, TokenNotice, TokenPrompt, TokenRequest};
use lukskit_crypto::SecretBuf;

/// What an entry's key file holds.
#[derive(Debug, Clone, Copy)]
pub enum SealedKeyFile<'a> {
    /// A TPM2-sealed object, bound to the PCRs of `pcr_mask` (and the PIN with `pin`).
    Tpm2 {
        /// The key file's bytes.
        blob: &'a [u8],
        /// The PCRs (bit n: PCR n).
        pcr_mask: u32,
        /// Whether the PIN is part of the policy.
        pin: bool,
    },
    /// A key encrypted to the certificate of the security token `uri` names.
    Pkcs11 {
        /// The key file's bytes.
        encrypted_key: &'a [u8],
        /// The PKCS#11 URI.
        uri: &'a str,
    },
}

/// Why a sealed key file gave no secret.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealedKeyError {
    /// The TPM refused the PIN (one dictionary-attack count; it is not asked again).
    #[error("the TPM2 PIN is wrong")]
    Tpm2Pin,
    /// The TPM could not unseal the key (missing, PCRs changed, a bad file, …).
    #[error(transparent)]
    Tpm2(lukskit_tpm2::Tpm2Error),
    /// The security token could not decrypt the key.
    #[error(transparent)]
    Pkcs11(lukskit_pkcs11::Pkcs11Error),
}

/// The secret in `key` (raw bytes, see the module docs): unsealed by the TPM of
/// `req.tpm2_device` (waiting for it up to `req.device_wait`) or decrypted by the security
/// token; PINs asked through `prompt` ("Please enter TPM2 PIN: " and systemd's security token
/// prompt), once.
pub fn sealed_key_secret(
    key: SealedKeyFile<'_>,
    req: &TokenRequest,
    prompt: &mut dyn TokenPrompt,
) -> Result<SecretBuf, SealedKeyError> {
    match key {
        SealedKeyFile::Tpm2 {
            blob,
            pcr_mask,
            pin,
        } => tpm2(blob, pcr_mask, pin, req, prompt),
        SealedKeyFile::Pkcs11 { encrypted_key, uri } => {
            let tok = lukskit_pkcs11::SystemdPkcs11Token::from_key_file(uri, encrypted_key)
                .map_err(SealedKeyError::Pkcs11)?;
            prompt.notice(TokenNotice::Debug(format!(
                "Decrypting the key file with the PKCS#11 token {}.",
                printable(uri)
            )));
            let volume = &req.volume_name;
            let ask_pin = |label: &str| {
                prompt.pin(&printable(&format!(
                    "Please enter PIN for security token '{label}' in order to unlock {volume}: "
                )))
            };
            tok.decrypt_key(ask_pin).map_err(SealedKeyError::Pkcs11)
        }
    }
}

fn tpm2(
    blob: &[u8],
    pcr_mask: u32,
    pin: bool,
    req: &TokenRequest,
    prompt: &mut dyn TokenPrompt,
) -> Result<SecretBuf, SealedKeyError> {
    let tok = lukskit_tpm2::SystemdTpm2Token::from_sealed_blob(blob, pcr_mask, pin)
        .map_err(SealedKeyError::Tpm2)?;
    let device = lukskit_tpm2::DeviceSpec::parse(req.tpm2_device.as_deref().unwrap_or("auto"))
        .map_err(SealedKeyError::Tpm2)?;
    if !req.device_wait.is_zero() && !device.present() {
        prompt.notice(TokenNotice::Debug(format!(
            "Waiting for TPM2 device {device:?}."
        )));
        device.wait_present(req.device_wait);
    }
    prompt.notice(TokenNotice::Debug(format!(
        "Unsealing the key file on TPM2 device {device:?} (PCR mask 0x{pcr_mask:x}, PIN {}).",
        if pin { "yes" } else { "no" }
    )));
    let ask_pin = || prompt.pin("Please enter TPM2 PIN: ");
    tok.unseal_secret(&device, ask_pin, lukskit_tpm2::transport::DEFAULT_TIMEOUT)
        .map_err(|e| match e {
            lukskit_tpm2::Tpm2Error::BadPin => SealedKeyError::Tpm2Pin,
            e => SealedKeyError::Tpm2(e),
        })
}
