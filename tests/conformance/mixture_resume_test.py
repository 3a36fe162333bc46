#!/usr/bin/python3
"""A mixture is served exactly once through a coordinator crash (or, with
--failover, a frozen leader replica) and an elastic resize, through the
Python client.

An elastic mixture job (3 sources with weights, epoch size 3001, W = 3,
min 2, tail uneven: every position of the epoch goes to exactly one rank)
on the real shardd: the 3 ranks read part of epoch 0 and commit; shardd is
SIGKILLed and restarted on its data directory; the ranks go on from the
committed position and commit again (--failover: 3 shardd replicas on a
3-member etcd cluster, and the leader is SIGSTOPped instead: a frozen
process, not a killed one, so a standby takes over and the ranks go on
there); one member leaves, the other two join
again (a world of 2, re-sharded from the committed position) and read the
epoch to its end. Every position's index, as the ranks received it, must be
the reference's (mixture_reference.py: the chosen list of docs/mixtures.md
in torch.randperm's order), and every position served exactly once.
Exit status 0 on success; the first difference is printed.
"""
import argparse
import contextlib
import os
import signal
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shardd_process import ShardDaemon  # noqa: E402
import mixture_reference as reference  # noqa: E402

import torch  # noqa: E402

SOURCES = [("web", 1000, "weight", 1.0), ("books", 37, "weight", 2.5),
           ("curated", 5, "weight", 0.25)]
EPOCH_SIZE = 3001
SEED = 99


def expected_order():
    """Position -> global index of epoch 0."""
    chosen = reference.chosen(SOURCES, reference.counts(SOURCES, EPOCH_SIZE),
                              SEED, 0)
    generator = torch.Generator()
    generator.manual_seed(SEED)
    return [chosen[p] for p in
            torch.randperm(EPOCH_SIZE, generator=generator).tolist()]


def mixture_spec(pb):
    spec = pb.JobSpec(world_size=3, min_world_size=2, max_world_size=3,
                      seed=SEED, tail=pb.TAIL_POLICY_UNEVEN,
                      epoch_size=EPOCH_SIZE)
    for name, size, _, weight in SOURCES:
        spec.sources.add(name=name, size=size, weight=weight)
    return spec


def join_all(client, member_ids):
    members = {}

    def join(member):
        members[member] = client.join("mix", member, wait=60, progress=None)
    threads = [threading.Thread(target=join, args=(m,)) for m in member_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [members[m] for m in member_ids]


def read(client, members, start, per_rank, served):
    """Each rank reads `per_rank` indices (None: to the end) of epoch 0
    from global position `start`; records position -> index in `served`
    (a position served twice is recorded as a list). Returns the position
    every rank reached (the next commit)."""
    for member in members:
        stream = client.stream(member, 0, start)
        got = []
        for chunk in stream:
            got.extend(int(x) for x in chunk)
            if per_rank is not None and len(got) >= per_rank:
                break
        stream.close()
        got = got if per_rank is None else got[:per_rank]
        for i, index in enumerate(got):
            position = start + member.rank + i * member.world_size
            served.setdefault(position, []).append(index)
    width = members[0].world_size
    return start + per_rank * width if per_rank is not None else None


@contextlib.contextmanager
def single_coordinator(bin_dir):
    """(address, fault): one shardd on a data directory; the fault is a
    SIGKILL and a restart on the same directory."""
    with ShardDaemon(bin_dir) as daemon:
        def crash():
            daemon.kill()
            daemon.restart()
        yield daemon.address, crash


@contextlib.contextmanager
def replicated_coordinator(bin_dir):
    """(addresses, fault): 3 replicas on etcd; the fault freezes the leader
    (SIGSTOP) until the end of the test."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
    from replicated_coordinator import EtcdCluster, Replicas
    with tempfile.TemporaryDirectory(prefix="shard-mixture-") as work, \
            EtcdCluster() as etcd, Replicas(bin_dir, etcd, work) as replicas:
        def freeze_leader():
            leader = replicas.leader()
            replicas.signal(leader, signal.SIGSTOP)
            print(f"froze leader replica {leader}", flush=True)
        yield replicas.coordinator, freeze_leader


def serve_through_fault(client, pb, fault, served):
    """Creates the job, reads part of epoch 0 with 3 ranks, the fault, more
    reads, then a resize to 2 ranks that read to the end."""
    client.create_job("mix", mixture_spec(pb))
    members = join_all(client, ["m0", "m1", "m2"])
    first = read(client, members, 0, 200, served)
    client.commit(members[0], 0, first)
    fault()
    second = read(client, members, first, 150, served)
    client.commit(members[0], 0, second)
    client.leave(members[2])
    members = join_all(client, ["m0", "m1"])
    assert members[0].world_size == 2, members[0]
    assert members[0].committed_position == second, members[0]
    read(client, members, second, None, served)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--failover", action="store_true",
                        help="replicas on etcd; freeze the leader")
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    from shard.client import Client
    from shard.v1 import shard_pb2 as pb
    expected = expected_order()
    served = {}
    coordinator = (replicated_coordinator if args.failover
                   else single_coordinator)
    with coordinator(args.bin_dir) as (address, fault):
        client = Client(address, retry_deadline=60)
        serve_through_fault(client, pb, fault, served)
        client.close()
    twice = {p: got for p, got in served.items() if len(got) > 1}
    missing = [p for p in range(EPOCH_SIZE) if p not in served]
    wrong = [(p, got[0], expected[p]) for p, got in sorted(served.items())
             if got[0] != expected[p]]
    print(f"positions served: {len(served)} of {EPOCH_SIZE}; twice: "
          f"{len(twice)}; missing: {len(missing)}; wrong index: {len(wrong)}")
    if twice or missing or wrong or len(served) != EPOCH_SIZE:
        print(f"twice {list(twice.items())[:5]}\nmissing {missing[:5]}\n"
              f"wrong (position, got, expected) {wrong[:5]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
