#!/usr/bin/env python3
"""Fails if a source file includes a header of a layer above its own.

Layers point down only: trainer -> client -> common -> proto and
server -> common -> proto. In particular no file under client/ or trainer/
may include a server/ header, so the client builds and ships without the
coordinator.

Usage: layering_test.py --source-dir DIR
"""
import argparse
import pathlib
import re
import sys

# Project folders each layer may include from (besides its own).
ALLOWED = {
    "proto": {"proto"},
    "common": {"proto", "common"},
    "server": {"proto", "common", "server"},
    "client": {"proto", "common", "client"},
    "trainer": {"proto", "common", "client", "trainer"},
}
PROJECT_FOLDERS = set(ALLOWED)
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/[^"]*"', re.MULTILINE)
SOURCE_SUFFIXES = {".h", ".cc", ".hpp", ".cpp"}


def violations(source_dir: pathlib.Path):
    for layer, allowed in sorted(ALLOWED.items()):
        root = source_dir / layer
        for path in sorted(root.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INCLUDE.finditer(text):
                folder = match.group(1)
                if folder in PROJECT_FOLDERS and folder not in allowed:
                    line = text.count("\n", 0, match.start()) + 1
                    yield (f"{path.relative_to(source_dir)}:{line}: {layer}/ "
                           f"must not include {folder}/ "
                           f"(allowed: {', '.join(sorted(allowed))})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    args = parser.parse_args()
    checked = sum(1 for layer in ALLOWED
                  for p in (args.source_dir / layer).rglob("*")
                  if p.suffix in SOURCE_SUFFIXES)
    if checked == 0:
        print(f"no sources found under {args.source_dir}", file=sys.stderr)
        return 1
    found = list(violations(args.source_dir))
    for line in found:
        print(line, file=sys.stderr)
    print(f"layering: {checked} files checked, {len(found)} violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
