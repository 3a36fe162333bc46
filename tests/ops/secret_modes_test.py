#!/usr/bin/python3
"""One rule for secret files, and the prod overlay's Secret volumes work.

Renders deploy/overlays/prod with kubectl kustomize and reads the
defaultMode of its Secret volumes (0440: group-readable, as Kubernetes
mounts them for the pod's fsGroup). Builds a directory laid out like a
Secret volume (files behind ..data symlinks into a timestamped directory)
with those modes, holding a bearer token and a TLS certificate and key,
then checks that shardd serves with them, and shardctl, shard-train and
the Python sampler all connect with them. Then the same token with mode
0644 (readable by others): every one of them refuses it, naming the file
and the mode, and so does shardd for a token (--auth-token-file or
--admin-token-file, each error naming its own flag) or a private key
readable by others.
Exit status 0 when every check passes.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}
TOKEN = "prod-mode-token-5d1e"


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok      " if condition else "FAILED  ") + what, flush=True)


def prod_secret_modes():
    """defaultMode of every Secret volume the prod overlay renders."""
    rendered = subprocess.run(
        ["kubectl", "kustomize", os.path.join(SOURCE, "deploy", "overlays",
                                              "prod")],
        check=True, capture_output=True, text=True).stdout
    modes = set()
    for document in yaml.safe_load_all(rendered):
        spec = (document or {}).get("spec", {}).get("template", {}).get(
            "spec", {})
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                modes.add(volume["secret"].get("defaultMode", 0o644))
    return modes


def secret_volume(root, files, mode):
    """A directory laid out as Kubernetes mounts a Secret volume."""
    data = os.path.join(root, "..2026_11_25_00_00_00.000000000")
    os.makedirs(data)
    for name, source in files.items():
        shutil.copy(source, os.path.join(data, name))
        os.chmod(os.path.join(data, name), mode)
    os.symlink(os.path.basename(data), os.path.join(root, "..data"))
    for name in files:
        os.symlink(os.path.join("..data", name), os.path.join(root, name))
    return root


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    work = tempfile.mkdtemp(prefix="shard-secret-modes-")
    pki = os.path.join(work, "pki")
    subprocess.run([os.path.join(SOURCE, "tests", "support",
                                 "make_test_certs.sh"), pki], check=True)
    token_source = os.path.join(work, "token-source")
    with open(token_source, "w") as f:
        f.write(TOKEN + "\n")

    modes = prod_secret_modes()
    check(modes == {0o440}, f"prod overlay Secret volumes use mode 0440 "
                            f"({sorted(oct(m) for m in modes)})")
    mode = modes.pop() if len(modes) == 1 else 0o440
    volume = secret_volume(os.path.join(work, "prod"), {
        "token": token_source, "tls.crt": os.path.join(pki, "server.pem"),
        "tls.key": os.path.join(pki, "server.key"),
        "ca.crt": os.path.join(pki, "ca.pem")}, mode)
    token = os.path.join(volume, "token")
    ca = os.path.join(volume, "ca.crt")
    client_flags = ["--tls-ca", ca, "--auth-token-file", token]

    with ShardDaemon(args.bin_dir, "--tls-cert",
                     os.path.join(volume, "tls.crt"), "--tls-key",
                     os.path.join(volume, "tls.key"), "--auth-token-file",
                     token) as daemon:
        check(True, f"shardd serves with the Secret volume's files (mode "
                    f"{mode:04o} behind ..data symlinks)")
        created = subprocess.run(
            [f"{args.bin_dir}/shardctl", "--coordinator", daemon.address,
             *client_flags, "--retry-deadline", "5s", "create-job", "--job",
             "prod", "--size", "64", "--world-size", "1"],
            capture_output=True, text=True, timeout=60)
        check(created.returncode == 0,
              f"shardctl connects with them: {created.stderr.strip()!r}")
        trainer = f"{args.bin_dir}/shard-train"
        if os.path.exists(trainer):
            trained = subprocess.run(
                [trainer, "--coordinator", daemon.address, *client_flags,
                 "--job", "prod", "--member", "t", "--dataset-size", "64",
                 "--eval-size", "0", "--epochs", "1"],
                capture_output=True, text=True, timeout=300)
            check(trained.returncode == 0,
                  f"shard-train connects with them: "
                  f"{trained.stderr.strip()[-300:]!r}")
        import shard.torch
        sampler = shard.torch.DistributedShardSampler(
            range(64), coordinator=shard.Client(
                daemon.address, token_file=token, tls_ca=ca),
            job="py", member="p", num_replicas=1)
        check(len(list(sampler)) == 64,
              "the Python sampler connects with them")
        sampler.close()

        # Readable by others: refused everywhere, naming file and mode.
        open_volume = secret_volume(os.path.join(work, "open"),
                                    {"token": token_source}, 0o644)
        open_token = os.path.join(open_volume, "token")
        refused = subprocess.run(
            [f"{args.bin_dir}/shardctl", "--coordinator", daemon.address,
             "--tls-ca", ca, "--auth-token-file", open_token, "status"],
            capture_output=True, text=True, timeout=60)
        check(refused.returncode != 0 and open_token in refused.stderr and
              "0644" in refused.stderr,
              f"shardctl refuses a token others may read: "
              f"{refused.stderr.strip()[:200]!r}")
        if os.path.exists(trainer):
            refused = subprocess.run(
                [trainer, "--coordinator", daemon.address, "--tls-ca", ca,
                 "--auth-token-file", open_token, "--job", "prod"],
                capture_output=True, text=True, timeout=60)
            check(refused.returncode != 0 and "0644" in refused.stderr,
                  f"shard-train refuses it: "
                  f"{refused.stderr.strip()[:200]!r}")
        try:
            shard.Client(daemon.address, token_file=open_token, tls_ca=ca)
            check(False, "the Python client refuses it")
        except ValueError as error:
            check("0644" in str(error),
                  f"the Python client refuses it: {error}")

    for flag, path in [("--auth-token-file", open_token),
                       ("--admin-token-file", open_token),
                       ("--tls-key", None)]:
        extra = ["--tls-cert", os.path.join(volume, "tls.crt")]
        if path is None:
            key_volume = secret_volume(
                os.path.join(work, "open-key"),
                {"tls.key": os.path.join(pki, "server.key")}, 0o644)
            path = os.path.join(key_volume, "tls.key")
            extra += ["--tls-key", path]
        else:
            extra += ["--tls-key", os.path.join(volume, "tls.key"), flag,
                      path]
        data_dir = os.path.join(work, f"data{flag}")
        started = subprocess.run(
            [f"{args.bin_dir}/shardd", "--listen", "127.0.0.1:0",
             "--data-dir", data_dir, *extra],
            capture_output=True, text=True, timeout=60)
        check(started.returncode != 0 and path in started.stderr and
              "0644" in started.stderr and flag in started.stderr,
              f"shardd refuses {flag} readable by others, naming that flag: "
              f"{started.stderr.strip()[:200]!r}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
