//! Decrypting a systemd-pkcs11 token's key through a PKCS#11 module (crate `cryptoki`, which
//! loads the module with the dynamic loader), as systemd 252's `pkcs11_find_token`,
//! `pkcs11_token_login`, `pkcs11_token_find_private_key` and `pkcs11_token_decrypt_data`
//! do: the first token matching the URI, a login with the PIN where the token needs one,
//! the one private key that matches the URI's `id`/`object` and may decrypt, and
//! `C_Decrypt` with `CKM_RSA_PKCS`.

use crate::{Pkcs11Error, SystemdPkcs11Token};
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass};
use cryptoki::session::UserType;
use lukskit_crypto::SecretBuf;
use zeroize::Zeroize as _;

/// The most slots looked at (a hostile or broken module could list millions).
const MAX_SLOTS: usize = 256;

fn module_error(module: &str, e: impl std::fmt::Display) -> Pkcs11Error {
    Pkcs11Error::Module {
        module: module.to_string(),
        reason: e.to_string(),
    }
}

/// Decrypt `tok`'s key with the module at `module`; `pin` asks for the PIN of the token
/// (its label given) when it needs one.
pub(crate) fn decrypt(
    tok: &SystemdPkcs11Token,
    module: &str,
    pin: impl FnOnce(&str) -> Option<SecretBuf>,
) -> Result<SecretBuf, Pkcs11Error> {
    if !std::path::Path::new(module).exists() {
        return Err(Pkcs11Error::NoModule(format!("{module} does not exist")));
    }
    let ctx = Pkcs11::new(module).map_err(|e| module_error(module, e))?;
    match ctx.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) | Err(Error::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(e) => return Err(module_error(module, e)),
    }
    let out = on_token(&ctx, tok, module, pin);
    let _ = ctx.finalize();
    out
}

fn on_token(
    ctx: &Pkcs11,
    tok: &SystemdPkcs11Token,
    module: &str,
    pin: impl FnOnce(&str) -> Option<SecretBuf>,
) -> Result<SecretBuf, Pkcs11Error> {
    let uri = &tok.uri;
    let lib = ctx
        .get_library_info()
        .map_err(|e| module_error(module, e))?;
    if !uri.matches_library(
        lib.manufacturer_id(),
        lib.library_description(),
        &lib.library_version().to_string(),
    ) {
        return Err(Pkcs11Error::NoToken(tok.uri_text.clone()));
    }
    let slots = ctx
        .get_slots_with_token()
        .map_err(|e| module_error(module, e))?;
    let found = slots.into_iter().take(MAX_SLOTS).find_map(|slot| {
        let si = ctx.get_slot_info(slot).ok()?;
        let ti = ctx.get_token_info(slot).ok()?;
        (uri.matches_slot(slot.id(), si.slot_description(), si.manufacturer_id())
            && uri.matches_token(
                ti.label(),
                ti.manufacturer_id(),
                ti.model(),
                ti.serial_number(),
            ))
        .then_some((slot, ti))
    });
    let Some((slot, info)) = found else {
        return Err(Pkcs11Error::NoToken(tok.uri_text.clone()));
    };
    let label = info.label().trim_end().to_string();
    let session = ctx
        .open_ro_session(slot)
        .map_err(|e| module_error(module, e))?;
    // Log in where the token needs it: private keys are only visible after login.
    if info.login_required() {
        if info.user_pin_locked() {
            return Err(Pkcs11Error::PinLocked(label));
        }
        let r = if info.protected_authentication_path() {
            session.login(UserType::User, None)
        } else {
            let p = pin(&label).ok_or_else(|| Pkcs11Error::PinRequired(label.clone()))?;
            let raw: cryptoki::types::RawAuthPin =
                secrecy::SecretBox::new(Box::new(p.as_bytes().to_vec()));
            session.login_with_raw(UserType::User, &raw)
        };
        match r {
            Ok(()) | Err(Error::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => {}
            Err(Error::Pkcs11(RvError::PinIncorrect, _)) => {
                return Err(Pkcs11Error::BadPin(label));
            }
            Err(Error::Pkcs11(RvError::PinLocked, _)) => {
                return Err(Pkcs11Error::PinLocked(label));
            }
            Err(e) => return Err(module_error(module, e)),
        }
    }
    // systemd's search: the URI's attributes, made stricter (a private key that may
    // decrypt). A `type=cert` or `type=public` URI (systemd 252 stores what was given;
    // newer systemd rewrites it to `type=private`) names the certificate's key pair.
    let mut template = vec![
        Attribute::Class(ObjectClass::PRIVATE_KEY),
        Attribute::Decrypt(true),
    ];
    if let Some(id) = &tok.uri.id {
        template.push(Attribute::Id(id.clone()));
    }
    if let Some(l) = &tok.uri.object {
        template.push(Attribute::Label(l.clone()));
    }
    if matches!(tok.uri.kind.as_deref(), Some("secret-key" | "data")) {
        return Err(Pkcs11Error::Key(
            "the PKCS#11 URI names an object that is not a key pair".into(),
        ));
    }
    let keys = session
        .find_objects(&template)
        .map_err(|e| module_error(module, e))?;
    let key = match keys[..] {
        [k] => k,
        [] => {
            return Err(Pkcs11Error::Key(format!(
                "no private key on security token '{label}' matches the URI"
            )))
        }
        _ => {
            return Err(Pkcs11Error::Key(format!(
                "the URI matches {} private keys on security token '{label}'; it must name one",
                keys.len()
            )))
        }
    };
    let kind = session
        .get_attributes(key, &[AttributeType::KeyType])
        .map_err(|e| module_error(module, e))?;
    if !matches!(kind.first(), Some(Attribute::KeyType(k)) if *k == KeyType::RSA) {
        return Err(Pkcs11Error::Unsupported(
            "a key other than RSA (systemd 254 and later enroll EC keys)".into(),
        ));
    }
    let mut plain = session
        .decrypt(&Mechanism::RsaPkcs, key, &tok.encrypted_key)
        .map_err(|e| Pkcs11Error::Decrypt {
            token: label.clone(),
            reason: e.to_string(),
        })?;
    let out = SecretBuf::from_slice(&plain);
    plain.zeroize();
    if out.is_empty() {
        return Err(Pkcs11Error::Decrypt {
            token: label,
            reason: "empty key".into(),
        });
    }
    Ok(out)
}
