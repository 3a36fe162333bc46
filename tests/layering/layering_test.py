#!/usr/bin/env python3
"""Fails if a source file includes a header of a layer above its own.

Layers point down only: trainer -> client -> common -> proto and
server -> common -> proto. In particular no file under client/ or trainer/
may include a server/ header, so the client builds and ships without the
coordinator.

Inside server/ and common/, each folder holding source files (server/core,
common/plan/batches, ...) states in its README.md the other folders of its
layer it may include, on one line: "May include: `server/state`,
`server/runtime`." (or "May include: no other folder of server/."). A file
in a folder may include its own folder and those; the files at the top of
server/ (shardd_main, its flags) and of common/ may include any folder of
their layer. A folder without such a README fails the test. Installed
headers (`shard/version.h`) are public API, which any folder may include.

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
# Layers whose folders each state what they may include.
FOLDER_LAYERS = ("common", "server")
# "May include: ..." in a folder's README.md, possibly wrapped.
MAY_INCLUDE = re.compile(r"^May include:(.*?)(?:\n\n|\Z)",
                         re.MULTILINE | re.DOTALL)


def layer_of(include: str):
    """The project layer an include path belongs to, or None (third party)."""
    for prefix, layer in sorted(INSTALLED_PREFIXES.items(),
                                key=lambda item: -len(item[0])):
        if include.startswith(prefix):
            return layer
    folder = include.split("/", 1)[0]
    return folder if "/" in include and folder in PROJECT_FOLDERS else None


def sources_under(root: pathlib.Path):
    """The source files under `root`, sorted."""
    return [path for path in sorted(root.rglob("*"))
            if path.suffix in SOURCE_SUFFIXES and path.is_file()]


def includes_in(path: pathlib.Path):
    """(line number, included path) of each #include "..." of `path`."""
    text = path.read_text(encoding="utf-8", errors="replace")
    for match in INCLUDE.finditer(text):
        yield text.count("\n", 0, match.start()) + 1, match.group(1)


def violations(source_dir: pathlib.Path):
    for layer, allowed in sorted(ALLOWED.items()):
        for path in sources_under(source_dir / layer):
            for line, include in includes_in(path):
                folder = layer_of(include)
                if folder is not None and folder not in allowed:
                    yield (f"{path.relative_to(source_dir)}:{line}: {layer}/ "
                           f"must not include {folder}/ "
                           f"(allowed: {', '.join(sorted(allowed))})")


def folder_of(path: pathlib.Path, layer_root: pathlib.Path):
    """The folder of a source file under `layer_root`, as a path below it
    ("core", "plan/batches"), or None for a file at the top of the layer."""
    parts = path.relative_to(layer_root).parts
    return "/".join(parts[:-1]) if len(parts) > 1 else None


def folder_rules(source_dir: pathlib.Path, layer: str):
    """{folder: folders it may include} for each folder of `layer` holding
    source files, read from its README.md; the errors for folders whose
    README does not say."""
    rules, errors = {}, []
    root = source_dir / layer
    folders = {folder_of(path, root) for path in sources_under(root)}
    nothing_else = f"no other folder of {layer}/."
    for folder in sorted(f for f in folders if f is not None):
        readme = root / folder / "README.md"
        text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        match = MAY_INCLUDE.search(text)
        if match is None:
            errors.append(f"{readme.relative_to(source_dir)}: missing, or "
                          "without a 'May include:' line")
            continue
        said = " ".join(match.group(1).split())
        named = re.findall(rf"`{layer}/([a-z0-9_/]+)`", said)
        if not named and said != nothing_else:
            errors.append(f"{readme.relative_to(source_dir)}: 'May include:' "
                          f"names no `{layer}/FOLDER` and is not "
                          f"'{nothing_else}'")
            continue
        unknown = [n for n in named if n not in folders]
        if unknown:
            errors.append(f"{readme.relative_to(source_dir)}: no folder of "
                          f"sources {layer}/{', {layer}/'.join(unknown)}")
        rules[folder] = set(named)
    return rules, errors


def folder_violations(source_dir: pathlib.Path, layer: str, rules):
    """Includes of a folder of `layer` its including folder may not
    include."""
    root = source_dir / layer
    for path in sources_under(root):
        own = folder_of(path, root)
        if own is None:
            continue  # the top of the layer wires its folders
        allowed = rules.get(own, set()) | {own}
        for line, include in includes_in(path):
            if not include.startswith(layer + "/"):
                continue
            target = folder_of(source_dir / include, root)
            if target not in allowed:
                named = ", ".join(f"{layer}/{name}" for name in
                                  sorted(rules.get(own, ()))) or "none"
                yield (f"{path.relative_to(source_dir)}:{line}: {layer}/{own}/ "
                       f"must not include {include} (its README "
                       f"allows: {named})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    args = parser.parse_args()
    checked = sum(len(sources_under(args.source_dir / layer))
                  for layer in ALLOWED)
    if checked == 0:
        print(f"no sources found under {args.source_dir}", file=sys.stderr)
        return 1
    found = list(violations(args.source_dir))
    folders = 0
    for layer in FOLDER_LAYERS:
        rules, errors = folder_rules(args.source_dir, layer)
        found += errors
        found += list(folder_violations(args.source_dir, layer, rules))
        folders += len(rules)
    for line in found:
        print(line, file=sys.stderr)
    print(f"layering: {checked} files checked, {folders} folders' rules, "
          f"{len(found)} violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
