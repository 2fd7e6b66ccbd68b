//! A TPM 2.0 client in Rust for lukskit, and the `systemd-tpm2` LUKS2 token on top of it.
//!
//! - [`transport`]: the kernel's TPM device (`/dev/tpmrm0`, `/dev/tpm0`) or swtpm's command
//!   socket (`swtpm:path=SOCKET`, as tpm2-tss's TCTI strings name it), every wait bounded;
//! - [`codec`]: a small bounded TPM 2.0 wire codec (TCG TPM 2.0 Part 2 marshalling);
//! - [`crypto`]: KDFa, KDFe, AES-128-CFB parameter encryption, salts for ECC and RSA keys;
//! - [`tpm`]: typed commands (`CreatePrimary`, `Load`, `StartAuthSession`, `PolicyPCR`,
//!   `PolicyAuthValue`, `PolicyGetDigest`, `Unseal`, `FlushContext`) with salted HMAC and
//!   policy sessions; every handle is flushed when the client is dropped;
//! - [`token`]: the `systemd-tpm2` token as systemd 252 writes it (and the fields of newer
//!   systemd that can be honoured), unsealed as `systemd-cryptsetup` does, the secret turned
//!   into the keyslot passphrase (base64) as systemd does;
//! - [`clevis`]: the clevis `tpm2` pin (Debian's `clevis-tpm2`): its sealed JWK unsealed
//!   under the primary key and PCR policy clevis' tpm2-tools calls make.
//!
//! Nothing here prints: errors are typed ([`Tpm2Error`]). PINs and unsealed secrets live in
//! [`lukskit_crypto::SecretBuf`]s. The only `unsafe` is the poll(2) of the device transport
//! (allowed there alone).

#![deny(unsafe_code)]

pub mod clevis;
pub mod clevis_seal;
pub mod codec;
pub mod crypto;
pub mod enroll;
pub mod error;
pub mod token;
pub mod tpm;
pub mod transport;

pub use clevis::ClevisTpm2;
pub use error::{ResponseCode, Result, Tpm2Error};
pub use token::SystemdTpm2Token;
pub use transport::DeviceSpec;
