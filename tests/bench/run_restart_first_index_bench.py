#!/usr/bin/python3
"""First index of an epoch when trainers reach the coordinator (rank 0 of
W = 8, through the Python client), at each --sizes:
  new job      the 8 members join right after CreateJob, then rank 0
               streams epoch 0 (timed from CreateJob's answer, and from
               the world formed, i.e. the last join's answer), and drains
               it (its last index, from the world formed);
  recovered    shardd is SIGKILLed with the 8 members joined and restarted
               on its data directory; rank 0 streams epoch 0 again (timed
               from the restart: the new shardd process started);
  failover     the same job on 3 shardd replicas over a 3-member etcd
               (leader lease 2 s); the leader is SIGKILLed and rank 0
               streams epoch 0 through the replicas' address list (timed
               from the first moment another replica serves);
  warm         epoch 1, three seconds after epoch 0 was opened;
and, in the same run, python3-torch's torch.randperm(N) with a seeded
generator (what a trainer's own DistributedSampler computes for its first
index) and a numpy copy of the same 4N bytes. Then --many-jobs jobs of
--many-size (W = 8 each, all joined) on one shardd, SIGKILLed and
restarted: every job's rank 0 streams epoch 0 at once; p50 and max of
their first index, from the restart. Each figure is the
median of --repeats runs. With --baseline-bin-dir, every shardd figure is
measured for that build's shardd too, in the same run (the clients are this
build's). Prints Markdown tables.

  tests/bench/run_restart_first_index_bench.py --bin-dir build/bin
      --python-dir build/python [--sizes 1e5,1e8] [--repeats 3]
      [--many-jobs 20] [--many-size 1e8] [--no-failover]
      [--baseline-bin-dir DIR]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from shardd_process import ShardDaemon  # noqa: E402
from python_client_runs import join_world, servers_to_compare  # noqa: E402

W = 8


def progress(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def torch_randperm_seconds(n):
    import torch
    generator = torch.Generator()
    generator.manual_seed(0)
    began = time.monotonic()
    torch.randperm(n, generator=generator)
    return time.monotonic() - began


def memcpy_seconds(n):
    import numpy
    source = numpy.arange(n, dtype=numpy.uint32)
    target = numpy.empty_like(source)
    target[:] = source  # Faults the target in first.
    began = time.monotonic()
    numpy.copyto(target, source)
    return time.monotonic() - began


def first_index_after(client, membership, epoch, began):
    stream = client.stream(membership, epoch)
    next(iter(stream))
    elapsed = time.monotonic() - began
    stream.close()
    return elapsed


def first_and_last_index_after(client, membership, epoch, began):
    """Seconds from `began` to the first and to the last index of the
    member's shard of `epoch`."""
    stream = client.stream(membership, epoch)
    chunks = iter(stream)
    next(chunks)
    first = time.monotonic() - began
    for _ in chunks:
        pass
    return first, time.monotonic() - began


def join_all(client, job):
    """Rank 0 of the job's W members, joined at once."""
    return join_world(client, job, W)[0]


def one_run(bin_dir, n):
    from shard.client import Client, job_spec
    with ShardDaemon(bin_dir) as daemon:
        client = Client(daemon.address)
        created = time.monotonic()
        client.create_job("bench", job_spec(n, W))
        rank0 = join_all(client, "bench")
        formed = time.monotonic()
        from_world, drained = first_and_last_index_after(client, rank0, 0,
                                                         formed)
        new_job = formed - created + from_world
        time.sleep(3)
        warm = first_index_after(client, rank0, 1, time.monotonic())
        daemon.kill()
        restarted = time.monotonic()
        daemon.restart()
        recovered = first_index_after(client, rank0, 0, restarted)
        client.close()
    return new_job, from_world, drained, recovered, warm


def serving_since(replicas, skip, began):
    """Seconds from `began` until a replica other than `skip` serves."""
    while True:
        for i in range(len(replicas.addresses)):
            if i != skip and replicas.answer(i)[0]:
                return time.monotonic() - began
        time.sleep(0.005)


def failover_run(replicas, n, run):
    from shard.client import Client, job_spec
    client = Client(replicas.coordinator, retry_deadline=60)
    job = f"failover-{run}"
    client.create_job(job, job_spec(n, W))
    rank0 = join_all(client, job)
    first_index_after(client, rank0, 0, time.monotonic())  # Order built.
    leader = replicas.leader()
    killed = time.monotonic()
    replicas.kill(leader)
    served = serving_since(replicas, leader, killed)
    first = first_index_after(client, rank0, 0, killed)
    replicas.start(leader)  # Back as a standby.
    client.delete_job(job, force=True)
    client.close()
    return first - served


def failover_seconds(bin_dir, n, repeats):
    from replicated_coordinator import EtcdCluster, Replicas
    work = tempfile.mkdtemp(prefix="shard-failover-bench-")
    try:
        with EtcdCluster() as etcd, Replicas(bin_dir, etcd, work) as replicas:
            replicas.leader()
            return statistics.median(
                failover_run(replicas, n, run) for run in range(repeats))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def many_jobs_run(bin_dir, jobs, n):
    from shard.client import Client, job_spec
    with ShardDaemon(bin_dir) as daemon:
        client = Client(daemon.address, retry_deadline=60)
        ranks0 = []
        for j in range(jobs):
            client.create_job(f"job-{j}", job_spec(n, W))
            ranks0.append(join_all(client, f"job-{j}"))
        progress(f"{jobs} jobs of {n:.0e} joined; restarting")
        daemon.kill()
        restarted = time.monotonic()
        daemon.restart()
        firsts = [None] * jobs

        def first(j):
            firsts[j] = first_index_after(client, ranks0[j], 0, restarted)
        threads = [threading.Thread(target=first, args=(j,))
                   for j in range(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        client.close()
    progress("first index of each job (ms): " +
             " ".join(f"{1000 * f:.0f}" for f in sorted(firsts)))
    return statistics.median(firsts), max(firsts)


def shardd_rows(bin_dir, args):
    """The per-size rows and the many-jobs figures of one shardd build."""
    rows = []
    for n in (int(float(s)) for s in args.sizes.split(",")):
        runs = [one_run(bin_dir, n) for _ in range(args.repeats)]
        medians = [statistics.median(r[i] for r in runs) for i in range(5)]
        failover = (None if args.no_failover else
                    failover_seconds(bin_dir, n, args.repeats))
        rows.append((n, medians, failover))
        progress(f"{bin_dir}: N={n:.0e} done")
    many = None
    if args.many_jobs > 0:
        many = many_jobs_run(bin_dir, args.many_jobs,
                             int(float(args.many_size)))
    return rows, many


def ms(seconds):
    return "-" if seconds is None else f"{seconds * 1e3:.1f} ms"


def print_tables(results, args):
    print(f"rank 0 of W={W}, median of {args.repeats}\n")
    print("| shardd | N | new job (from CreateJob) | new job (from the world "
          "formed) | drain (from the world formed) | recovered (from the "
          "restart) | failover (from the new leader serving) | warm epoch |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (rows, _) in results:
        for n, (new_job, from_world, drained, recovered, warm), \
                failover in rows:
            print(f"| {name} | {n:.0e} | {ms(new_job)} | {ms(from_world)} | "
                  f"{ms(drained)} | {ms(recovered)} | {ms(failover)} | "
                  f"{ms(warm)} |")
    print("\n| N | torch.randperm(N) | memcpy of 4N bytes |")
    print("| --- | --- | --- |")
    for n in (int(float(s)) for s in args.sizes.split(",")):
        randperm = statistics.median(torch_randperm_seconds(n)
                                     for _ in range(args.repeats))
        memcpy = statistics.median(memcpy_seconds(n)
                                   for _ in range(args.repeats))
        print(f"| {n:.0e} | {ms(randperm)} | {ms(memcpy)} |")
    if args.many_jobs > 0:
        print(f"\n{args.many_jobs} jobs of {float(args.many_size):.0e} "
              f"(W={W}), shardd restarted: first index of every job's rank "
              "0, from the restart\n")
        print("| shardd | p50 | max |")
        print("| --- | --- | --- |")
        for name, (_, (p50, worst)) in results:
            print(f"| {name} | {ms(p50)} | {ms(worst)} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--sizes", default="1e5,1e8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--many-jobs", type=int, default=20)
    parser.add_argument("--many-size", default="1e8")
    parser.add_argument("--no-failover", action="store_true")
    parser.add_argument("--baseline-bin-dir")
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    results = [(name, shardd_rows(bin_dir, args))
               for name, bin_dir in servers_to_compare(args)]
    print_tables(results, args)


if __name__ == "__main__":
    main()
