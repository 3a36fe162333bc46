"""The trainer paths under a tenant's credential, over a real shardd with
--auth-policy (two tenants, team-a-* and team-b-*):

1. The Python sampler given a shard.Client with team A's token file trains
   an epoch of a team-a job; in a team-b job it raises
   PermissionDeniedError naming the job and the role missing, at once
   (not retried).
2. The sampler given only the coordinator's address takes the token from
   SHARD_TOKEN_FILE, as torchrun workers do, and feeds shard.torch.DataLoader
   with workers of the default start method and of spawn; and a
   token the policy lacks is UnauthenticatedError.
   `shardctl status` shows each team only its own jobs.
3. shard-train with SHARD_TOKEN_FILE trains a team-a job and exits 0; in a
   team-b job it exits non-zero naming PERMISSION_DENIED.
4. torchrun --rdzv-backend shard with SHARD_TOKEN_FILE: the example
   trainer's two workers rendezvous in team A's jobs and exit 0; with the
   run id of a team-b job the agent fails at once with the denial.

5. The policy file re-read on SIGHUP: a broken one is refused with its
   FILE:LINE in an audit line and team A keeps working; one without team
   A's trainer shuts it out at once. A broken policy at start exits 2
   naming FILE:LINE.

With --replicated: three replicas on etcd under mutual TLS and one policy
naming team A by its client certificate (CN) and team B by a token; each
reaches its own job and is refused the other's, before and after the
leader is killed.
"""
import hashlib
import os
import signal
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
    import multiprocessing
    import shard.torch
    # The platform's default start method (fork before Python 3.14,
    # forkserver from it, where the loader refuses fork) and spawn.
    for method in dict.fromkeys((multiprocessing.get_start_method(),
                                 "spawn")):
        sampler = DistributedSampler(range(60), coordinator=address,
                                     job=f"team-a-loader-{method}",
                                     num_replicas=1, rank=0)
        sampler.set_epoch(0)
        loader = shard.torch.DataLoader(range(60), sampler=sampler,
                                        batch_size=10, num_workers=2,
                                        multiprocessing_context=method)
        seen = sorted(int(i) for batch in loader for i in batch)
        check(seen == list(range(60)), f"shard.torch.DataLoader with 2 "
              f"{method} workers delivers team A's epoch once")
        sampler.close()
    os.environ["SHARD_TOKEN_FILE"] = write_secret(
        os.path.join(os.path.dirname(tokens["a"]), "stranger.token"),
        "not-in-the-policy")
    expect_error("a token the policy lacks", UnauthenticatedError,
                 lambda: shard.Client(address).get_job("team-a-sampler"),
                 says="names no principal")
    del os.environ["SHARD_TOKEN_FILE"]
    client.close()


def check_status(bin_dir, address, tokens):
    import shard
    with shard.Client(address, token_file=tokens["b"]) as team_b:
        team_b.create_job("team-b-listed", shard.job_spec(10, 1))

    def listed(team):
        out = subprocess.run(
            [os.path.join(bin_dir, "shardctl"), "--coordinator", address,
             "--auth-token-file", tokens[team], "status"],
            capture_output=True, text=True, timeout=60).stdout
        return sorted(line.split()[0] for line in out.splitlines()[1:])

    check(listed("a")[0] == "team-a-by-env" and
          listed("a")[-2:] == ["team-a-loader-spawn", "team-a-sampler"] and
          listed("b") == ["team-b-listed"],
          f"shardctl status shows each team its own jobs: A {listed('a')}, "
          f"B {listed('b')}")


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


def across_failover(args):
    import grpc
    import shard
    from shard.errors import PermissionDeniedError
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "e2e"))
    from replicated_coordinator import EtcdCluster, Replicas

    work = tempfile.mkdtemp(prefix="shard-tenants-ha-")
    pki = os.path.join(work, "pki")
    subprocess.run([os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "..", "support", "make_test_certs.sh"), pki],
                   check=True)
    tokens = {name: write_secret(os.path.join(work, f"{name}.token"),
                                 f"{name}-{os.urandom(8).hex()}")
              for name in ("b", "ops")}

    def digest(name):
        with open(tokens[name]) as f:
            return hashlib.sha256(f.read().strip().encode()).hexdigest()

    policy = os.path.join(work, "policy.yaml")
    with open(policy, "w") as out:
        out.write(
            "principals:\n"
            "  - {name: team-a-by-cert, identity: trainer,"
            " grants: [{role: member, jobs: \"team-a-*\"}]}\n"
            f"  - {{name: team-b-trainer, token_sha256: {digest('b')},"
            " grants: [{role: member, jobs: \"team-b-*\"}]}\n"
            f"  - {{name: ops, token_sha256: {digest('ops')},"
            " grants: [{role: admin, jobs: \"*\"}]}\n")
    pem = {name: os.path.join(pki, name) for name in (
        "ca.pem", "server.pem", "server.key", "client.pem", "client.key",
        "spiffe.pem", "spiffe.key")}

    def read(name):
        with open(pem[name], "rb") as f:
            return f.read()

    with open(tokens["ops"]) as f:
        ops_token = f.read().strip()
    probe = grpc.ssl_channel_credentials(read("ca.pem"), read("client.key"),
                                         read("client.pem"))
    with EtcdCluster() as etcd, Replicas(
            args.bin_dir, etcd, work,
            extra_args=["--tls-cert", pem["server.pem"], "--tls-key",
                        pem["server.key"], "--tls-client-ca", pem["ca.pem"],
                        "--auth-policy", policy],
            probe_credentials=probe,
            probe_metadata=(("authorization", f"Bearer {ops_token}"),)
            ) as replicas:
        check(replicas.leader(deadline_s=60) is not None, "a replica leads")
        team_a = shard.Client(replicas.coordinator, tls_ca=pem["ca.pem"],
                              tls_cert=pem["client.pem"],
                              tls_key=pem["client.key"])
        team_b = shard.Client(replicas.coordinator, token_file=tokens["b"],
                              tls_ca=pem["ca.pem"],
                              tls_cert=pem["spiffe.pem"],
                              tls_key=pem["spiffe.key"])
        team_a.create_job("team-a-ha", shard.job_spec(100, 1))
        team_b.create_job("team-b-ha", shard.job_spec(100, 1))

        def check_separated(when):
            check(team_a.get_job("team-a-ha").job_id == "team-a-ha" and
                  team_b.get_job("team-b-ha").job_id == "team-b-ha",
                  f"{when}: each team reads its own job (A by its "
                  f"certificate, B by its token)")
            expect_error(f"{when}: team A's certificate on team B's job",
                         PermissionDeniedError,
                         lambda: team_a.get_job("team-b-ha"),
                         says="principal 'team-a-by-cert'")
            expect_error(f"{when}: team B's token on team A's job",
                         PermissionDeniedError,
                         lambda: team_b.get_job("team-a-ha"),
                         says="principal 'team-b-trainer'")

        check_separated("before the failover")
        leader = replicas.leader()
        replicas.kill(leader)
        check(replicas.leader(deadline_s=60, skip=(leader,)) is not None,
              "another replica leads after the kill")
        check_separated("after the failover")
        team_a.close()
        team_b.close()


def check_reload(bin_dir, daemon, policy, log, tokens):
    import shard
    from shard.errors import UnauthenticatedError
    with open(policy) as f:
        good = f.read()
    with open(policy, "w") as out:
        out.write("principals:\n  - name: x\n    grants: [\n")
    os.kill(daemon.pid, signal.SIGHUP)
    refused = f"audit call=LoadPolicy outcome=refused reason=\"{policy}:4:"
    for _ in range(100):
        with open(log) as f:
            if refused in f.read():
                break
        time.sleep(0.05)
    with open(log) as f:
        check(refused in f.read(), "SIGHUP: a broken policy is refused with "
              "its FILE:LINE in an audit line")
    client = shard.Client(daemon.address, token_file=tokens["a"])
    check(client.get_job("team-a-sampler").job_id == "team-a-sampler",
          "the policy in force stays: team A still reads its job")
    with open(policy, "w") as out:
        out.write(good.split("  - name: team-a-trainer")[0] +
                  "  - name: team-b-trainer" +
                  good.split("  - name: team-b-trainer")[1])
    os.kill(daemon.pid, signal.SIGHUP)
    started = time.monotonic()
    while time.monotonic() - started < 5:
        try:
            client.get_job("team-a-sampler")
            time.sleep(0.05)
        except UnauthenticatedError:
            break
    expect_error("SIGHUP: a policy without team A's trainer shuts it out",
                 UnauthenticatedError,
                 lambda: client.get_job("team-a-sampler"),
                 says="names no principal")
    client.close()
    broken = os.path.join(os.path.dirname(policy), "broken.yaml")
    with open(broken, "w") as out:
        out.write("principals:\n  - name: x\n    tokn: y\n")
    started = subprocess.run(
        [os.path.join(bin_dir, "shardd"), "--in-memory", "--listen",
         "127.0.0.1:0", "--auth-policy", broken],
        capture_output=True, text=True, timeout=30)
    check(started.returncode == 2 and
          f"shardd: --auth-policy: {broken}:3: unknown key \"tokn\""
          in started.stderr,
          f"a broken policy at start exits {started.returncode}: "
          f"{started.stderr.strip().splitlines()[-1][:200]}")


def main():
    args = parse_args(__doc__.splitlines()[0], lambda p: p.add_argument(
        "--replicated", action="store_true"))
    if args.replicated:
        across_failover(args)
        return exit_code()
    work = tempfile.mkdtemp(prefix="shard-tenants-")
    policy, tokens = write_policy(work)
    log = os.path.join(work, "shardd.log")
    with ShardDaemon(args.bin_dir, "--auth-policy", policy,
                     log_path=log) as daemon:
        check_sampler(daemon.address, tokens)
        check_status(args.bin_dir, daemon.address, tokens)
        check_shard_train(args.bin_dir, daemon.address, tokens, work)
        check_torchrun(args.python_dir, daemon.address, tokens, work)
        check_reload(args.bin_dir, daemon, policy, log, tokens)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
