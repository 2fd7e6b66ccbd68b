"""lukskit: read and write LUKS1/LUKS2 encrypted volumes from Python, without the kernel.

Volumes are byte-compatible with cryptsetup 2.6.1. The plaintext is read and written at byte
offsets from the start of the data area::

    import lukskit
    with lukskit.open("disk.img", passphrase="secret") as vol:
        superblock = vol.read(1024, 1024)

Secrets (``passphrase``, ``volume_key``, a key file's contents) are copied into lukskit's
locked, zeroizing buffers as soon as the call begins. The ``str`` and ``bytes`` objects
Python made for them are Python's: lukskit cannot wipe them.

Errors are ``lukskit.Error`` subclasses (``WrongPassphrase``, ``NotLuks``, ``NotFound``,
``OutOfRange``, ...). Argument mistakes are ``TypeError``/``ValueError`` as usual.
"""

import builtins
import io
import json
import os

from . import _native
from ._native import (  # noqa: F401  (re-exported)
    Closed,
    Error,
    FeatureDisabled,
    InUse,
    InvalidOption,
    KeyFileError,
    NoTokenUnlocked,
    NotFound,
    NotLuks,
    NoUsableKeyslot,
    OutOfRange,
    ReadOnly,
    VolumeError,
    WrongPassphrase,
    WrongVolumeKey,
)

__all__ = [
    "open", "format", "dump", "Volume", "RawVolumeIO",
    "Error", "WrongPassphrase", "WrongVolumeKey", "NoUsableKeyslot", "NotLuks", "NotFound",
    "InUse", "ReadOnly", "OutOfRange", "KeyFileError", "InvalidOption", "FeatureDisabled",
    "NoTokenUnlocked", "Closed", "VolumeError",
]


def _path(p):
    return os.fspath(p) if not isinstance(p, str) else p


class Volume:
    """An unlocked LUKS volume (made by :func:`open`); a context manager that closes it."""

    def __init__(self, native):
        self._v = native

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self._v.closed():
            return "<lukskit.Volume closed>"
        return f"<lukskit.Volume {self._v.volume_type()} {self._v.uuid()} {self._v.size()} bytes>"

    @property
    def size(self):
        """Size of the plaintext (the data area) in bytes."""
        return self._v.size()

    @property
    def type(self):
        """``"LUKS1"`` or ``"LUKS2"``."""
        return self._v.volume_type()

    @property
    def uuid(self):
        """The volume's UUID."""
        return self._v.uuid()

    @property
    def keyslot(self):
        """The keyslot that opened the volume (None when opened with the volume key)."""
        return self._v.keyslot()

    @property
    def keyslots(self):
        """The active keyslots."""
        return self._v.keyslots()

    @property
    def writable(self):
        return self._v.writable()

    @property
    def closed(self):
        return self._v.closed()

    def read(self, offset, size):
        """``size`` plaintext bytes at ``offset`` (from the start of the data area)."""
        return self._v.read(offset, size)

    def write(self, offset, data):
        """Write ``data`` (bytes-like) as plaintext at ``offset``."""
        self._v.write(offset, bytes(data))

    def flush(self):
        """Make written data durable on the device."""
        self._v.flush()

    def dump(self):
        """The header's metadata as a dict shaped like cryptsetup's LUKS2 JSON metadata
        (``keyslots``, ``segments``, ``digests``, ``tokens``, ``config``); for LUKS1 an
        equivalent document built from the binary header."""
        return json.loads(self._v.dump_json())

    def volume_key(self):
        """The volume key (bytes). Handle with care."""
        return self._v.volume_key()

    def add_key(self, passphrase, *, slot=None, pbkdf=None, iterations=None,
                memory_kib=None, parallel=None, hash=None):
        """Add a keyslot for ``passphrase`` (str or bytes); returns its number. Needs a
        volume opened with ``writable=True``. ``pbkdf`` (``"pbkdf2"``, ``"argon2i"``,
        ``"argon2id"``) with ``iterations`` (PBKDF2 iterations, Argon2 passes) forces costs;
        by default cryptsetup's benchmarked default is used."""
        return self._v.add_key(passphrase, slot, pbkdf, iterations, memory_kib, parallel, hash)

    def remove_key(self, slot):
        """Destroy keyslot ``slot`` (its key material is wiped)."""
        self._v.remove_key(slot)

    def raw(self):
        """A file-like view of the plaintext (``io.RawIOBase``), e.g. for
        ``io.BufferedReader(vol.raw())``."""
        return RawVolumeIO(self)

    def close(self):
        """Flush (when writable), release the device and wipe the key. Idempotent."""
        self._v.close()


class RawVolumeIO(io.RawIOBase):
    """The plaintext of a :class:`Volume` as a seekable raw stream."""

    def __init__(self, volume):
        super().__init__()
        self._vol = volume
        self._pos = 0

    def readable(self):
        return True

    def writable(self):
        return self._vol.writable

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self._vol.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise ValueError("negative seek position")
        self._pos = pos
        return pos

    def readinto(self, b):
        view = memoryview(b).cast("B")
        n = max(0, min(len(view), self._vol.size - self._pos))
        if n:
            view[:n] = self._vol.read(self._pos, n)
            self._pos += n
        return n

    def write(self, b):
        data = bytes(b)
        self._vol.write(self._pos, data)
        self._pos += len(data)
        return len(data)

    def flush(self):
        if not self.closed and self._vol.writable and not self._vol.closed:
            self._vol.flush()
        super().flush()


def open(path, *, passphrase=None, key_file=None, volume_key=None, token=None,
         header=None, writable=False):
    """Open and unlock the LUKS volume on ``path``: an image file, a block device or an NBD
    URI. Give exactly one of ``passphrase`` (str or bytes), ``key_file`` (a path: the whole
    file is the key, as cryptsetup's ``--key-file``), ``volume_key`` (bytes) or ``token``
    (a token id, or -1 for any token lukskit can run). ``header`` names a detached header.
    Returns a :class:`Volume` (a context manager)."""
    native = _native.open(
        _path(path), passphrase, None if key_file is None else _path(key_file),
        volume_key, token, None if header is None else _path(header), writable)
    return Volume(native)


def dump(path, *, header=None):
    """The metadata of the volume on ``path`` (see :meth:`Volume.dump`); no secret needed."""
    return json.loads(_native.dump_json(_path(path), None if header is None else _path(header)))


def format(path, *, passphrase=None, key_file=None, version="luks2", cipher=None,
           key_size=None, sector_size=None, pbkdf=None, iterations=None, memory_kib=None,
           parallel=None, hash=None, label=None, uuid=None, header=None, size=None):
    """Format ``path`` as a new LUKS volume whose keyslot 0 opens with ``passphrase`` (or the
    contents of ``key_file``). ``size`` creates (or resizes) ``path`` as an image file of that
    many bytes first. ``cipher`` (default ``aes-xts-plain64``), ``key_size`` in bits,
    ``sector_size``, ``pbkdf``/``iterations``/``memory_kib``/``parallel`` (see
    :meth:`Volume.add_key`), ``hash``, ``label``, ``uuid``, ``header`` (detached header
    file) are cryptsetup's luksFormat options. Everything on ``path`` is lost."""
    path = _path(path)
    if size is not None:
        with builtins.open(path, "ab") as f:
            f.truncate(size)
    _native.format(
        path, passphrase, None if key_file is None else _path(key_file), version, cipher,
        key_size, sector_size, pbkdf, iterations, memory_kib, parallel, hash, label, uuid,
        None if header is None else _path(header))
