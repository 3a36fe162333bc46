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
# Public headers are included by their installed path, which names their
# layer differently (client/include/shard/client/retry.h is
# "shard/client/retry.h"): the longest matching prefix wins.
INSTALLED_PREFIXES = {
    "shard/client/": "client",
    "shard/version.h": "common",
    "shard/v1/": "proto",
    "shard/state/": "proto",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
SOURCE_SUFFIXES = {".h", ".cc", ".hpp", ".cpp"}


def layer_of(include: str):
    """The project layer an include path belongs to, or None (third party)."""
    for prefix, layer in sorted(INSTALLED_PREFIXES.items(),
                                key=lambda item: -len(item[0])):
        if include.startswith(prefix):
            return layer
    folder = include.split("/", 1)[0]
    return folder if "/" in include and folder in PROJECT_FOLDERS else None


def violations(source_dir: pathlib.Path):
    for layer, allowed in sorted(ALLOWED.items()):
        root = source_dir / layer
        for path in sorted(root.rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for match in INCLUDE.finditer(text):
                folder = layer_of(match.group(1))
                if folder is not None and folder not in allowed:
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
