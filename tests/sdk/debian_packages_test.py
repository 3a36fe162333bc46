#!/usr/bin/env python3
"""`cpack -G DEB` makes the three Debian packages with the right contents.

Runs cpack on the build's CPackConfig.cmake into a temporary directory and
lists each package with `dpkg-deb`: the daemon package holds shardd,
shardctl, the systemd unit, /etc/default/shardd (a conffile) and the etcd
mode's systemd drop-in as an example; the
development package the headers, static libraries, CMake and pkg-config
files; the trainer package shard-train and shard-records. No file is in two packages.

Usage: debian_packages_test.py --build-dir B --version V [--with-torch]
Exit 77 (skipped) without dpkg-deb.
"""
import argparse
import pathlib
import shutil
import sys
import tempfile

from checks import check, exit_code, run


def package_files(deb):
    """Regular files in the package, as absolute paths."""
    files = set()
    for line in run(["dpkg-deb", "-c", deb]).splitlines():
        mode, path = line.split()[0], line.split()[-1]
        if not mode.startswith("d"):
            files.add(path[1:])  # "./usr/bin/x" -> "/usr/bin/x"
    return files


# Package -> (files it must hold, path prefixes all its files must have).
EXPECTED = {
    "shardd": ({"/usr/bin/shardd", "/usr/bin/shardctl",
                "/usr/lib/systemd/system/shardd.service",
                "/etc/default/shardd",
                "/usr/share/doc/shardd/examples/shardd.service.d/etcd.conf"},
               ("/usr/bin/shard", "/usr/lib/systemd/", "/etc/default/",
                "/usr/share/doc/shardd/examples/")),
    "libshard-client-dev": ({"/usr/include/shard/client/coordinator_client.h",
                             "/usr/include/shard/v1/shard.grpc.pb.h",
                             "/usr/include/shard/version.h",
                             "/usr/lib/libshard_client.a",
                             "/usr/lib/cmake/shard/shardConfig.cmake",
                             "/usr/lib/cmake/shard/shardConfigVersion.cmake",
                             "/usr/lib/pkgconfig/shard-client.pc",
                             "/usr/share/shard/proto/shard/v1/shard.proto"},
                            ("/usr/include/shard/", "/usr/lib/libshard_",
                             "/usr/lib/cmake/shard/", "/usr/lib/pkgconfig/",
                             "/usr/share/shard/")),
    "shard-train": ({"/usr/bin/shard-train", "/usr/bin/shard-records"},
                    ("/usr/bin/shard-train", "/usr/bin/shard-records")),
}
TORCH_DEV_FILES = {"/usr/include/shard/client/torch/shard_sampler.h",
                   "/usr/lib/libshard_torch_sampler.a",
                   "/usr/lib/cmake/shard/shardTorchTargets.cmake"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True, type=pathlib.Path)
    parser.add_argument("--version", required=True)
    parser.add_argument("--with-torch", action="store_true")
    args = parser.parse_args()
    if not shutil.which("dpkg-deb"):
        print("skipped: dpkg-deb not installed")
        return 77
    expected = dict(EXPECTED)
    if args.with_torch:
        must, prefixes = expected["libshard-client-dev"]
        expected["libshard-client-dev"] = (must | TORCH_DEV_FILES, prefixes)
    else:
        expected["shard-train"] = ({"/usr/bin/shard-records"},
                                   ("/usr/bin/shard-records",))

    work = pathlib.Path(tempfile.mkdtemp(prefix="shard-deb-"))
    try:
        run(["cpack", "-G", "DEB", "--config",
             args.build_dir / "CPackConfig.cmake", "-B", work])
        debs = {run(["dpkg-deb", "-f", d, "Package"]).strip(): d
                for d in work.glob("*.deb")}
        check(sorted(debs) == sorted(expected),
              f"packages {sorted(debs)} (expected {sorted(expected)})")
        owner = {}
        for name, (must, prefixes) in sorted(expected.items()):
            if name not in debs:
                continue
            deb = debs[name]
            version = run(["dpkg-deb", "-f", deb, "Version"]).strip()
            check(version == args.version, f"{name}: version {version}")
            files = package_files(deb)
            missing = sorted(must - files)
            check(not missing, f"{name}: holds {len(must)} expected files"
                  + (f" (missing {missing})" if missing else ""))
            stray = sorted(f for f in files if not f.startswith(prefixes))
            check(not stray, f"{name}: {len(files)} files, none elsewhere"
                  + (f" (stray {stray})" if stray else ""))
            for f in files:
                if f in owner:
                    check(False, f"{f} is in both {owner[f]} and {name}")
                owner[f] = name
        if "shardd" in debs:
            conffiles = run(["dpkg-deb", "-I", debs["shardd"], "conffiles"])
            check(conffiles.split() == ["/etc/default/shardd"],
                  f"shardd: conffiles {conffiles.split()}")
            depends = run(["dpkg-deb", "-f", debs["shardd"], "Depends"])
            check("libgrpc++" in depends,
                  f"shardd: depends on gRPC's runtime ({depends.strip()})")
        if "libshard-client-dev" in debs:
            depends = run(["dpkg-deb", "-f", debs["libshard-client-dev"],
                           "Depends"])
            check("libgrpc++-dev" in depends,
                  f"libshard-client-dev: depends on {depends.strip()}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
