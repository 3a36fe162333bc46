#!/usr/bin/python3
"""The Python package as a user installs it, without PyPI (docs/user-guide.md "Python
client"): a wheel built from a copy of client/python with pip
(--no-build-isolation: Debian's setuptools, protoc and grpc_python_plugin
generate the stubs), named by the distribution name `shard-coordinator-
client` (the name `shard` is taken in the package index by an unrelated
project), installed into a fresh directory, then imported from there:
`shard`, its generated stubs and `shard.torch`, and the installed
distribution's metadata, including the torchrun rendezvous handler's entry
point (`torchrun --rdzv-backend shard`).
Exit status 0 when every check passes.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from harness import check, exit_code, parse_args

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
DISTRIBUTION = "shard-coordinator-client"


def pip(*args):
    return subprocess.run([sys.executable, "-m", "pip", *args,
                           "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "--no-index"],
                          capture_output=True, text=True, timeout=600)


def main():
    parse_args(__doc__.splitlines()[0], bin_dir_required=False)
    with tempfile.TemporaryDirectory() as work:
        # A copy: pip's in-tree build writes build/ and *.egg-info.
        source = os.path.join(work, "python")
        shutil.copytree(os.path.join(ROOT, "client", "python"), source,
                        ignore=shutil.ignore_patterns("__pycache__"))
        os.environ["SHARD_PROTO_DIR"] = os.path.join(ROOT, "proto")
        wheels = os.path.join(work, "wheels")
        built = pip("wheel", "-w", wheels, source)
        names = os.listdir(wheels) if os.path.isdir(wheels) else []
        check(built.returncode == 0 and len(names) == 1 and
              names[0].startswith("shard_coordinator_client-"),
              f"pip wheel builds {names} (exit {built.returncode})")
        if built.returncode != 0:
            print(built.stdout[-2000:], built.stderr[-2000:])
            return exit_code()
        site = os.path.join(work, "site")
        installed = pip("install", "--root-user-action=ignore",
                        "--target", site, os.path.join(wheels, names[0]))
        check(installed.returncode == 0,
              f"pip install --target installs it (exit "
              f"{installed.returncode}) {installed.stderr[-500:]}")
        probe = subprocess.run(
            [sys.executable, "-c",
             "import importlib.metadata as m, shard, shard.torch\n"
             "from shard.v1 import shard_pb2, shard_pb2_grpc\n"
             "found = m.entry_points()\n"
             "found = (found.select(group='torchrun.handlers')\n"
             "         if hasattr(found, 'select')\n"
             "         else found.get('torchrun.handlers', []))\n"
             "handler = [e.load()() for e in found if e.name == 'shard']\n"
             f"print(m.version('{DISTRIBUTION}'), shard.__file__,\n"
             "      shard_pb2_grpc.CoordinatorStub.__name__,\n"
             "      [h.__name__ for h in handler])"],
            capture_output=True, text=True, timeout=120,
            env=dict(os.environ, PYTHONPATH=site), cwd=work)
        words = probe.stdout.split()
        check(probe.returncode == 0 and len(words) == 4 and
              words[0] == "0.1.0" and words[1].startswith(site) and
              words[2] == "CoordinatorStub" and
              words[3] == "['create_handler']",
              f"the installed package imports from the install directory "
              f"with its stubs, metadata and torchrun entry point "
              f"({probe.stdout.strip()} "
              f"{probe.stderr[-500:]})")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
