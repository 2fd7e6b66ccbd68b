//! CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) as cryptsetup's `crypt_crc32`:
//! the caller chooses the seed and whether to invert the result.

const fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = table();

/// `crypt_crc32(seed, data)`: the running CRC without pre- or post-inversion.
pub(crate) fn update(seed: u32, data: &[u8]) -> u32 {
    data.iter().fold(seed, |crc, &b| {
        TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

/// The ordinary CRC-32 of `data` (`crypt_crc32(~0, data) ^ ~0`), as TrueCrypt's header
/// checksums use it.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    update(!0, data) ^ !0
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_value() {
        // The CRC-32 check value of the ASCII digits 1..9.
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
    }
}
