#!/usr/bin/python3
"""Every fenced block in README.md and docs/*.md says what it is, and is
checked accordingly.

Each block is preceded by a marker comment:

  <!-- snippet: run -->            a command to run: this test runs it (bash
                                   from the repository root, with
                                   127.0.0.1:7070 replaced by a shardd the
                                   test started, /tmp/ckpt by a fresh
                                   directory, build/bin and build/python by
                                   this build's) and needs exit 0;
  <!-- snippet: tested-by NAME --> run by ctest test NAME (or .ci/run, which
                                   must contain it verbatim);
  <!-- snippet: usage PROGRAM [COMMAND...] --> a synopsis: every --option
                                   in it must be in the --help of PROGRAM or
                                   of one of the COMMANDs;
  <!-- snippet: output -->         what a command prints;
  <!-- snippet: illustrative -->   code to adapt (names, hosts and files of
                                   the reader's own), or a diagram.

Also, in every block, each line that runs shardd, shardctl, shard-train or
shard-records may only use options that binary's --help lists (for
shardctl and shard-records: also those of the command on that line).
Exit status 0 when every check passes.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}
MARKER = re.compile(r"<!-- snippet: (\S+)(?: (.*?))? -->")
BINARIES = ("shardd", "shardctl", "shard-train", "shard-records")


def check(condition, what, detail=""):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok      " if condition else "FAILED  ") + what +
          ("" if condition or not detail else f"\n        {detail}"),
          flush=True)


def blocks(path):
    """(line number, marker kind, marker argument, text) of each fenced
    block; kind None when no marker precedes it."""
    lines = open(path).read().splitlines()
    found, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start = i
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = MARKER.fullmatch(lines[j].strip()) if j >= 0 else None
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        found.append((start + 1, marker.group(1) if marker else None,
                      (marker.group(2) or "") if marker else "",
                      "\n".join(body)))
    return found


class Help:
    """--help texts of the binaries (and shardctl's commands), cached."""

    def __init__(self, bin_dir):
        self._bin_dir = bin_dir
        self._cache = {}

    def options(self, program, command=None):
        key = (program, command)
        if key not in self._cache:
            argv = [os.path.join(self._bin_dir, program)]
            if command:
                argv.append(command)
            done = subprocess.run(argv + ["--help"], capture_output=True,
                                  text=True, timeout=60)
            self._cache[key] = set(re.findall(r"--[a-z][a-z0-9-]*",
                                              done.stdout))
        return self._cache[key]


def commands_in(text):
    """(program, shardctl command or None, options) per command line that
    runs one of the binaries, with continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    found = []
    for line in joined.splitlines():
        line = line.split("#", 1)[0]
        words = line.replace("$(", " ").split()
        for k, word in enumerate(words):
            program = os.path.basename(word)
            if program not in BINARIES:
                continue
            rest = words[k + 1:]
            plain = [w for w in rest if re.fullmatch(r"[a-z][a-z-]*", w)]
            command = next((w for w in plain
                            if w in SUBCOMMANDS.get(program, ())), None)
            options = [re.match(r"--[a-z][a-z0-9-]*", w).group(0)
                       for w in rest if re.match(r"--[a-z]", w)]
            found.append((program, command, options))
            break
    return found


SUBCOMMANDS = {
    "shardctl": {"create-job", "plan", "consume", "status", "describe",
                 "delete-job", "drain", "health", "help", "version"},
    "shard-records": {"fashion-mnist", "synthetic", "inspect"},
}


def check_options(path, line, text, helps):
    for program, command, options in commands_in(text):
        known = set(helps.options(program))
        if command and command not in ("help", "version"):
            known |= helps.options(program, command)
        unknown = sorted(set(options) - known - {"--help", "--version"})
        check(not unknown, f"{path}:{line}: {program}"
              f"{' ' + command if command else ''} knows "
              f"{' '.join(sorted(set(options))) or 'no options'}",
              f"not in --help: {unknown}")


def run_snippet(path, line, text, address, bin_dir, python_dir):
    work = tempfile.mkdtemp(prefix="shard-snippet-")
    script = text
    for documented, actual in (("127.0.0.1:7070", address),
                               ("/tmp/ckpt", os.path.join(work, "ckpt")),
                               ("build/bin", bin_dir),
                               ("build/python", python_dir)):
        script = script.replace(documented, actual)
    # The system Python the docs address (Debian's, with torch), first.
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:{os.environ['PATH']}")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script],
                          cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    check(done.returncode == 0, f"{path}:{line}: runs (exit "
          f"{done.returncode})", (done.stdout + done.stderr)[-1500:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    args = parser.parse_args()
    helps = Help(args.bin_dir)
    tests = subprocess.run(["ctest", "--test-dir", args.build_dir, "-N"],
                           capture_output=True, text=True).stdout
    ctest_names = set(re.findall(r"Test +#\d+: (\S+)", tests))
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    docs = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", name)
        for name in os.listdir(os.path.join(ROOT, "docs"))
        if name.endswith(".md"))
    to_run = []
    for path in docs:
        shown = os.path.relpath(path, ROOT)
        for line, kind, argument, text in blocks(path):
            where = f"{shown}:{line}"
            if kind is None:
                check(False, f"{where}: the block has a snippet marker",
                      "add <!-- snippet: run|tested-by T|usage P|output|"
                      "illustrative --> before it")
                continue
            check_options(shown, line, text, helps)
            if kind == "run":
                to_run.append((shown, line, text))
            elif kind == "tested-by":
                if argument == ".ci/run":
                    check(all(command.strip() in ci
                              for command in text.splitlines()
                              if command.strip()),
                          f"{where}: .ci/run runs it verbatim")
                else:
                    check(argument in ctest_names,
                          f"{where}: ctest has {argument}")
            elif kind == "usage":
                program, *commands = argument.split()
                known = set(helps.options(program))
                for command in commands:
                    known |= helps.options(program, command)
                used = set(re.findall(r"--[a-z][a-z0-9-]*", text))
                check(used and used <= known | {"--help", "--version"},
                      f"{where}: every option of the {argument} synopsis "
                      f"is in its --help",
                      f"not in --help: {sorted(used - known)}")
            else:
                check(kind in ("output", "illustrative"),
                      f"{where}: known snippet kind {kind!r}")
    if to_run:
        with ShardDaemon(args.bin_dir) as daemon:
            for shown, line, text in to_run:
                run_snippet(shown, line, text, daemon.address,
                            os.path.abspath(args.bin_dir),
                            os.path.abspath(args.python_dir))
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
