//! The two CRCs of the formats' metadata, as cryptsetup's `crypt_crc32` and `crypt_crc32c`
//! compute them (reflected, table-driven; the caller chooses the seed and whether to invert):
//! CRC-32 (IEEE 802.3, polynomial 0xEDB88320) of TrueCrypt's headers and key-file pool, and
//! CRC-32C (Castagnoli, polynomial 0x82F63B78) of FileVault 2's metadata blocks.

/// The table of a reflected CRC-32 with polynomial `poly`.
const fn reflected_table(poly: u32) -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { poly ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32: [u32; 256] = reflected_table(0xEDB8_8320);
static CRC32C: [u32; 256] = reflected_table(0x82F6_3B78);

fn run(table: &[u32; 256], seed: u32, data: &[u8]) -> u32 {
    data.iter().fold(seed, |crc, &b| {
        table[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// `crypt_crc32(seed, data)`: the running CRC-32 without pre- or post-inversion.
pub(crate) fn update(seed: u32, data: &[u8]) -> u32 {
    run(&CRC32, seed, data)
}

/// The ordinary CRC-32 of `data` (`crypt_crc32(~0, data) ^ ~0`), as TrueCrypt's header
/// checksums use it.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    update(!0, data) ^ !0
}

/// CRC-32C without the final inversion, from `seed`, as cryptsetup's `crypt_crc32c`.
pub(crate) fn crc32c(seed: u32, data: &[u8]) -> u32 {
    run(&CRC32C, seed, data)
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_values() {
        // The check values of the ASCII digits 1..9.
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(!super::crc32c(0xffff_ffff, b"123456789"), 0xE306_9283);
    }
}
