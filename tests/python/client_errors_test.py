#!/usr/bin/python3
"""shard.Client errors and the rendezvous store over a real shardd.

- an unknown job, a spec mismatch, a bad token and an ended generation
  raise ShardError with NOT_FOUND, FAILED_PRECONDITION, UNAUTHENTICATED and
  ABORTED, carrying the coordinator's message;
- an address without a port, or with one above 65535, is refused
  (ValueError naming the fix);
- a join waiting for its world reports how many members are missing at
  each progress interval, then DEADLINE_EXCEEDED;
- the store calls of a generation (set/get/add/compare-set/wait/delete/
  count) behave as c10d expects, and a get with a wait returns None when the
  key never comes;
- store gets and waits last the caller's timeout although the coordinator
  cuts each call at its --max-wait; a missing key's error names the key and
  how long was waited; store_add is never retried (not idempotent); a call
  that retries an unavailable coordinator says so in a line;
- commit and the store calls are a member's: a member of another job
  naming this job's generation gets PermissionDeniedError,
  and the job's progress and keys are unchanged;
- a stream continues across a coordinator restart (SIGKILL, same port and
  data directory) with exactly the indices it was still owed;
- two processes form a Gloo process group through CoordinatorStore (no
  MASTER_ADDR/PORT) and all_reduce over it; gather_uneven returns every
  rank's variable-length tensor in rank order.
Exit status 0 when every check passes.
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

import grpc

from harness import ShardDaemon, check, exit_code, parse_args  # noqa: E402


def raises(code, call):
    """Whether `call` raises ShardError with `code` (and a message)."""
    import shard
    try:
        call()
    except shard.ShardError as error:
        return error.code == code and bool(error.message)
    return False


# Run as a child process: one rank of the process-group check.
def rank_main(address, job, world):
    import torch
    import torch.distributed as dist
    import shard.torch
    sampler = shard.torch.DistributedShardSampler(
        range(10), coordinator=address, job=job, num_replicas=world,
        member=f"rank-{os.environ['SHARD_TEST_RANK']}")
    dist.init_process_group("gloo", store=shard.torch.CoordinatorStore(sampler),
                            rank=sampler.rank, world_size=sampler.num_replicas)
    total = torch.tensor([sampler.rank + 1.0])
    dist.all_reduce(total)
    parts = shard.torch.gather_uneven(
        torch.arange(sampler.rank + 1, dtype=torch.int64))
    print(f"{sampler.rank} {total.item()} "
          f"{[p.tolist() for p in parts]}", flush=True)
    dist.destroy_process_group()
    sampler.close()


def main():
    args = parse_args(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument(
            "--rank-of", nargs=3, metavar=("ADDRESS", "JOB", "W")),
        bin_dir_required=False)
    if args.rank_of:
        rank_main(args.rank_of[0], args.rank_of[1], int(args.rank_of[2]))
        return 0
    import shard
    from shard.client import job_spec

    work = tempfile.mkdtemp(prefix="shard-py-")
    token_file = os.path.join(work, "token")
    with open(token_file, "w") as f:
        f.write("py-token-31b7\n")
    os.chmod(token_file, 0o600)
    with ShardDaemon(args.bin_dir, "--auth-token-file", token_file) as daemon:
        client = shard.Client(daemon.address, token_file=token_file,
                              retry_deadline=5)
        check(raises(grpc.StatusCode.NOT_FOUND,
                     lambda: client.join("nope", "m", wait=0)),
              "joining an unknown job without a spec: NOT_FOUND")
        client.create_job("job", job_spec(100, 2, seed=1))
        check(raises(grpc.StatusCode.FAILED_PRECONDITION,
                     lambda: client.join("job", "m",
                                         spec=job_spec(100, 2, seed=2))),
              "joining with another spec: FAILED_PRECONDITION")
        anonymous = shard.Client(daemon.address, retry_deadline=5)
        check(raises(grpc.StatusCode.UNAUTHENTICATED,
                     lambda: anonymous.get_job("job")),
              "a call without the token: UNAUTHENTICATED")

        try:
            shard.Client("shardd")
            refused = ""
        except ValueError as error:
            refused = str(error)
        check("has no port: give HOST:PORT" in refused,
              f"an address without a port is refused ({refused})")
        try:
            shard.Client("127.0.0.1:95537")
            refused = ""
        except ValueError as error:
            refused = str(error)
        check("has port 95537, out of range: give a port from 1 to 65535"
              in refused,
              f"a port above 65535 is refused, not wrapped ({refused})")

        lines = []
        check(raises(grpc.StatusCode.DEADLINE_EXCEEDED,
                     lambda: client.join("job", "m0", wait=1.0,
                                         progress=lines.append,
                                         progress_every=0.3)) and
              len(lines) >= 2 and all(
                  line.startswith("job job: waiting for 1 more member (1 of "
                                  "2 joined; 2: the job's world size), "
                                  "generation 0, ")
                  for line in lines),
              f"a join waiting for its world says so every progress_every "
              f"seconds, then DEADLINE_EXCEEDED ({lines})")

        # An elastic job (2..4) launched at 4 waits for 4, not for 2.
        lines = []
        launch = job_spec(10, 4, min_world_size=2, max_world_size=4)
        check(raises(grpc.StatusCode.DEADLINE_EXCEEDED,
                     lambda: client.join("launched", "m0", spec=launch,
                                         wait=0.8, progress=lines.append,
                                         progress_every=0.3)) and
              lines and all("waiting for 3 more members (1 of 4 joined; 4: "
                            "the launch's size)" in line for line in lines),
              f"the waiting line counts to the launch's size ({lines})")

        members = [None, None]

        def join(i):
            members[i] = client.join("job", f"m{i}", wait=60)
        threads = [threading.Thread(target=join, args=(i,)) for i in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        a, b = sorted(members, key=lambda m: m.rank)
        check((a.rank, b.rank, a.world_size) == (0, 1, 2), "a world of 2")

        client.store_set(a, "k", b"v")
        check(client.store_get(b, "k") == b"v", "store get sees a set")
        check(client.store_get(b, "missing", wait=0.2) is None,
              "a get of a key that never comes returns None after its wait")
        check(client.store_add(a, "n", 5) == 5 and
              client.store_add(b, "n", -2) == 3, "store add")
        check(client.store_compare_set(a, "k", b"v", b"w") == b"w",
              "store compare-set")
        check(client.store_wait(b, ["k", "n"], 1.0), "store wait")
        check(client.store_count(a) == 2, "store count")
        check(client.store_delete(a, "n") and client.store_count(a) == 1,
              "store delete")

        # A member of another job (the same token) that names this job's
        # generation: refused, typed, and nothing changes.
        import dataclasses
        from shard.errors import PermissionDeniedError
        client.create_job("other", job_spec(10, 1))
        stranger = dataclasses.replace(
            client.join("other", "stranger", wait=10), job_id="job",
            generation=a.generation)
        for name, call in (
                ("commit", lambda: client.commit(stranger, 0, 2)),
                ("store_set", lambda: client.store_set(stranger, "k", b"x")),
                ("store_get", lambda: client.store_get(stranger, "k"))):
            try:
                call()
                refused = None
            except PermissionDeniedError as error:
                refused = error.message
            check(refused is not None and '"stranger" holds no rank' in
                  refused,
                  f"{name} by a member of another job: PermissionDeniedError "
                  f"({refused})")
        check(client.get_job("job").committed_position == 0 and
              client.store_get(a, "k") == b"w",
              "the refused calls changed neither progress nor keys")

        client.leave(b)
        check(raises(grpc.StatusCode.ABORTED,
                     lambda: client.commit(a, 0, 2)),
              "a commit of an ended generation: ABORTED")
        check(raises(grpc.StatusCode.ABORTED,
                     lambda: client.store_get(a, "k")),
              "a store call of an ended generation: ABORTED")

    # Store waits outlast the coordinator's --max-wait (1 s here): the
    # client repeats them until the caller's timeout is spent.
    with ShardDaemon(args.bin_dir, "--max-wait", "1s") as daemon:
        import shard.torch
        from datetime import timedelta
        client = shard.Client(daemon.address, retry_deadline=5)
        member = client.join("waits", "m", spec=job_spec(10, 1))
        store = shard.torch.CoordinatorStore(member, client,
                                             timeout=timedelta(seconds=30))
        setter = threading.Timer(2.5, client.store_set,
                                 args=(member, "late", b"v"))
        setter.start()
        check(store.get("late") == b"v",
              "CoordinatorStore.get waits past the coordinator's max-wait")
        setter.join()
        store.set_timeout(timedelta(seconds=2.5))
        began = time.monotonic()
        try:
            store.get("never")
            check(False, "a key that never comes raises")
        except RuntimeError as error:
            waited = time.monotonic() - began
            check("'never'" in str(error) and "after waiting 2." in str(error)
                  and waited >= 2.5,
                  f"it raises after the whole timeout, saying how long and "
                  f"which key: {error}")
        # An add is not idempotent: UNAVAILABLE is raised, never retried
        # (as in the C++ client), even with a long retry deadline.
        unreachable = shard.Client("127.0.0.1:1", retry_deadline=60)
        began = time.monotonic()
        check(raises(grpc.StatusCode.UNAVAILABLE,
                     lambda: unreachable.store_add(member, "n", 1)) and
              time.monotonic() - began < 30,
              "store_add is not retried on UNAVAILABLE")
        # A retried call says so while it retries, as the C++ tools do.
        lines = []
        retried = shard.Client("127.0.0.1:1", retry_deadline=8,
                               on_retrying=lines.append)
        check(raises(grpc.StatusCode.UNAVAILABLE,
                     lambda: retried.get_job("job")) and lines and
              all(line.startswith("shard: coordinator 127.0.0.1:1 "
                                  "unavailable (GetJob: ") and
                  line.endswith(" s more (retry_deadline)")
                  for line in lines),
              f"a call retrying an unavailable coordinator prints a line "
              f"({lines})")

    # A stream rides through a coordinator restart (UNAVAILABLE: reconnect
    # from the first index not yet received).
    with ShardDaemon(args.bin_dir) as daemon:
        from torch.utils.data.distributed import DistributedSampler
        client = shard.Client(daemon.address, retry_deadline=60)
        n = 200000
        member = client.join("restart", "m", spec=job_spec(n, 1, seed=3))
        stream = client.stream(member, 0, chunk_indices=1024,
                               prefetch_bytes=16 << 10)
        got = [int(i) for i in next(stream)]
        daemon.kill()
        daemon.restart()
        for chunk in stream:
            got += chunk.tolist()
        ref = DistributedSampler(range(n), num_replicas=1, rank=0, seed=3)
        check(got == list(ref), f"a stream across a coordinator restart "
              f"yields every index once, in order ({len(got)} of {n})")

    # Two processes form a Gloo group through the coordinator.
    with ShardDaemon(args.bin_dir) as daemon:
        procs = [subprocess.Popen(
            [sys.executable, __file__, "--python-dir", args.python_dir,
             "--rank-of", daemon.address, "pg", "2"],
            env={**os.environ, "SHARD_TEST_RANK": str(i)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(2)]
        lines = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            check(proc.returncode == 0, f"rank process exits 0 {err[-300:]}")
            lines += out.splitlines()
        check(sorted(lines) == ["0 3.0 [[0], [0, 1]]", "1 3.0 [[0], [0, 1]]"],
              f"all_reduce and gather_uneven through CoordinatorStore: "
              f"{sorted(lines)}")

    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
