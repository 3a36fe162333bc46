#!/usr/bin/env python3
"""Fails if a source file includes a header of a layer above its own.

Layers point down only: trainer -> client -> common -> proto and
server -> common -> proto. In particular no file under client/ or trainer/
may include a server/ header, so the client builds and ships without the
coordinator.

Inside server/, each folder (rpc/, services/, core/, ...) states in its
README.md the other server folders it may include, on one line:
"May include: `server/state`, `server/runtime`." (or "May include: no
other folder of server/."). A file in a folder may include its own folder
and those; the files at the top of server/ (shardd_main, its flags) may
include any. A folder without such a README fails the test.

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
# "May include: ..." in a server folder's README.md, possibly wrapped.
MAY_INCLUDE = re.compile(r"^May include:(.*?)(?:\n\n|\Z)",
                         re.MULTILINE | re.DOTALL)
NOTHING_ELSE = "no other folder of server/."


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


def server_folder_rules(source_dir: pathlib.Path):
    """{folder: folders it may include} for each folder of server/ holding
    sources, read from its README.md; the errors for folders whose README
    does not say."""
    rules, errors = {}, []
    server = source_dir / "server"
    for folder in sorted(p for p in server.iterdir() if p.is_dir()):
        if not any(f.suffix in SOURCE_SUFFIXES for f in folder.rglob("*")):
            continue
        readme = folder / "README.md"
        text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        match = MAY_INCLUDE.search(text)
        if match is None:
            errors.append(f"{readme.relative_to(source_dir)}: missing, or "
                          "without a 'May include:' line")
            continue
        said = " ".join(match.group(1).split())
        named = re.findall(r"`server/([a-z_]+)`", said)
        if not named and said != NOTHING_ELSE:
            errors.append(f"{readme.relative_to(source_dir)}: 'May include:' "
                          f"names no `server/FOLDER` and is not "
                          f"'{NOTHING_ELSE}'")
            continue
        unknown = [n for n in named if not (server / n).is_dir()]
        if unknown:
            errors.append(f"{readme.relative_to(source_dir)}: no folder "
                          f"server/{', server/'.join(unknown)}")
        rules[folder.name] = set(named)
    return rules, errors


def server_violations(source_dir: pathlib.Path, rules):
    """Includes of a server/ folder its including folder may not include."""
    server = source_dir / "server"
    for path in sources_under(server):
        parts = path.relative_to(server).parts
        if len(parts) == 1:
            continue  # shardd_main and its flags wire everything
        own = parts[0]
        allowed = rules.get(own, set()) | {own}
        for line, include in includes_in(path):
            steps = include.split("/")
            if steps[0] != "server":
                continue
            target = steps[1] if len(steps) > 2 else "the top of server/"
            if target not in allowed:
                named = ", ".join(sorted(rules.get(own, ()))) or "none"
                yield (f"{path.relative_to(source_dir)}:{line}: server/{own}/ "
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
    rules, found = server_folder_rules(args.source_dir)
    found += list(violations(args.source_dir))
    found += list(server_violations(args.source_dir, rules))
    for line in found:
        print(line, file=sys.stderr)
    print(f"layering: {checked} files checked, {len(rules)} server folders' "
          f"rules, {len(found)} violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
