//! How a passphrase is stretched into a keyslot key: the facade's [`Pbkdf`] choice, for a
//! new volume ([`crate::format()`]) and a new keyslot alike, and its volume-layer request.

use lukskit_volume::pbkdf::{HashChoice, PbkdfKind, PbkdfRequest};

/// How a passphrase is stretched into a keyslot key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pbkdf {
    /// cryptsetup's default: Argon2id for LUKS2, PBKDF2 for LUKS1, benchmarked to take
    /// about two seconds on this machine.
    #[default]
    Default,
    /// PBKDF2 with this many iterations (no benchmark).
    Pbkdf2 {
        /// Iterations (cryptsetup's minimum is 1000).
        iterations: u32,
    },
    /// Argon2i with these costs (no benchmark; LUKS2 only).
    Argon2i {
        /// Passes.
        time: u32,
        /// Memory in KiB.
        memory_kib: u32,
        /// Lanes and threads.
        parallel: u32,
    },
    /// Argon2id with these costs (no benchmark; LUKS2 only).
    Argon2id {
        /// Passes.
        time: u32,
        /// Memory in KiB.
        memory_kib: u32,
        /// Lanes and threads.
        parallel: u32,
    },
}

/// The volume layer's PBKDF request for `pbkdf` and `hash`.
pub(crate) fn pbkdf_request(pbkdf: &Pbkdf, hash: Option<&str>) -> PbkdfRequest {
    let mut o = PbkdfRequest {
        hash: hash.map(HashChoice::parse),
        ..PbkdfRequest::default()
    };
    match *pbkdf {
        Pbkdf::Default => {}
        Pbkdf::Pbkdf2 { iterations } => {
            o.kind = Some(PbkdfKind::Pbkdf2);
            o.force_iterations = Some(iterations);
        }
        Pbkdf::Argon2i {
            time,
            memory_kib,
            parallel,
        }
        | Pbkdf::Argon2id {
            time,
            memory_kib,
            parallel,
        } => {
            o.kind = Some(if matches!(pbkdf, Pbkdf::Argon2i { .. }) {
                PbkdfKind::Argon2i
            } else {
                PbkdfKind::Argon2id
            });
            o.force_iterations = Some(time);
            o.max_memory_kib = Some(memory_kib);
            o.parallel = Some(parallel);
        }
    }
    o
}
