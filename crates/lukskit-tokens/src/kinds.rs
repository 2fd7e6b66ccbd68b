//! The passphrase each token kind holds.

use crate::{printable, TokenFailure, TokenNotice, TokenPrompt, TokenRequest};
use lukskit_crypto::SecretBuf;
use lukskit_format::luks2::Token;
use std::time::Instant;

/// The passphrase a `luks2-keyring` token (cryptsetup's built-in token type) names: the
/// payload of the `user` key `key_description` in the kernel keyring, as cryptsetup's
/// `keyring_open` reads it. `None` (with the reason as a debug notice) when there is no such
/// key this process may read.
pub(crate) fn keyring(t: &Token, prompt: &mut dyn TokenPrompt) -> Option<SecretBuf> {
    let Some(desc) = t.json.get("key_description").and_then(|d| d.as_str()) else {
        prompt.notice(TokenNotice::Debug(format!(
            "Token {} has no key description.",
            t.id
        )));
        return None;
    };
    match lukskit_dm::keyring::read_user_key(desc) {
        Ok(p) => Some(p),
        Err(e) => {
            prompt.notice(TokenNotice::Debug(format!(
                "Reading passphrase from keyring key {desc} failed: {}.",
                e.raw_os_error()
                    .map(|n| std::io::Error::from_raw_os_error(n).to_string())
                    .unwrap_or_else(|| e.to_string())
            )));
            None
        }
    }
}

/// The passphrase a `systemd-tpm2` token holds: the token's sealed secret unsealed by the
/// TPM (`tpm2_device`, default `/dev/tpmrm0` or `/dev/tpm0`), asking for the PIN first
/// where the token needs one ("Please enter TPM2 PIN:", as systemd-cryptsetup asks). On
/// failure, how it failed and the one line saying why (not escaped); a wrong PIN is not asked
/// again (each wrong PIN costs a dictionary-attack count in the TPM).
pub(crate) fn tpm2(
    t: &Token,
    req: &TokenRequest,
    prompt: &mut dyn TokenPrompt,
) -> Result<SecretBuf, (TokenFailure, String)> {
    let cannot =
        |e: &dyn std::fmt::Display| format!("Token {} (systemd-tpm2) cannot unlock: {e}.", t.id);
    let tok = lukskit_tpm2::SystemdTpm2Token::parse(&t.json)
        .map_err(|e| (TokenFailure::Unusable, cannot(&e)))?;
    let device = lukskit_tpm2::DeviceSpec::parse(req.tpm2_device.as_deref().unwrap_or("auto"))
        .map_err(|e| (TokenFailure::Unusable, cannot(&e)))?;
    if !req.device_wait.is_zero() && !device.present() {
        prompt.notice(TokenNotice::Debug(format!(
            "Waiting for TPM2 device {device:?} ({}).",
            if req.device_wait == std::time::Duration::MAX {
                "no time limit".to_string()
            } else {
                format!("at most {} s", req.device_wait.as_secs_f64())
            }
        )));
        device.wait_present(req.device_wait);
    }
    prompt.notice(TokenNotice::Debug(format!(
        "Unsealing token {} on TPM2 device {device:?} (PCR mask 0x{:x}, PIN {}).",
        t.id,
        tok.pcr_mask,
        if tok.needs_pin() { "yes" } else { "no" }
    )));
    let ask_pin = || prompt.pin("Please enter TPM2 PIN: ");
    tok.unseal(&device, ask_pin, lukskit_tpm2::transport::DEFAULT_TIMEOUT)
        .map_err(|e| {
            let class = match e {
                lukskit_tpm2::Tpm2Error::BadPin => TokenFailure::WrongPassphrase,
                _ => TokenFailure::Unusable,
            };
            (class, cannot(&e))
        })
}

/// The passphrase a `systemd-pkcs11` token holds: its key decrypted by the security token
/// its URI names, through the PKCS#11 module (crate `lukskit-pkcs11`), asking for the
/// token's PIN as systemd-cryptsetup asks ("Please enter PIN for security token 'LABEL' in
/// order to unlock NAME:"). A wrong PIN is not asked again (smart cards lock after a few).
pub(crate) fn pkcs11(
    t: &Token,
    req: &TokenRequest,
    prompt: &mut dyn TokenPrompt,
) -> Result<SecretBuf, (TokenFailure, String)> {
    let cannot = |e: &dyn std::fmt::Display| {
        printable(&format!(
            "Token {} (systemd-pkcs11) cannot unlock: {e}.",
            t.id
        ))
    };
    let tok = lukskit_pkcs11::SystemdPkcs11Token::parse(&t.json)
        .map_err(|e| (TokenFailure::Unusable, cannot(&e)))?;
    prompt.notice(TokenNotice::Debug(format!(
        "Decrypting the key of token {} with the PKCS#11 token {}.",
        t.id,
        printable(&tok.uri_text)
    )));
    let volume = &req.volume_name;
    let ask_pin = |label: &str| {
        prompt.pin(&printable(&format!(
            "Please enter PIN for security token '{label}' in order to unlock {volume}: "
        )))
    };
    tok.unlock(ask_pin).map_err(|e| {
        let class = match e {
            lukskit_pkcs11::Pkcs11Error::BadPin(_) => TokenFailure::WrongPassphrase,
            _ => TokenFailure::Unusable,
        };
        (class, cannot(&e))
    })
}

/// What clevis pins may use: the tang exchanges' limits, the TPM of `tpm2_device` (for
/// `tpm2` pins, as for systemd-tpm2 tokens), all of it before `deadline`.
pub(crate) fn clevis_context(
    req: &TokenRequest,
    deadline: Instant,
) -> Result<lukskit_tang::Context, lukskit_tpm2::Tpm2Error> {
    Ok(lukskit_tang::Context {
        limits: lukskit_tang::default_limits(),
        deadline,
        tpm2: lukskit_tpm2::DeviceSpec::parse(req.tpm2_device.as_deref().unwrap_or("auto"))?,
        tpm2_timeout: lukskit_tpm2::transport::DEFAULT_TIMEOUT,
    })
}
