//! Open a LUKS image (made by cryptsetup or anyone) with a key file and print the ext2/3/4
//! superblock of the file system inside: `superblock IMAGE KEYFILE`.

use lukskit::{Secret, Volume};

/// What the example reads from an ext2/3/4 superblock.
#[derive(Debug, PartialEq, Eq)]
pub struct Superblock {
    /// `s_volume_name`.
    pub label: String,
    /// `s_uuid` in its usual text form.
    pub uuid: String,
    /// `s_blocks_count_lo`.
    pub blocks: u32,
    /// The block size in bytes (1024 << `s_log_block_size`).
    pub block_size: u32,
}

/// Unlock `image` with the key file `key_file` and read the superblock (1024 bytes at offset
/// 1024 of the plaintext).
pub fn read_superblock(
    image: &str,
    key_file: &str,
) -> Result<Superblock, Box<dyn std::error::Error>> {
    let vol = Volume::open(image)?.unlock(Secret::key_file(key_file)?)?;
    let mut sb = [0u8; 1024];
    vol.read_at(&mut sb, 1024)?;
    if sb[0x38..0x3a] != [0x53, 0xef] {
        return Err("no ext2/3/4 file system in the volume".into());
    }
    let le32 = |o: usize| u32::from_le_bytes([sb[o], sb[o + 1], sb[o + 2], sb[o + 3]]);
    let u: Vec<String> = sb[0x68..0x78].iter().map(|b| format!("{b:02x}")).collect();
    let name = &sb[0x78..0x88];
    Ok(Superblock {
        label: String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap_or(16)])
            .into(),
        uuid: format!(
            "{}-{}-{}-{}-{}",
            u[0..4].concat(),
            u[4..6].concat(),
            u[6..8].concat(),
            u[8..10].concat(),
            u[10..16].concat()
        ),
        blocks: le32(0x04),
        block_size: 1024u32 << le32(0x18).min(16),
    })
}

#[allow(dead_code)]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, image, key_file] = args.as_slice() else {
        return Err("usage: superblock IMAGE KEYFILE".into());
    };
    let sb = read_superblock(image, key_file)?;
    println!(
        "label {:?} uuid {} blocks {} of {} bytes",
        sb.label, sb.uuid, sb.blocks, sb.block_size
    );
    Ok(())
}
