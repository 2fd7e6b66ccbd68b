"""``python -m lukskit dump IMAGE``: print a LUKS volume's metadata as JSON."""

import argparse
import json
import sys

import lukskit


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lukskit")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="print the header's metadata (cryptsetup's JSON shape)")
    d.add_argument("device", help="image file, block device or NBD URI")
    d.add_argument("--header", help="detached header")
    args = parser.parse_args(argv)
    try:
        meta = lukskit.dump(args.device, header=args.header)
    except lukskit.Error as e:
        print(f"lukskit: {e}", file=sys.stderr)
        return 1
    json.dump(meta, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
