//! Unlocking a LUKS2 volume with its tokens, as cryptsetup's token step before the
//! passphrase: cryptsetup's built-in `luks2-keyring` (a passphrase in the kernel keyring),
//! clevis tokens (crate `lukskit-tang`: the `tang`, `tpm2` and `sss` pins), systemd's
//! `systemd-tpm2` (crate `lukskit-tpm2`: the TPM is asked directly, no plugin) and
//! `systemd-pkcs11` (crate `lukskit-pkcs11`: the smart card's module, dynamic builds only);
//! `systemd-fido2` tokens are refused.
//!
//! * [`order::candidates`] — the tokens to try and the keyslots of each, in cryptsetup's
//!   order (keyslot priority `prefer` first, `ignore` never);
//! * [`try_tokens`] — try them, one after the other, until one unlocks;
//! * [`token_passphrase`] — the passphrase one named token holds;
//! * [`sealed_key_secret`] — the secret in a key file that holds a TPM2-sealed or
//!   PKCS#11-encrypted key (crypttab's `tpm2-device=` / `pkcs11-uri=` for volumes without a
//!   token, as systemd 252 reads them).
//!
//! The library prints nothing and reads no terminal: PINs are asked and what happens is
//! told through the caller's [`TokenPrompt`] (PINs go into [`SecretBuf`]s at once).

#![forbid(unsafe_code)]

mod kinds;
pub mod order;
mod sealed;
mod unlock;

use lukskit_crypto::SecretBuf;

pub use sealed::{sealed_key_secret, SealedKeyError, SealedKeyFile};
pub use unlock::{token_passphrase, try_tokens, TokenOutcome};

/// Which tokens to try, and how (cryptsetup's `--token-id`, `--token-type`, `--key-slot`,
/// `--disable-external-tokens`, `--tpm2-device`).
#[derive(Debug, Clone, Default)]
pub struct TokenRequest {
    /// Only this token.
    pub token_id: Option<u32>,
    /// Only tokens of this type.
    pub token_type: Option<String>,
    /// Only tokens for this keyslot, and only this keyslot.
    pub key_slot: Option<u32>,
    /// Skip the token kinds cryptsetup runs as external plugins (clevis, systemd-*).
    pub disable_external: bool,
    /// The TPM for systemd-tpm2 tokens and clevis tpm2 pins, as written (`auto`, a path,
    /// `swtpm:path=…`; `None`: `auto`). Parsed for each token that needs it, so that a bad
    /// one fails those tokens only.
    pub tpm2_device: Option<String>,
    /// How long a `systemd-tpm2` token waits for its TPM to appear before it fails (crypttab's
    /// `token-timeout=`, lukskit's `--token-timeout`): zero (the default, as cryptsetup) does
    /// not wait, `Duration::MAX` waits as long as it takes.
    pub device_wait: std::time::Duration,
    /// The volume's name in PIN prompts (systemd-cryptsetup's: the mapping name, else the
    /// device).
    pub volume_name: String,
}

/// How tokens failed, as cryptsetup classes it: none could give a passphrase at all
/// (`-ENOENT`: a token type lukskit has no handler for, a tang server that does not answer),
/// or one's passphrase opened none of its keyslots or a `luks2-keyring` token found no key
/// to read (`-EPERM`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TokenFailure {
    /// No token could give a passphrase.
    Unusable,
    /// A token's passphrase (or PIN) was wrong.
    WrongPassphrase,
}

/// What the token step tells its caller while it works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenNotice {
    /// A detail for a debug log.
    Debug(String),
    /// One line saying why a token cannot unlock or was skipped (control characters from
    /// headers and servers already escaped).
    Failed(String),
}

/// The caller's side of the token step: PIN prompts and what to show.
pub trait TokenPrompt {
    /// Ask for a PIN with `prompt`; `None` when none is given.
    fn pin(&mut self, prompt: &str) -> Option<SecretBuf>;
    /// Something happened.
    fn notice(&mut self, notice: TokenNotice);
}

/// Why [`token_passphrase`] gives no passphrase.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The volume is not LUKS2 (no tokens).
    #[error("not a LUKS2 volume")]
    NotLuks2,
    /// The header's tokens could not be read.
    #[error(transparent)]
    Header(#[from] lukskit_format::FormatError),
    /// No token has this number.
    #[error("token {0} is not in use")]
    NoSuchToken(u32),
    /// The kernel keyring key a `luks2-keyring` token names cannot be read (cryptsetup:
    /// `-EPERM`, as for a wrong passphrase).
    #[error("the token's keyring key cannot be read")]
    KeyringKeyUnreadable,
    /// The token's type is one lukskit cannot run here.
    #[error("no usable token")]
    Unsupported,
    /// The token failed; `message` says why (escaped for a terminal), empty when there is
    /// nothing more to say.
    #[error("{message}")]
    Failed {
        /// How.
        failure: TokenFailure,
        /// Why.
        message: String,
    },
}

/// `s` (a URL or a message from a token's header or its server) with control characters
/// escaped: nothing from a header or a server reaches a terminal as an escape sequence.
pub fn printable(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            printable("http://a/\u{1b}[2Jx\n"),
            "http://a/\\u{1b}[2Jx\\n"
        );
        assert_eq!(printable("plain ünïcode"), "plain ünïcode");
    }
}
