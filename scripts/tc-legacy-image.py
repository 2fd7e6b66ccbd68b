#!/usr/bin/env python3
# Usage: tc-legacy-image.py OUT CHAIN HASH PASSPHRASE SIZE_BYTES
# Writes a TrueCrypt <= 4 style volume (header version 1, TRUE magic, no volume size: the data
# is the rest of the device from sector 1) whose header is encrypted in the legacy CBC modes
# cryptsetup 2.6.1 reads: CHAIN aes | cast5 | des3_ede (cbc-tcw) or blowfish_le |
# blowfish_le-aes (cbc-tcrypt, TrueCrypt's little-endian Blowfish). HASH sha1 | ripemd160
# (PBKDF2 with 2000 iterations, TrueCrypt's). The data area is left zero.
#
# An implementation independent of lukskit (python3-cryptography over OpenSSL, hashlib, zlib),
# the inverse of cryptsetup's TCRYPT_decrypt_hdr for these table entries: for each cipher of
# the chain, first to last, CBC encryption of the 448 header bytes with the IV at the header
# key's iv_offset, then the whitening (every byte XORed with header key byte 8 + i % 8).
# Used by crates/lukskit-cli/tests/refvm_kernel.rs: cryptsetup and lukskit must both find
# these headers in the reference VM (and map the cbc-tcw ones identically).
import hashlib, os, struct, sys, zlib
from cryptography.hazmat.primitives.ciphers import Cipher, modes
try:
    from cryptography.hazmat.decrepit.ciphers.algorithms import CAST5, Blowfish, TripleDES
except ImportError:  # python3-cryptography before 43
    from cryptography.hazmat.primitives.ciphers.algorithms import CAST5, Blowfish, TripleDES
from cryptography.hazmat.primitives.ciphers.algorithms import AES

# (name, key size, block size, key offset in the header key, IV offset)
CHAINS = {
    "aes": [("aes", 32, 16, 32, 0)],
    "cast5": [("cast5", 16, 8, 32, 0)],
    "des3_ede": [("des3_ede", 24, 8, 32, 0)],
    "blowfish_le": [("blowfish_le", 56, 8, 32, 0)],
    "blowfish_le-aes": [("blowfish_le", 56, 8, 32, 0), ("aes", 32, 16, 88, 0)],
}
ALG = {"aes": AES, "cast5": CAST5, "des3_ede": TripleDES, "blowfish_le": Blowfish}


def swab(b):
    return b"".join(b[i:i + 4][::-1] for i in range(0, len(b), 4))


def cbc_encrypt(name, key, iv, data):
    if name != "blowfish_le":
        e = Cipher(ALG[name](key), modes.CBC(iv)).encryptor()
        return e.update(data) + e.finalize()
    # TrueCrypt's Blowfish reads its 32-bit halves little-endian: OpenSSL's big-endian
    # Blowfish between two swaps of each half, chained by hand.
    e = Cipher(Blowfish(key), modes.ECB()).encryptor()
    out, prev = b"", iv
    for i in range(0, len(data), 8):
        x = bytes(a ^ b for a, b in zip(data[i:i + 8], prev))
        prev = swab(e.update(swab(x)))
        out += prev
    return out


def main():
    out, chain, hash_name, passphrase, size = sys.argv[1:6]
    salt = os.urandom(64)
    hk = hashlib.pbkdf2_hmac(hash_name, passphrase.encode(), salt, 2000, 192)
    keys = os.urandom(256)
    d = b"TRUE" + struct.pack(">HHI", 1, 0x0100, zlib.crc32(keys))
    d += bytes(16) + struct.pack(">QQQQII", 0, 0, 0, 0, 0, 0) + bytes(120)
    d += struct.pack(">I", 0) + keys
    assert len(d) == 448
    for name, ks, bs, ko, io in CHAINS[chain]:
        d = cbc_encrypt(name, hk[ko:ko + ks], hk[io:io + bs], d)
        d = bytes(b ^ hk[8 + i % 8] for i, b in enumerate(d))
    with open(out, "wb") as f:
        f.write(salt + d)
        f.truncate(int(size))


main()
