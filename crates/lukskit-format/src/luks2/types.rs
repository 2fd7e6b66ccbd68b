//! The `type` members of LUKS2 keyslots, segments and digests, and the persistent activation
//! flags, as enums: the names cryptsetup knows, and any other kept as written (`Other`), so
//! that a header with a name this crate does not know still reads and writes back unchanged.

use std::fmt;

/// One `type` enum: its known names, `Other(String)` for the rest, `parse`, `as_str` and
/// `Display` (the name as written in the JSON).
macro_rules! json_type {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A type this crate does not know, as written.
            Other(String),
        }

        impl $name {
            /// The type named `s` (never fails: unknown names are [`Self::Other`]).
            pub fn parse(s: &str) -> Self {
                match s {
                    $($text => Self::$variant,)*
                    other => Self::Other(other.to_string()),
                }
            }

            /// The name as written in the JSON.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)*
                    Self::Other(s) => s,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

json_type! {
    /// A keyslot's type.
    KeyslotType {
        /// An ordinary keyslot: a KDF, an anti-forensic split and an encrypted area.
        Luks2 = "luks2",
        /// The state of an online re-encryption (its resilience area; no key).
        Reencrypt = "reencrypt",
    }
}

json_type! {
    /// A segment's type.
    SegmentType {
        /// Encrypted data (dm-crypt).
        Crypt = "crypt",
        /// Unencrypted data (dm-linear), during and after re-encryption.
        Linear = "linear",
    }
}

json_type! {
    /// A digest's type.
    DigestType {
        /// PBKDF2 over the volume key.
        Pbkdf2 = "pbkdf2",
    }
}

json_type! {
    /// A token's type: cryptsetup's built-in one, the ones systemd and clevis enroll (which
    /// lukskit reads without plugins), or any other.
    TokenType {
        /// A passphrase in the kernel keyring (`key_description`), cryptsetup's built-in.
        Luks2Keyring = "luks2-keyring",
        /// systemd-cryptenroll's TPM2-sealed key.
        SystemdTpm2 = "systemd-tpm2",
        /// systemd-cryptenroll's key encrypted to a PKCS#11 token's certificate.
        SystemdPkcs11 = "systemd-pkcs11",
        /// systemd-cryptenroll's FIDO2 hmac-secret key.
        SystemdFido2 = "systemd-fido2",
        /// systemd-cryptenroll's recovery key (a passphrase; the token only marks it).
        SystemdRecovery = "systemd-recovery",
        /// A clevis binding (tang, tpm2, sss).
        Clevis = "clevis",
    }
}

json_type! {
    /// A persistent activation flag (`config.flags`), as cryptsetup 2.7 names it
    /// (`persistent_flags[]`).
    ConfigFlag {
        /// Discards (TRIM) pass through the mapping.
        AllowDiscards = "allow-discards",
        /// dm-crypt's `same_cpu_crypt`.
        SameCpuCrypt = "same-cpu-crypt",
        /// dm-crypt's `submit_from_crypt_cpus`.
        SubmitFromCryptCpus = "submit-from-crypt-cpus",
        /// dm-integrity without a journal.
        NoJournal = "no-journal",
        /// dm-crypt's `no_read_workqueue`.
        NoReadWorkqueue = "no-read-workqueue",
        /// dm-crypt's `no_write_workqueue`.
        NoWriteWorkqueue = "no-write-workqueue",
    }
}

json_type! {
    /// What a re-encryption does (the `reencrypt` keyslot's `mode`).
    ReencryptMode {
        /// Old key or cipher to new.
        Reencrypt = "reencrypt",
        /// Plaintext to encrypted.
        Encrypt = "encrypt",
        /// Encrypted to plaintext.
        Decrypt = "decrypt",
    }
}

json_type! {
    /// The order a re-encryption's hot zones move in (the `reencrypt` keyslot's
    /// `direction`).
    ReencryptDirection {
        /// From the start of the data to its end.
        Forward = "forward",
        /// From the end to the start.
        Backward = "backward",
    }
}

impl ConfigFlag {
    /// The flags cryptsetup knows, in its table order, which is the order it stores them in;
    /// it ignores others (with a verbose message).
    pub const KNOWN: [ConfigFlag; 6] = [
        ConfigFlag::AllowDiscards,
        ConfigFlag::SameCpuCrypt,
        ConfigFlag::SubmitFromCryptCpus,
        ConfigFlag::NoJournal,
        ConfigFlag::NoReadWorkqueue,
        ConfigFlag::NoWriteWorkqueue,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_kept() {
        for s in ["luks2", "reencrypt", "x-luks3"] {
            assert_eq!(KeyslotType::parse(s).as_str(), s);
        }
        assert_eq!(KeyslotType::parse("luks2"), KeyslotType::Luks2);
        assert_eq!(SegmentType::parse("linear"), SegmentType::Linear);
        assert_eq!(
            SegmentType::parse("Crypt"),
            SegmentType::Other("Crypt".into())
        );
        assert_eq!(DigestType::parse("pbkdf2").to_string(), "pbkdf2");
        assert_eq!(TokenType::parse("systemd-tpm2"), TokenType::SystemdTpm2);
        assert_eq!(TokenType::parse("x-my-token").as_str(), "x-my-token");
        for f in ConfigFlag::KNOWN {
            assert_eq!(ConfigFlag::parse(f.as_str()), f);
        }
        assert_eq!(
            ConfigFlag::parse("x-flag"),
            ConfigFlag::Other("x-flag".into())
        );
    }
}
