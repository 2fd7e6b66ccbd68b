//! The one name of every kind of volume lukskit knows: [`VolumeType`].

use std::fmt;

/// The kind of a volume: the on-disk format of its metadata (or its absence, for plain mode
/// and loop-AES). Named as cryptsetup names them (`CRYPT_LUKS1`, …: `LUKS1`, `LUKS2`, `PLAIN`,
/// `TCRYPT`, `BITLK`, `FVAULT2`, `LOOPAES`), which is what `status` prints as the type and
/// what a mapping's state records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VolumeType {
    /// LUKS1.
    Luks1,
    /// LUKS2 (cryptsetup's default for new volumes).
    Luks2,
    /// cryptsetup plain mode: no metadata at all.
    Plain,
    /// TrueCrypt and VeraCrypt.
    Tcrypt,
    /// Windows BitLocker (and BitLocker To Go).
    Bitlk,
    /// macOS FileVault 2 (Core Storage).
    Fvault2,
    /// loop-AES: key files, no metadata on the device.
    Loopaes,
}

impl VolumeType {
    /// Every type, in the order cryptsetup lists them.
    pub const ALL: [VolumeType; 7] = [
        VolumeType::Luks1,
        VolumeType::Luks2,
        VolumeType::Plain,
        VolumeType::Tcrypt,
        VolumeType::Bitlk,
        VolumeType::Fvault2,
        VolumeType::Loopaes,
    ];

    /// cryptsetup's name of the type (`LUKS2`, `TCRYPT`, …).
    pub fn name(self) -> &'static str {
        match self {
            VolumeType::Luks1 => "LUKS1",
            VolumeType::Luks2 => "LUKS2",
            VolumeType::Plain => "PLAIN",
            VolumeType::Tcrypt => "TCRYPT",
            VolumeType::Bitlk => "BITLK",
            VolumeType::Fvault2 => "FVAULT2",
            VolumeType::Loopaes => "LOOPAES",
        }
    }

    /// The type of cryptsetup's name ([`VolumeType::name`]).
    pub fn from_name(name: &str) -> Option<VolumeType> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether this is a LUKS type (keyslots, tokens, header backups, re-encryption).
    pub fn is_luks(self) -> bool {
        matches!(self, VolumeType::Luks1 | VolumeType::Luks2)
    }
}

impl fmt::Display for VolumeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What `--type` asks for: one type, or any LUKS version (`--type luks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeRequest {
    /// `luks`: LUKS1 or LUKS2, whichever the header is.
    AnyLuks,
    /// Exactly this type.
    Exactly(VolumeType),
}

impl TypeRequest {
    /// Parse cryptsetup's `--type` argument (`luks`, `luks1`, `luks2`, `plain`, `tcrypt`,
    /// `bitlk`, `fvault2`, `loopaes`); `None` for anything else.
    pub fn parse(option: &str) -> Option<TypeRequest> {
        Some(match option {
            "luks" => TypeRequest::AnyLuks,
            "luks1" => TypeRequest::Exactly(VolumeType::Luks1),
            "luks2" => TypeRequest::Exactly(VolumeType::Luks2),
            "plain" => TypeRequest::Exactly(VolumeType::Plain),
            "tcrypt" => TypeRequest::Exactly(VolumeType::Tcrypt),
            "bitlk" => TypeRequest::Exactly(VolumeType::Bitlk),
            "fvault2" => TypeRequest::Exactly(VolumeType::Fvault2),
            "loopaes" => TypeRequest::Exactly(VolumeType::Loopaes),
            _ => return None,
        })
    }

    /// Whether a volume of type `t` satisfies the request.
    pub fn admits(self, t: VolumeType) -> bool {
        match self {
            TypeRequest::AnyLuks => t.is_luks(),
            TypeRequest::Exactly(x) => x == t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_type_options_parse() {
        for t in VolumeType::ALL {
            assert_eq!(VolumeType::from_name(t.name()), Some(t));
            assert_eq!(
                TypeRequest::parse(&t.name().to_ascii_lowercase()),
                Some(TypeRequest::Exactly(t))
            );
        }
        assert_eq!(TypeRequest::parse("luks"), Some(TypeRequest::AnyLuks));
        assert!(TypeRequest::AnyLuks.admits(VolumeType::Luks1));
        assert!(!TypeRequest::AnyLuks.admits(VolumeType::Tcrypt));
        assert_eq!(TypeRequest::parse("LUKS2"), None);
        assert_eq!(VolumeType::from_name("luks2"), None);
    }
}
