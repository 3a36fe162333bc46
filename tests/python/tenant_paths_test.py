"""The trainer paths under a tenant's credential, over a real shardd with
--auth-policy (two tenants, team-a-* and team-b-*):

1. The Python sampler given a shard.Client with team A's token file trains
   an epoch of a team-a job; in a team-b job it raises
   PermissionDeniedError naming the job and the role missing, at once
   (not retried).
2. The sampler given only the coordinator's address takes the token from
   SHARD_TOKEN_FILE, as DataLoader workers and torchrun workers do; and a
   token the policy lacks is UnauthenticatedError.
3. shard-train with SHARD_TOKEN_FILE trains a team-a job and exits 0; in a
   team-b job it exits non-zero naming PERMISSION_DENIED.
4. torchrun --rdzv-backend shard with SHARD_TOKEN_FILE: the example
   trainer's two workers rendezvous in team A's jobs and exit 0; with the
   run id of a team-b job the agent fails at once with the denial.
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import time

from harness import (ShardDaemon, check, communicate_or_report, exit_code,
                     expect_error, parse_args, torchrun_command, torchrun_env)

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "client", "python", "examples", "train_ddp.py")


def write_secret(path, text):
    with open(path, "w") as out:
        out.write(text + "\n")
    os.chmod(path, 0o600)
    return path


def write_policy(work):
    """Tokens for team A's and team B's trainers; the policy naming them."""
    tokens = {}
    principals = []
    for team in ("a", "b"):
        token = f"tenant-{team}-{os.urandom(8).hex()}"
        tokens[team] = write_secret(os.path.join(work, f"{team}.token"), token)
        principals.append(
            f"  - name: team-{team}-trainer\n"
            f"    token_sha256: {hashlib.sha256(token.encode()).hexdigest()}\n"
            f"    grants: [{{role: member, jobs: \"team-{team}-*\"}}]\n")
    policy = os.path.join(work, "policy.yaml")
    with open(policy, "w") as out:
        out.write("tenants:\n"
                  "  - {name: team-a, jobs: \"team-a-*\"}\n"
                  "  - {name: team-b, jobs: \"team-b-*\"}\n"
                  "principals:\n" + "".join(principals))
    return policy, tokens


def check_sampler(address, tokens):
    import shard
    from shard.errors import PermissionDeniedError, UnauthenticatedError
    from shard.torch import DistributedShardSampler as DistributedSampler

    client = shard.Client(address, token_file=tokens["a"])
    sampler = DistributedSampler(range(100), coordinator=client,
                                 job="team-a-sampler", num_replicas=1, rank=0)
    sampler.set_epoch(0)
    check(sorted(sampler) == list(range(100)),
          "team A's sampler streams its job's epoch, every sample once")
    sampler.close()

    started = time.monotonic()
    expect_error("team A's sampler in a team-b job", PermissionDeniedError,
                 lambda: DistributedSampler(range(100), coordinator=client,
                                            job="team-b-sampler",
                                            num_replicas=1, rank=0),
                 says="needs the member role on that job")
    check(time.monotonic() - started < 10,
          f"the denial is not retried ({time.monotonic() - started:.2f} s)")

    os.environ["SHARD_TOKEN_FILE"] = tokens["a"]
    sampler = DistributedSampler(range(50), coordinator=address,
                                 job="team-a-by-env", num_replicas=1, rank=0)
    sampler.set_epoch(0)
    check(sorted(sampler) == list(range(50)),
          "a sampler given only the address presents SHARD_TOKEN_FILE's token")
    sampler.close()
    os.environ["SHARD_TOKEN_FILE"] = write_secret(
        os.path.join(os.path.dirname(tokens["a"]), "stranger.token"),
        "not-in-the-policy")
    expect_error("a token the policy lacks", UnauthenticatedError,
                 lambda: shard.Client(address).get_job("team-a-sampler"),
                 says="names no principal")
    del os.environ["SHARD_TOKEN_FILE"]
    client.close()


def run_shard_train(bin_dir, address, token, job, work):
    env = dict(os.environ, SHARD_TOKEN_FILE=token)
    proc = subprocess.Popen(
        [os.path.join(bin_dir, "shard-train"), "--coordinator", address,
         "--job", job, "--world-size", "1", "--dataset-size", "256",
         "--eval-size", "64", "--epochs", "1", "--progress-every", "0",
         "--checkpoint-dir", os.path.join(work, job)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = communicate_or_report(proc, 300)
    return proc.returncode, out


def check_shard_train(bin_dir, address, tokens, work):
    code, out = run_shard_train(bin_dir, address, tokens["a"], "team-a-train",
                                work)
    check(code == 0, f"shard-train trains team A's job (exit {code})"
          + ("" if code == 0 else f": {out[-800:]}"))
    code, out = run_shard_train(bin_dir, address, tokens["a"], "team-b-train",
                                work)
    check(code != 0 and "PERMISSION_DENIED" in out
          and "role on that job" in out,
          f"shard-train in team B's job exits {code} naming the denial: "
          f"{out.strip().splitlines()[-1][:200] if out.strip() else ''}")


def run_torchrun(python_dir, address, token, run_id, job, work):
    env = torchrun_env(python_dir)
    env["SHARD_TOKEN_FILE"] = token
    proc = subprocess.Popen(
        [*torchrun_command(), "--nnodes=1", "--nproc_per_node=2",
         f"--rdzv_endpoint={address}", f"--rdzv_id={run_id}",
         "--redirects", "2", "--tee", "2", "--max_restarts", "0", EXAMPLE, "--coordinator", address,
         "--job", job, "--dataset-size", "200", "--eval-size", "20",
         "--epochs", "1", "--loader-workers", "0",
         "--checkpoint-dir", os.path.join(work, run_id)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    out, _ = communicate_or_report(proc, 400)
    return proc.returncode, out


def check_torchrun(python_dir, address, tokens, work):
    code, out = run_torchrun(python_dir, address, tokens["a"], "team-a-run",
                             "team-a-ddp", work)
    check(code == 0, f"torchrun --rdzv-backend shard in team A's jobs exits "
          f"{code}" + ("" if code == 0 else f": {out[-1500:]}"))
    started = time.monotonic()
    code, out = run_torchrun(python_dir, address, tokens["a"], "team-b-run",
                             "team-a-ddp2", work)
    check(code != 0 and "PermissionDeniedError" in out
          and "team-b-run-nodes" in out,
          f"torchrun with team B's run id exits {code} after "
          f"{time.monotonic() - started:.1f} s naming the denial")


def main():
    args = parse_args(__doc__.splitlines()[0])
    work = tempfile.mkdtemp(prefix="shard-tenants-")
    policy, tokens = write_policy(work)
    with ShardDaemon(args.bin_dir, "--auth-policy", policy) as daemon:
        check_sampler(daemon.address, tokens)
        check_shard_train(args.bin_dir, daemon.address, tokens, work)
        check_torchrun(args.python_dir, daemon.address, tokens, work)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
