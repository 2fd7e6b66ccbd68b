#!/usr/bin/env bash
# The Python bindings (python/): a virtual environment under target/ (Debian's python3 with
# python3-venv; maturin and pytest from PyPI into the venv, never into the system Python),
# `pip install ./python` as a user would (maturin builds the extension with cargo's `python`
# profile), then pytest on python/tests against cryptsetup. Exit status: pytest's.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${LUKSKIT_PYTHON:-/usr/bin/python3}
[ -x "$py" ] || py=$(command -v python3)
venv=${CARGO_TARGET_DIR:-target}/python-venv
case $venv in /*) ;; *) venv=$PWD/$venv ;; esac
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'maturin>=1.5,<2' 'pytest>=7'
start=$(date +%s)
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./python
echo "lukskit: pip install ./python took $(( $(date +%s) - start )) s"
# From another directory, so that python/lukskit (without the extension) cannot shadow the
# installed package.
cd python/tests
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider .
