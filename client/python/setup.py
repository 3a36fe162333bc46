"""Generates the gRPC stubs from proto/ before building the package.

Needs protoc and grpc_python_plugin (Debian: protobuf-compiler,
protobuf-compiler-grpc). The proto directory is ../../proto from here, or
$SHARD_PROTO_DIR.
"""
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithStubs(build_py):
    def run(self):
        proto_dir = os.environ.get(
            "SHARD_PROTO_DIR", os.path.join(HERE, "..", "..", "proto"))
        plugin = shutil.which("grpc_python_plugin")
        if plugin is None:
            raise RuntimeError("grpc_python_plugin not found (Debian: "
                               "apt install protobuf-compiler-grpc)")
        out = self.build_lib
        os.makedirs(os.path.join(out, "shard", "v1"), exist_ok=True)
        subprocess.run(
            ["protoc", f"-I{proto_dir}", f"--python_out={out}",
             f"--grpc_python_out={out}",
             f"--plugin=protoc-gen-grpc_python={plugin}",
             os.path.join(proto_dir, "shard", "v1", "shard.proto")],
            check=True)
        super().run()


setup(cmdclass={"build_py": BuildWithStubs})
