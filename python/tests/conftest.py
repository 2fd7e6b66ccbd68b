"""Helpers of the Python binding tests: the reference tools (cryptsetup 2.6.1, e2fsprogs)
must be there; a missing one fails the test unless LUKSKIT_ALLOW_SKIP=1 (as the Rust tests)."""

import os
import shutil
import subprocess

import pytest

# Test volumes use cheap PBKDF costs (cryptsetup's minimum PBKDF2 iterations).
FAST = ["--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000"]


def tool(name):
    for d in ("", "/usr/sbin/", "/sbin/"):
        path = shutil.which(name) if not d else (d + name if os.path.exists(d + name) else None)
        if path:
            return path
    if os.environ.get("LUKSKIT_ALLOW_SKIP") == "1":
        pytest.skip(f"{name} is not installed")
    pytest.fail(f"{name} is not installed (LUKSKIT_ALLOW_SKIP=1 to skip)")


def run(*args, stdin=None):
    """Run a tool, failing the test on a non-zero exit; its stdout."""
    cmd = [tool(args[0]), *args[1:]]
    p = subprocess.run(cmd, input=stdin, capture_output=True)
    assert p.returncode == 0, f"{cmd}: {p.stderr.decode(errors='replace')}"
    return p.stdout


def status(*args, stdin=None):
    cmd = [tool(args[0]), *args[1:]]
    return subprocess.run(cmd, input=stdin, capture_output=True).returncode


@pytest.fixture
def image(tmp_path):
    """A factory of sparse image files."""
    def make(name, size):
        p = tmp_path / name
        with open(p, "wb") as f:
            f.truncate(size)
        return str(p)
    return make
