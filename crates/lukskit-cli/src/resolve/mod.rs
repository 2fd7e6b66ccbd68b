//! The resolve stage: cryptsetup's options, as clap parsed them ([`crate::args::Opts`]),
//! become the typed requests the libraries take — once, at the edge, as ripgrep turns its
//! low-level flags into high-level arguments. The command modules pass these values on; no
//! library sees a flag. Nothing here prompts or prints; the activation requests look at the
//! environment (an initramfs, the TLS credentials named) as the options say.

mod activation;
mod format;
mod plain;
mod reencrypt;
mod unlock;

pub use activation::{activation, backend_choice, kernel_options, nbd_tls};
pub use format::{data_cipher, format, pbkdf, NewHeader};
pub use plain::plain;
pub use reencrypt::{legacy_request, legacy_target, reencrypt};
pub use unlock::{
    attempts, key_source, tokens, unlock, TokenSelection, UnlockRequest, VolumeKeySource,
};
