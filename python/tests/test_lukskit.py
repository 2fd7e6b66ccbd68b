"""The Python bindings against cryptsetup 2.6.1: images cryptsetup made read as the data put
into them; images the bindings made open with cryptsetup and decrypt to what was written."""

import io
import json
import subprocess
import sys

import pytest

import lukskit
from conftest import FAST, run, status, tool

MiB = 1 << 20


def ext4_encrypted_by_cryptsetup(image, tmp_path, luks1=False):
    """An ext4 file system (16 MiB) encrypted in place by cryptsetup (LUKS2, optionally
    converted to LUKS1 by cryptsetup); returns (image, key file, the plaintext before)."""
    img = image("fs.img", 32 * MiB)
    kf = tmp_path / "key"
    kf.write_bytes(b"key file\nwith\x00binary")
    run("mkfs.ext4", "-q", "-F", "-L", "pytest-fs", img, "16M")
    with open(img, "rb") as f:
        plain = f.read(16 * MiB)
    run("cryptsetup", "reencrypt", "-q", "--encrypt", "--type", "luks2",
        "--force-offline-reencrypt", "--reduce-device-size", "16M", "--sector-size", "512",
        *FAST, "-d", str(kf), img)
    if luks1:
        run("cryptsetup", "convert", "-q", "--type", "luks1", img)
    return img, str(kf), plain


@pytest.mark.parametrize("luks1", [False, True], ids=["luks2", "luks1"])
def test_cryptsetup_image_reads_as_the_data_cryptsetup_encrypted(image, tmp_path, luks1):
    img, kf, plain = ext4_encrypted_by_cryptsetup(image, tmp_path, luks1)
    with open(img, "rb") as f:
        assert f.read(16 * MiB) != plain  # encrypted now
    with lukskit.open(img, key_file=kf) as vol:
        assert vol.type == ("LUKS1" if luks1 else "LUKS2")
        offset = int(lukskit.dump(img)["segments"]["0"]["offset"])
        assert vol.size == 32 * MiB - offset
        assert vol.read(0, 16 * MiB) == plain
        # The same through io.BufferedReader over the raw view, at an odd position.
        reader = io.BufferedReader(vol.raw(), buffer_size=3000)
        reader.seek(1024 + 7)
        assert reader.read(5000) == plain[1031:6031]
        reader.seek(16 * MiB - 100)
        assert reader.read(100) == plain[-100:]
        reader.seek(-100, io.SEEK_END)
        assert reader.read() == vol.read(vol.size - 100, 100)
        # cryptsetup's volume key (from the key file) is the one lukskit found.
        out = run("cryptsetup", "luksDump", "-q", "--dump-volume-key", "--key-file", kf, img)
        hexkey = "".join(out.decode().split("MK dump:")[-1].split())
        assert vol.volume_key().hex() in hexkey
        with pytest.raises(lukskit.OutOfRange):
            vol.read(vol.size - 10, 11)


def test_dump_is_cryptsetup_json_metadata(image, tmp_path):
    img, kf, _ = ext4_encrypted_by_cryptsetup(image, tmp_path)
    run("cryptsetup", "token", "import", "--json-file", "-", img,
        stdin=b'{"type":"some-token","keyslots":["0"],"x":1}')
    expected = json.loads(run("cryptsetup", "luksDump", "--dump-json-metadata", img))
    assert lukskit.dump(img) == expected
    with lukskit.open(img, key_file=kf) as vol:
        meta = vol.dump()
    assert meta == expected
    assert set(meta) >= {"keyslots", "segments", "digests", "tokens", "config"}
    assert meta["tokens"]["0"]["type"] == "some-token"
    # python -m lukskit dump IMG prints the same document.
    p = subprocess.run([sys.executable, "-m", "lukskit", "dump", img], capture_output=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == expected


def test_luks1_dump_shape(image):
    img = image("l1.img", 8 * MiB)
    run("cryptsetup", "luksFormat", "-q", "--type", "luks1", "--pbkdf-force-iterations", "1000",
        "--key-file", "-", img, stdin=b"pw")
    meta = lukskit.dump(img)
    dump = run("cryptsetup", "luksDump", img).decode()
    assert list(meta["keyslots"]) == ["0"]
    seg = meta["segments"]["0"]
    assert seg["encryption"] == "aes-xts-plain64"
    assert "Payload offset:\t%d" % (int(seg["offset"]) // 512) in dump
    assert "Iterations:         \t%d" % meta["keyslots"]["0"]["kdf"]["iterations"] in dump
    assert meta["digests"]["0"]["keyslots"] == ["0"]


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_python_formatted_volume_opens_and_decrypts_with_cryptsetup(image, tmp_path, as_bytes):
    img = image("data.img", 4 * MiB)
    hdr = str(tmp_path / "hdr.img")
    pw = "pässwörd" if not as_bytes else b"\xffbinary\x00pass"
    lukskit.format(img, passphrase=pw, header=hdr, cipher="aes-xts-plain64", key_size=256,
                   sector_size=4096, pbkdf="pbkdf2", iterations=1000, label="py")
    pw_bytes = pw.encode() if isinstance(pw, str) else pw
    assert status("cryptsetup", "open", "--test-passphrase", "--header", hdr, "--key-file", "-",
                  img, stdin=pw_bytes) == 0
    assert status("cryptsetup", "open", "--test-passphrase", "--header", hdr, "--key-file", "-",
                  img, stdin=b"wrong") == 2
    dump = run("cryptsetup", "luksDump", hdr).decode()
    assert "Label:         \tpy" in dump and "aes-xts-plain64" in dump and "pbkdf2" in dump

    with lukskit.open(img, passphrase=pw, header=hdr, writable=True) as vol:
        assert vol.size == 4 * MiB
        expected = bytearray(vol.read(0, vol.size))
        for i, at in enumerate([0, 1, 4095, 300_000, 4 * MiB - 2000]):
            chunk = bytes((j * 31 + i) & 0xFF for j in range(2000))
            vol.write(at, chunk)
            expected[at:at + 2000] = chunk
        raw = vol.raw()
        raw.seek(1_000_000)
        raw.write(b"raw view")
        expected[1_000_000:1_000_008] = b"raw view"
    run("cryptsetup", "reencrypt", "-q", "--decrypt", "--force-offline-reencrypt",
        "--header", hdr, "--key-file", "-", img, stdin=pw_bytes)
    with open(img, "rb") as f:
        assert f.read() == bytes(expected)


def test_luks1_format_add_remove_key_with_cryptsetup(image):
    img = image("l1.img", 8 * MiB)
    lukskit.format(img, passphrase="one", version="luks1", cipher="aes-cbc-essiv:sha256",
                   key_size=256, pbkdf="pbkdf2", iterations=1000)
    assert "Version:       \t1" in run("cryptsetup", "luksDump", img).decode()
    with lukskit.open(img, passphrase="one", writable=True) as vol:
        assert vol.keyslot == 0
        assert vol.add_key(b"two", pbkdf="pbkdf2", iterations=1000) == 1
        vk = vol.volume_key()
        vol.write(12345, b"luks1 data")
    for pw, want in [(b"one", 0), (b"two", 0), (b"three", 2)]:
        assert status("cryptsetup", "open", "--test-passphrase", "--key-file", "-", img,
                      stdin=pw) == want, pw
    out = run("cryptsetup", "luksDump", "-q", "--dump-volume-key", "--key-file", "-", img,
              stdin=b"two").decode()
    assert vk.hex() in "".join(out.split("MK dump:")[-1].split())
    with lukskit.open(img, volume_key=vk, writable=True) as vol:
        vol.remove_key(0)
        assert vol.keyslots == [1]
        assert vol.read(12345, 10) == b"luks1 data"
    assert status("cryptsetup", "open", "--test-passphrase", "--key-file", "-", img,
                  stdin=b"one") == 2
    assert status("cryptsetup", "open", "--test-passphrase", "--key-file", "-", img,
                  stdin=b"two") == 0


def test_typed_errors(image, tmp_path):
    img = image("v.img", 20 * MiB)
    lukskit.format(img, passphrase="right", pbkdf="pbkdf2", iterations=1000)
    with pytest.raises(lukskit.WrongPassphrase) as e:
        lukskit.open(img, passphrase="wrong")
    assert isinstance(e.value, lukskit.Error) and not type(e.value) is RuntimeError
    with pytest.raises(lukskit.WrongVolumeKey):
        lukskit.open(img, volume_key=b"\x00" * 64)
    with pytest.raises(lukskit.NotLuks):
        lukskit.open(image("zero.img", MiB), passphrase="x")
    with pytest.raises(lukskit.NotFound):
        lukskit.open(str(tmp_path / "missing.img"), passphrase="x")
    with pytest.raises(lukskit.KeyFileError):
        lukskit.open(img, key_file=str(tmp_path / "no-key-file"))
    with pytest.raises(lukskit.InvalidOption):
        lukskit.format(image("w.img", 20 * MiB), passphrase="x", cipher="")
    with pytest.raises(TypeError):
        lukskit.open(img, passphrase="right", volume_key=b"x")
    vol = lukskit.open(img, passphrase="right")
    with pytest.raises(lukskit.ReadOnly):
        vol.write(0, b"x")
    vol.close()
    with pytest.raises(lukskit.Closed):
        vol.read(0, 1)
    vol.close()  # idempotent
    assert status("cryptsetup", "open", "--test-passphrase", "--key-file", "-", img,
                  stdin=b"right") == 0
    tool("cryptsetup")
