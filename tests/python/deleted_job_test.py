#!/usr/bin/python3
"""A deleted job stays deleted, and its trainers stop.

`shardctl delete-job --force` on a job being trained:
1. shard-train (which joins with --world-size, so a join could create the
   job): both ranks stop within a few heartbeats with exit 1 and a message
   naming the job and NOT_FOUND, and the job does not come back;
2. the Python DistributedShardSampler (which joins with a spec too): the
   training loop's next chunk raises NotFoundError, rejoin() raises
   NotFoundError instead of re-creating the job, and the job does not
   come back;
3. the Python store: init_process_group re-joins on ABORTED by the status
   code torch passed on (CoordinatorStore.last_error), and a NOT_FOUND
   there is raised, not re-joined.
Exit status 0 when every check passes.
"""
import os
import subprocess
import sys
import time

import grpc

from harness import ShardDaemon, check, exit_code, parse_args  # noqa: E402


def job_exists(bin_dir, address, job):
    done = subprocess.run([f"{bin_dir}/shardctl", "--coordinator", address,
                           "describe", "--job", job],
                          capture_output=True, text=True, timeout=60)
    return done.returncode == 0


def delete(bin_dir, address, job):
    done = subprocess.run([f"{bin_dir}/shardctl", "--coordinator", address,
                           "delete-job", "--job", job, "--force"],
                          capture_output=True, text=True, timeout=60)
    check(done.returncode == 0, f"shardctl delete-job --force {job}",
          quiet=True)


def trainers_stop(bin_dir, address, work):
    job = "deleted-cpp"
    logs = [os.path.join(work, f"{job}-{rank}.log") for rank in (0, 1)]
    procs = [subprocess.Popen(
        [f"{bin_dir}/shard-train", "--coordinator", address, "--job", job,
         "--member", f"m{rank}", "--world-size", "2", "--dataset-size",
         "200000", "--epochs", "50", "--eval-size", "0", "--backend", "gloo",
         "--gloo-interface", "lo", "--heartbeat-interval", "200ms",
         "--log-indices", logs[rank], "--progress-every", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for rank in (0, 1)]
    give_up = time.monotonic() + 120
    while time.monotonic() < give_up and not all(
            os.path.exists(log) and os.path.getsize(log) > 1000
            for log in logs):
        time.sleep(0.05)
    delete(bin_dir, address, job)
    deleted = time.monotonic()
    outputs = []
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        outputs.append((proc.returncode, out))
    stopped_after = time.monotonic() - deleted
    for rank, (code, out) in enumerate(outputs):
        # A rank may first see its peer's exit (a collective fails: it
        # re-joins); its re-join then answers NOT_FOUND as well.
        stopped = code == 1 and "NOT_FOUND" in out and f'"{job}"' in out
        check(stopped, f"shard-train rank {rank} stops with exit 1 naming the "
              f"deleted job (after {stopped_after:.1f} s)" +
              ("" if stopped else f": exit {code} {out[-800:]}"))
    check(not job_exists(bin_dir, address, job),
          "the job deleted under shard-train does not come back")


def sampler_stops(address, bin_dir):
    import shard
    import shard.torch
    job = "deleted-py"
    sampler = shard.torch.DistributedShardSampler(
        range(400000), coordinator=address, job=job, member="solo",
        num_replicas=1, heartbeat_interval=0.2, prefetch_bytes=1 << 16)
    received = 0
    raised = None
    try:
        for _ in sampler:
            received += 1
            if received == 1000:
                delete(bin_dir, address, job)
                time.sleep(1.0)  # Several heartbeats.
    except shard.ShardError as error:
        raised = error
    check(raised is not None and raised.code == grpc.StatusCode.NOT_FOUND and
          received < 400000,
          f"the sampler's loop stops with NOT_FOUND after the deletion "
          f"({received} indices, {raised})")
    try:
        sampler.rejoin()
        rejoined = None
    except shard.ShardError as error:
        rejoined = error
    check(rejoined is not None and
          rejoined.code == grpc.StatusCode.NOT_FOUND and
          "was deleted" in rejoined.message,
          f"rejoin() after the deletion raises NOT_FOUND ({rejoined})")
    check(not job_exists(bin_dir, address, job),
          "the job deleted under the sampler does not come back")


def store_errors_keep_their_code(address):
    import shard
    from shard.torch.store import CoordinatorStore
    client = shard.Client(address)
    client.create_job("store-codes", shard.client.job_spec(10, 1))
    member = client.join("store-codes", "solo", wait=10)
    store = CoordinatorStore(member, client=client)
    store.set("k", b"v")
    client.leave(member)  # The generation ends: ABORTED.
    try:
        store.get("k")
    except shard.ShardError:
        pass
    check(store.last_error is not None and
          store.last_error.code == grpc.StatusCode.ABORTED,
          f"the store keeps the code of its last error "
          f"({store.last_error})")


def main():
    args = parse_args(__doc__.splitlines()[0])
    work = os.path.join("/tmp", f"shard-deleted-{os.getpid()}")
    os.makedirs(work, exist_ok=True)
    with ShardDaemon(args.bin_dir) as daemon:
        trainers_stop(args.bin_dir, daemon.address, work)
        sampler_stops(daemon.address, args.bin_dir)
        store_errors_keep_their_code(daemon.address)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
