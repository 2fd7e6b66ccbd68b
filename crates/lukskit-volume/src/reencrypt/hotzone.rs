//! Hot zone sizes of a LUKS2 re-encryption: cryptsetup's defaults and its largest.

/// Default hot zone with resilience `none` (`LUKS2_DEFAULT_NONE_REENCRYPTION_LENGTH`).
pub const DEFAULT_NONE_HOTZONE: u64 = 20 << 20;
/// Largest hot zone of resilience `checksum` without `--hotzone-size` (cryptsetup takes as
/// much as the checksums in the keyslot area cover, up to 1 GiB, held in memory at once): the
/// next hot zone is read and hashed while this one is written, so smaller hot zones overlap
/// more of the work; each costs two metadata commits. The hot zone is recorded in the metadata,
/// so either tool resumes the other's run whatever its size.
pub const DEFAULT_CHECKSUM_HOTZONE: u64 = 64 << 20;
/// Largest hot zone (`LUKS2_REENCRYPT_MAX_HOTZONE_LENGTH`).
pub const MAX_HOTZONE: u64 = 1 << 30;
