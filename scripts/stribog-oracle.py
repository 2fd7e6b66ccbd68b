#!/usr/bin/env python3
# Usage: stribog-oracle.py: PBKDF2-HMAC-Streebog-512 outputs computed by libgcrypt
# (gcry_kdf_derive with GCRY_KDF_PBKDF2 and the hash gcry_md_map_name("STRIBOG512"): the
# code path of cryptsetup's gcrypt backend for VeraCrypt's `stribog512`), through ctypes.
# Prints the vectors lukskit-volume's tcrypt::kdf tests expect (hex), one per line:
#   digest:<hex of Streebog-512 of the standard's message M1>
#   pbkdf2:<password>:<salt hex>:<iterations>:<dklen>:<hex>
import ctypes, sys
g = ctypes.CDLL("libgcrypt.so.20")
g.gcry_check_version.restype = ctypes.c_char_p
assert g.gcry_check_version(None)
md = g.gcry_md_map_name(b"STRIBOG512")
assert md != 0, "libgcrypt has no STRIBOG512"
GCRY_KDF_PBKDF2 = 34

def digest(msg):
    out = ctypes.create_string_buffer(64)
    g.gcry_md_hash_buffer(md, out, msg, len(msg))
    return out.raw

def pbkdf2(pw, salt, it, n):
    out = ctypes.create_string_buffer(n)
    rc = g.gcry_kdf_derive(pw, len(pw), GCRY_KDF_PBKDF2, md, salt, len(salt),
                           ctypes.c_ulong(it), ctypes.c_size_t(n), out)
    assert rc == 0, rc
    return out.raw

print("digest:" + digest(b"012345678901234567890123456789012345678901234567890123456789012").hex())
for pw, salt, it, n in [(b"password", b"salt", 1, 64), (b"password", b"salt", 2, 64),
                        (b"password", b"salt", 4096, 64),
                        (b"aaaaaaaaaaaa", bytes(range(64)), 1000, 192)]:
    print("pbkdf2:%s:%s:%d:%d:%s" % (pw.decode(), salt.hex(), it, n, pbkdf2(pw, salt, it, n).hex()))
