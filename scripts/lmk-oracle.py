#!/usr/bin/env python3
# Usage: lmk-oracle.py KEY_BYTES KEYS (64 or 65): the SHA-256 that
# lukskit-crypto engine::lmk::tests::lmk_vectors_versions_2_and_3 expects.
#        lmk-oracle.py decrypt IMAGE KEYFILE KEYBITS OFFSET SKIP [HASH|- [CIPHER]]: the SHA-256 of a
# loop-AES image's plaintext (tests/loopaes.rs).
# Independent lmk reference: OpenSSL's MD5 (libcrypto MD5_Init/MD5_Update, state read from
# MD5_CTX without MD5_Final) and AES-CBC from python3-cryptography.
import ctypes, hashlib, struct, sys
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
lib = ctypes.CDLL("libcrypto.so.3")
class MD5_CTX(ctypes.Structure):
    _fields_ = [("A", ctypes.c_uint), ("B", ctypes.c_uint), ("C", ctypes.c_uint), ("D", ctypes.c_uint),
                ("Nl", ctypes.c_uint), ("Nh", ctypes.c_uint), ("data", ctypes.c_uint * 16), ("num", ctypes.c_uint)]
def md5_state(msg):
    assert len(msg) % 64 == 0
    c = MD5_CTX(); lib.MD5_Init(ctypes.byref(c)); lib.MD5_Update(ctypes.byref(c), msg, len(msg))
    return struct.pack("<4I", c.A, c.B, c.C, c.D)
def lmk_iv(seed, pt, sector):
    m = (seed or b"") + pt[16:512] + struct.pack("<IIII", sector & 0xffffffff, ((sector >> 32) & 0xffffff) | 0x80000000, 4024, 0)
    return md5_state(m)
def enc(keys, seed, pt, sector):
    k = keys[sector & 63]
    e = Cipher(algorithms.AES(k), modes.CBC(lmk_iv(seed, pt, sector))).encryptor()
    return e.update(pt) + e.finalize()
def pattern(n, s):
    x = s | 1; out = bytearray()
    for _ in range(n):
        x ^= (x << 13) & 0xffffffffffffffff; x ^= x >> 7; x ^= (x << 17) & 0xffffffffffffffff
        out.append((x >> 24) & 0xff)
    return bytes(out)
def decrypt_image(image, keyfile, keybits, offset, skip, hash_name=None, cipher="aes"):
    """SHA-256 of the plaintext of a loop-AES image, decrypted independently of lukskit."""
    lines = [l for l in open(keyfile, "rb").read().replace(b"\r", b"\n").split(b"\n") if l]
    n = keybits // 8
    h = hash_name or {16: "sha256", 24: "sha384", 32: "sha512"}[n]
    tweak = {1: 0, 64: 0x55, 65: 0xF4}[len(lines)]
    keys = []
    for l in lines:
        k = bytearray(hashlib.new(h, l).digest()[:n]); k[0] ^= tweak; keys.append(bytes(k))
    seed = keys[64][:16] + bytes(48) if len(keys) == 65 else None
    alg = {"aes": algorithms.AES, "camellia": algorithms.Camellia}[cipher]
    data = open(image, "rb").read()[offset * 512:]
    out = hashlib.sha256()
    for i in range(len(data) // 512):
        ct = data[i*512:(i+1)*512]; sector = skip + i
        if len(keys) == 1:
            d = Cipher(alg(keys[0]), modes.CBC(struct.pack("<QQ", sector, 0))).decryptor()
            out.update(d.update(ct) + d.finalize())
        else:
            d = Cipher(alg(keys[sector & 63]), modes.CBC(bytes(16))).decryptor()
            pt = bytearray(d.update(ct) + d.finalize())
            iv = lmk_iv(seed, bytes(pt), sector)
            for j in range(16):
                pt[j] ^= iv[j]
            out.update(bytes(pt))
    return out.hexdigest()
if sys.argv[1] == "decrypt":
    a = sys.argv[2:]
    print(decrypt_image(a[0], a[1], int(a[2]), int(a[3]), int(a[4]),
                        a[5] if len(a) > 5 and a[5] != "-" else None, a[6] if len(a) > 6 else "aes"))
    sys.exit(0)
keysz = int(sys.argv[1]); nkeys = int(sys.argv[2])
raw = pattern(keysz * nkeys, 7)
keys = [raw[i*keysz:(i+1)*keysz] for i in range(64)]
seed = (raw[64*keysz:64*keysz+16] + bytes(48)) if nkeys == 65 else None
ct = b""
for i, sector in enumerate([0, 1, 63, 64, 0x1_2345_6789, 0xff_ffff_ffff_ffff]):
    ct += enc(keys, seed, pattern(512, 100 + i), sector)
print(hashlib.sha256(ct).hexdigest())
