//! LUKS2 metadata edits that need no key: label, subsystem, keyslot priority, tokens;
//! and `repair` of damaged header copies.

use crate::error::{DeviceOp, KeyslotError, ParamError, Result, TokenError, VolumeError};
use crate::luks1_keys;
use crate::volume::{Header, Volume};
use lukskit_format::luks2::{self, ConfigFlag, Luks2Header};
use serde_json::Value;

/// Keyslot priority names of `--priority`.
pub fn parse_priority(s: &str) -> Result<u32> {
    match s {
        "ignore" => Ok(0),
        "normal" => Ok(1),
        "prefer" => Ok(2),
        _ => Err(ParamError::Priority.into()),
    }
}

/// What `repair` did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepairNote {
    /// The damaged primary LUKS2 header was rewritten from the secondary copy.
    PrimaryRestored,
    /// The damaged secondary LUKS2 header was rewritten from the primary copy.
    SecondaryRestored,
    /// A line of the LUKS1 repair report of the on-disk layer (`Luks1RepairReport`): what it
    /// found or fixed in the header.
    Luks1(lukskit_format::Luks1RepairNote),
}

/// What [`Volume::repair`] found and did.
#[derive(Debug)]
#[non_exhaustive]
pub struct RepairReport {
    /// What was found and repaired, in order (for a failed repair, up to the failure).
    pub notes: Vec<RepairNote>,
    /// Whether the header was rewritten, or why the repair failed.
    pub result: Result<bool>,
}

impl Volume {
    fn luks2_or_refuse(&mut self) -> Result<&mut Luks2Header> {
        let path = self.dev.path().to_string();
        match &mut self.header {
            Header::Luks2(h) => Ok(h),
            Header::Luks1(_) => Err(VolumeError::NotLuks2 {
                path: path.to_string(),
            }),
        }
    }

    /// Set the LUKS2 label and/or subsystem (`config --label/--subsystem`).
    pub fn set_label_subsystem(
        &mut self,
        label: Option<&str>,
        subsystem: Option<&str>,
    ) -> Result<()> {
        self.check_requirements_for_write()?;
        let h = self.luks2_or_refuse()?;
        if let Some(l) = label {
            h.binary.label = crate::format::truncate47(l);
        }
        if let Some(s) = subsystem {
            h.binary.subsystem = crate::format::truncate47(s);
        }
        self.write_header()
    }

    /// Store persistent activation flags (`open --persistent`, `refresh --persistent`): the
    /// LUKS2 `config.flags` array becomes exactly `flags` (cryptsetup's names:
    /// `allow-discards`, `same-cpu-crypt`, ...).
    pub fn set_persistent_flags(&mut self, flags: &[ConfigFlag]) -> Result<()> {
        self.check_requirements_for_write()?;
        self.luks2_or_refuse()?.set_config_flags(flags)?;
        self.write_header()
    }

    /// The persistent activation flags stored in a LUKS2 header (none for LUKS1).
    pub fn persistent_flags(&self) -> Vec<ConfigFlag> {
        match &self.header {
            Header::Luks2(h) => h.config_flags(),
            Header::Luks1(_) => Vec::new(),
        }
    }

    /// Set a keyslot's priority (`config --priority … --key-slot N`).
    pub fn set_priority(&mut self, slot: u32, priority: u32) -> Result<()> {
        self.check_requirements_for_write()?;
        let h = self.luks2_or_refuse()?;
        if h.keyslot(slot)?.is_none() {
            return Err(KeyslotError::NotActive { slot }.into());
        }
        h.set_keyslot_priority(slot, priority)?;
        self.write_header()
    }

    /// Add (or with `replace`, replace) a token; returns its id.
    pub fn token_add(&mut self, id: Option<u32>, token: Value, replace: bool) -> Result<u32> {
        self.check_requirements_for_write()?;
        let h = self.luks2_or_refuse()?;
        if let Some(i) = id {
            let exists = h.tokens()?.iter().any(|t| t.id == i);
            if exists && !replace {
                return Err(TokenError::InUse { id: i }.into());
            }
            if !exists && replace {
                return Err(TokenError::NotInUse { id: i }.into());
            }
        } else if replace {
            return Err(ParamError::TokenReplaceNeedsId.into());
        }
        let id = h.add_token(id, token)?;
        self.write_header()?;
        Ok(id)
    }

    /// Give token `id` exactly the keyslots `keyslots` (`token add` assigning, `token
    /// unassign`, luksAddKey `--new-token-id`); one header update.
    pub fn token_set_keyslots(&mut self, id: u32, keyslots: &[u32]) -> Result<()> {
        self.check_requirements_for_write()?;
        let h = self.luks2_or_refuse()?;
        if !h.tokens()?.iter().any(|t| t.id == id) {
            return Err(TokenError::NotInUse { id }.into());
        }
        h.set_token_keyslots(id, keyslots)?;
        self.write_header()
    }

    /// Remove a token.
    pub fn token_remove(&mut self, id: u32) -> Result<()> {
        // As cryptsetup: a token that is not there is reported before the requirements.
        if !self.luks2_or_refuse()?.tokens()?.iter().any(|t| t.id == id) {
            return Err(TokenError::NotInUse { id }.into());
        }
        self.check_requirements_for_write()?;
        let h = self.luks2_or_refuse()?;
        h.remove_token(id)?;
        self.write_header()
    }

    /// A token's JSON, compact (`token export`).
    pub fn token_export(&self, id: u32) -> Result<String> {
        match &self.header {
            Header::Luks2(h) => h
                .tokens()?
                .into_iter()
                .find(|t| t.id == id)
                .map(|t| serde_json::to_string(&t.json).unwrap_or_default())
                .ok_or_else(|| VolumeError::from(TokenError::Export { id })),
            Header::Luks1(_) => Err(VolumeError::NotLuks2 {
                path: self.dev.path().to_string(),
            }),
        }
    }

    /// `repair`: rewrite damaged LUKS2 copies from the valid one, or fix what cryptsetup
    /// fixes in a LUKS1 header (load it with [`Volume::load_as_is`]). The report says what
    /// was found and repaired, in order, even when the repair fails.
    pub fn repair(&mut self) -> RepairReport {
        let mut notes = Vec::new();
        let result = self.repair_inner(&mut notes);
        RepairReport { notes, result }
    }

    fn repair_inner(&mut self, notes: &mut Vec<RepairNote>) -> Result<bool> {
        match &mut self.header {
            Header::Luks2(h) => {
                let mut wrote = false;
                if !self.copies.primary_ok {
                    luks2::write_copy(&self.dev, h, false)?;
                    notes.push(RepairNote::PrimaryRestored);
                    wrote = true;
                }
                if !self.copies.secondary_ok {
                    luks2::write_copy(&self.dev, h, true)?;
                    notes.push(RepairNote::SecondaryRestored);
                    wrote = true;
                }
                self.copies.primary_ok = true;
                self.copies.secondary_ok = true;
                use lukskit_format::io::Storage;
                self.dev
                    .sync()
                    .map_err(|e| VolumeError::device_io(DeviceOp::Sync, e))?;
                Ok(wrote)
            }
            Header::Luks1(h) => {
                let check = |name: &str,
                             mode: &str,
                             key_bytes: u32|
                 -> lukskit_format::Result<()> {
                    let spec = lukskit_crypto::spec::CipherSpec::from_luks1(name, mode)?;
                    lukskit_crypto::engine::SectorCipher::check(&spec, key_bytes as usize, 512)?;
                    Ok(())
                };
                let report = h.repair(&check);
                notes.extend(report.messages.into_iter().map(RepairNote::Luks1));
                let wrote = report.result?;
                if wrote {
                    luks1_keys::write_header(&self.dev, h)?;
                }
                Ok(wrote)
            }
        }
    }

    /// After loading for an update: if exactly one LUKS2 copy is damaged, restore it from the
    /// good one first (as cryptsetup does under its write lock), so that the update starts
    /// from two valid copies.
    pub(crate) fn recover_copies(&mut self) -> Result<()> {
        if let Header::Luks2(h) = &self.header {
            if self.copies.primary_ok != self.copies.secondary_ok {
                luks2::write_copy(&self.dev, h, !self.copies.secondary_ok)?;
                self.copies.primary_ok = true;
                self.copies.secondary_ok = true;
            }
            luks2::check_sequence_id(&self.dev, h)?;
        }
        Ok(())
    }
}
