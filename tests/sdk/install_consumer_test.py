#!/usr/bin/env python3
"""The installed SDK works on its own.

`cmake --install` of the build into a temporary prefix, then, against that
prefix alone (never the source or build tree):
  * the expected files are there, and no daemon-only or internal file is;
  * every installed header includes only installed (or third-party)
    headers and compiles on its own;
  * client/examples/cpp_consumer (find_package(shard), shard::client,
    shard::torch_sampler) configures, builds and, run as the 2 ranks of a
    job on the installed shardd, streams exactly `shardctl plan` for two
    epochs;
  * a program built with `pkg-config shard-client` links and runs.

Usage: install_consumer_test.py --build-dir B --source-dir S --version V
       [--with-torch]
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent /
                       "conformance"))
from checks import check, exit_code, run  # noqa: E402
from shardd_process import ShardDaemon  # noqa: E402

THIRD_PARTY = ("absl/", "grpcpp/", "grpc/", "google/", "torch/", "c10/",
               "ATen/")


def check_layout(prefix, with_torch):
    expected = [
        "bin/shardd", "bin/shardctl", "bin/shard-records",
        "include/shard/client/coordinator_client.h",
        "include/shard/client/heartbeater.h",
        "include/shard/v1/shard.pb.h", "include/shard/v1/shard.grpc.pb.h",
        "include/shard/version.h",
        "lib/libshard_client.a", "lib/libshard_proto.a",
        "lib/cmake/shard/shardConfig.cmake",
        "lib/cmake/shard/shardConfigVersion.cmake",
        "lib/cmake/shard/shardTargets.cmake",
        "lib/pkgconfig/shard-client.pc",
        "share/shard/proto/shard/v1/shard.proto",
    ]
    if with_torch:
        expected += ["bin/shard-train",
                     "include/shard/client/torch/shard_sampler.h",
                     "include/shard/client/torch/coordinator_store.h",
                     "lib/libshard_torch_sampler.a",
                     "lib/cmake/shard/shardTorchTargets.cmake"]
    missing = [p for p in expected if not (prefix / p).exists()]
    check(not missing, f"installed: {len(expected)} expected files"
          + (f" (missing: {missing})" if missing else ""))
    files = [p.relative_to(prefix).as_posix()
             for p in prefix.rglob("*") if p.is_file()]
    unexpected = [p for p in files
                  if p.startswith(("etc/", "lib/systemd/", "include/server",
                                   "include/common", "include/client",
                                   "include/shard/state"))
                  or "libshard_service" in p or "libshard_grpc_server" in p]
    check(not unexpected, "no daemon-package or internal files"
          + (f" (found: {unexpected})" if unexpected else ""))


def installed_headers(prefix):
    root = prefix / "include"
    return sorted(p.relative_to(root).as_posix()
                  for p in root.rglob("*.h"))


def check_header_includes(prefix):
    include = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.MULTILINE)
    bad = []
    for header in installed_headers(prefix):
        text = (prefix / "include" / header).read_text()
        for name in include.findall(text):
            if "/" not in name or name.startswith(THIRD_PARTY):
                continue
            if not (name.startswith("shard/") and
                    (prefix / "include" / name).exists()):
                bad.append(f"{header} includes {name}")
    check(not bad, "installed headers include only installed headers"
          + (f": {bad}" if bad else ""))


def check_headers_compile_alone(prefix, work, with_torch):
    """One translation unit per installed header, built against the prefix."""
    project = work / "header-check"
    (project / "src").mkdir(parents=True)
    core, torch = [], []
    for i, header in enumerate(installed_headers(prefix)):
        source = project / "src" / f"h{i}.cc"
        source.write_text(f"#include <{header}>\n")
        (torch if header.startswith("shard/client/torch/") else core).append(
            source.name)
    lines = ["cmake_minimum_required(VERSION 3.25)",
             "project(header_check CXX)", "set(CMAKE_CXX_STANDARD 17)",
             "find_package(shard REQUIRED"
             + (" COMPONENTS torch)" if with_torch else ")"),
             f"add_library(core OBJECT {' '.join('src/' + s for s in core)})",
             "target_link_libraries(core PRIVATE shard::client)"]
    if with_torch and torch:
        lines += [f"add_library(torch_headers OBJECT "
                  f"{' '.join('src/' + s for s in torch)})",
                  "target_link_libraries(torch_headers PRIVATE "
                  "shard::torch_sampler shard::torch_store)"]
    (project / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    build_isolated(project, work / "header-check-build", prefix)
    check(True, f"{len(core) + len(torch)} installed headers compile alone")


def build_isolated(source, build, prefix):
    """Configures and builds a consumer project seeing only `prefix` (and the
    system), and checks that no compile command reaches into this repo."""
    run(["cmake", "-S", source, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build, "-j2"])


def check_no_repo_paths(build, repo_dirs):
    commands = (build / "compile_commands.json").read_text()
    leaked = [d for d in repo_dirs if str(d) in commands]
    check(not leaked, f"{build.name}: compile commands name only the prefix"
          + (f" (found {leaked})" if leaked else ""))


def check_consumer_example(prefix, work, source_dir, repo_dirs):
    example = work / "cpp_consumer"
    shutil.copytree(source_dir / "client/examples/cpp_consumer", example)
    build = work / "cpp_consumer-build"
    build_isolated(example, build, prefix)
    check_no_repo_paths(build, repo_dirs)
    binary = build / "stream_epochs"

    with ShardDaemon(prefix / "bin") as daemon:
        shardctl = [prefix / "bin/shardctl", "--coordinator", daemon.address]
        run(shardctl + ["create-job", "--job", "sdk", "--size", "203",
                        "--world-size", "2", "--seed", "11"])
        ranks = [subprocess.Popen([binary, daemon.address, "sdk", f"m{r}"],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for r in range(2)]
        streamed = {}
        for proc in ranks:
            out, err = proc.communicate(timeout=120)
            check(proc.returncode == 0,
                  f"stream_epochs exited {proc.returncode}" +
                  (f": {err.strip()}" if proc.returncode else ""))
            for line in out.splitlines():
                head, _, indices = line.partition(":")
                _, epoch, _, rank = head.split()
                streamed[(int(epoch), int(rank))] = [int(i) for i in
                                                     indices.split()]
        check(sorted(streamed) == [(e, r) for e in (0, 1) for r in (0, 1)],
              f"two epochs of both ranks streamed: {sorted(streamed)}")
        for (epoch, rank), got in sorted(streamed.items()):
            plan = [int(i) for i in run(shardctl + [
                "plan", "--job", "sdk", "--epoch", str(epoch), "--rank",
                str(rank)]).split()]
            check(got == plan and len(got) == 102,
                  f"epoch {epoch} rank {rank}: {len(got)} indices equal "
                  f"shardctl plan ({len(plan)})")


def check_pkg_config_consumer(prefix, work, version, repo_dirs):
    source = work / "pkg_config_consumer.cc"
    source.write_text(
        '#include <iostream>\n'
        '#include "shard/client/coordinator_client.h"\n'
        '#include "shard/version.h"\n'
        'int main() {\n'
        '  shard::client::ClientOptions options;\n'
        '  options.address = "127.0.0.1:1";\n'
        '  auto client = shard::client::CoordinatorClient::Connect(options);\n'
        '  std::cout << shard::Version() << " " << client.ok() << "\\n";\n'
        '}\n')
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib/pkgconfig"))
    flags = run(["pkg-config", "--cflags", "--libs", "shard-client"],
                env=env).split()
    leaked = [f for f in flags if any(str(d) in f for d in repo_dirs)]
    check(not leaked, f"pkg-config flags name only the prefix {leaked or ''}")
    binary = work / "pkg_config_consumer"
    run(["g++", "-std=c++17", "-o", binary, source, *flags])
    out = run([binary]).strip()
    check(out == f"{version} 1",
          f"pkg-config consumer runs and prints the version: {out!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True, type=pathlib.Path)
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    parser.add_argument("--version", required=True)
    parser.add_argument("--with-torch", action="store_true")
    args = parser.parse_args()
    repo_dirs = [args.source_dir.resolve(), args.build_dir.resolve()]

    work = pathlib.Path(tempfile.mkdtemp(prefix="shard-sdk-"))
    try:
        prefix = work / "prefix"
        run(["cmake", "--install", args.build_dir, "--prefix", prefix])
        check_layout(prefix, args.with_torch)
        check_header_includes(prefix)
        check_headers_compile_alone(prefix, work, args.with_torch)
        check_pkg_config_consumer(prefix, work, args.version, repo_dirs)
        if args.with_torch:
            check_consumer_example(prefix, work, args.source_dir, repo_dirs)
        else:
            print("skipped the libtorch consumer example (built without "
                  "libtorch)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
