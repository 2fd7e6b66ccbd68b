#!/usr/bin/env python3
# Usage: lmk-oracle.py KEY_BYTES KEYS (64 or 65): the SHA-256 that
# lukskit-crypto engine::lmk::tests::lmk_vectors_versions_2_and_3 expects.
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
keysz = int(sys.argv[1]); nkeys = int(sys.argv[2])
raw = pattern(keysz * nkeys, 7)
keys = [raw[i*keysz:(i+1)*keysz] for i in range(64)]
seed = (raw[64*keysz:64*keysz+16] + bytes(48)) if nkeys == 65 else None
ct = b""
for i, sector in enumerate([0, 1, 63, 64, 0x1_2345_6789, 0xff_ffff_ffff_ffff]):
    ct += enc(keys, seed, pattern(512, 100 + i), sector)
print(hashlib.sha256(ct).hexdigest())
