#!/usr/bin/python3
"""Every binary's --version prints one line, "<name> <version>", with the
project's version, and exits 0.

Usage: version_test.py --bin-dir DIR --version X.Y.Z NAME...
"""
import argparse
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("names", nargs="+")
    args = parser.parse_args()
    failed = 0
    for name in args.names:
        done = subprocess.run([f"{args.bin_dir}/{name}", "--version"],
                              capture_output=True, text=True, timeout=30)
        expected = f"{name} {args.version}\n"
        ok = done.returncode == 0 and done.stdout == expected
        print(("ok      " if ok else "FAILED  ") +
              f"{name} --version: {done.stdout!r} (exit {done.returncode})")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
