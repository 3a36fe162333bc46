#!/usr/bin/python3
"""What every client streams equals the plan, for every job shape.

For each shape (plain, block and mixture jobs; torch, keyed and no
shuffle; pad, drop and uneven tails; epochs and datasets each side of
2^32), two identical jobs are created on one real shardd, one joined by
the C++ client (shard-stream-window) and one by the Python client, both
with every rank of the world. For epochs 0 and 1, every rank's windows of
WINDOW indices at the start, the middle and the end of its shard, as each
client streams them from that position, must equal the plan
(PreviewShard, which `shardctl plan` prints); the first window is also
checked against `shardctl plan`'s own output. A job's indices depend on
its spec alone, so the two jobs have one plan.

Torch-shuffled epochs stay below 2^32 positions: such an order is held in
memory (4 bytes an entry up to 2^32, i.e. 16 GiB at the limit) and this
test runs beside others; their index width is exercised by a mixture whose
sources add up to more than 2^32 samples.
Exit status 0 when every check passes.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python"))
from harness import (ShardDaemon, check, exit_code, join_all,  # noqa: E402
                     parse_args)

WINDOW = 3000
WORLD = 3
TWO32 = 2 ** 32


def shapes(pb, shard):
    """(name, JobSpec) for every shape checked."""
    torch, feistel, block = (pb.SHUFFLE_ALGORITHM_TORCH,
                             pb.SHUFFLE_ALGORITHM_FEISTEL,
                             pb.SHUFFLE_ALGORITHM_BLOCK)

    def plain(n, tail, algorithm=torch, shuffle=True, **extra):
        spec = shard.job_spec(n, WORLD, seed=11, shuffle=shuffle, tail=tail)
        spec.shuffle_algorithm = algorithm
        for key, value in extra.items():
            setattr(spec, key, value)
        return spec

    def mixture(algorithm, *sources):
        spec = shard.job_spec(0, WORLD, seed=5, sources=list(sources))
        spec.shuffle_algorithm = algorithm
        return spec

    src = shard.source
    result = []
    for tail in ("pad", "drop", "uneven"):
        result.append((f"torch-{tail}-10007", plain(10007, tail)))
        for n in (TWO32, TWO32 + 1):
            result.append((f"keyed-{tail}-{n}", plain(n, tail, feistel)))
    result += [
        ("torch-legacy-5000", plain(5000, "pad",
                                    torch_randperm=pb.TORCH_RANDPERM_LEGACY)),
        ("unshuffled-uneven-2p32-plus-1", plain(TWO32 + 1, "uneven",
                                           shuffle=False)),
        ("unshuffled-pad-2p32", plain(TWO32, "pad", shuffle=False)),
        ("block-pad-2p32-plus-1", plain(TWO32 + 1, "pad", block,
                                   block_size=4096, window_blocks=8)),
        ("block-drop-2p32-minus-1", plain(TWO32 - 1, "drop", block,
                                    block_size=4096, window_blocks=8)),
        # A large corpus down-sampled per epoch: the epoch is small, the
        # indices are not.
        ("mixture-torch-dataset-1e10",
         mixture(torch, src("web", 10 ** 10, choose=4000),
                 src("code", 500))),
        ("mixture-torch-dataset-2p32",
         mixture(torch, src("web", TWO32 - 500, choose=4000),
                 src("code", 500))),
        ("mixture-torch-dataset-2p32-plus-1",
         mixture(torch, src("code", 501), src("web", TWO32 - 500,
                                             choose=4000))),
        ("mixture-keyed-epoch-2p32-plus-1",
         mixture(feistel, src("web", 2 ** 34, choose=TWO32 - 6),
                 src("code", 7, repeat=1))),
        ("mixture-keyed-epoch-2p32",
         mixture(feistel, src("web", 3 * 10 ** 9, repeat=1),
                 src("books", TWO32 - 3 * 10 ** 9))),
    ]
    return result


def join_world(shard, address, job):
    """(client, membership) of every rank of the job, each by its own
    client, by rank."""
    def join(m):
        client = shard.Client(address)
        return client, client.join(job, f"py-{m}", wait=60, progress=None)
    return sorted(join_all(join, WORLD), key=lambda cm: cm[1].rank)


def python_window(client, membership, epoch, start):
    got = []
    stream = client.stream(membership, epoch, start)
    try:
        for chunk in stream:
            got.extend(int(i) for i in chunk)
            if len(got) >= WINDOW:
                break
    finally:
        stream.close()
    return got[:WINDOW]


def cpp_windows(bin_dir, address, job, epoch, starts):
    """{(rank, start): indices} as the C++ client streams them."""
    args = [f"{bin_dir}/shard-stream-window", "--coordinator", address,
            "--job", job, "--epoch", str(epoch), "--count", str(WINDOW)]
    for start in starts:
        args += ["--start-position", str(start)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"shard-stream-window: {out.stderr.strip()}")
    windows = {}
    for line in out.stdout.splitlines():
        rank, start, *indices = (int(v) for v in line.split())
        windows[(rank, start)] = indices
    return windows


def planned_window(stub, pb, job, rank, epoch, offset):
    response = stub.PreviewShard(pb.PreviewShardRequest(
        job_id=job, rank=rank, epoch=epoch, offset=offset, limit=WINDOW),
        timeout=120)
    return list(response.indices), response.rank_shard_size


def shardctl_plan_head(bin_dir, address, job, rank, epoch):
    """The first WINDOW lines `shardctl plan` prints."""
    plan = subprocess.Popen(
        [f"{bin_dir}/shardctl", "--coordinator", address, "plan", "--job",
         job, "--epoch", str(epoch), "--rank", str(rank)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    head = []
    for line in plan.stdout:
        head.append(int(line))
        if len(head) == WINDOW:
            break
    plan.kill()
    plan.wait()
    return head


def window_starts(shard_sizes):
    """Global start positions (multiples of WORLD) of the windows at the
    start, middle and end of the smallest shard."""
    smallest = min(shard_sizes)
    offsets = sorted({0, smallest // 2, max(0, smallest - WINDOW)})
    return [offset * WORLD for offset in offsets]


def check_shape(args, daemon, stub, pb, shard, name, spec):
    cpp_job, py_job = f"{name}-cpp", f"{name}-py"
    with shard.Client(daemon.address) as creator:
        creator.create_job(cpp_job, spec)
        creator.create_job(py_job, spec)
    members = join_world(shard, daemon.address, py_job)
    try:
        for epoch in (0, 1):
            sizes = [planned_window(stub, pb, cpp_job, r, epoch, 0)[1]
                     for r in range(WORLD)]
            starts = window_starts(sizes)
            cpp = cpp_windows(args.bin_dir, daemon.address, cpp_job, epoch,
                              starts)
            agree = True
            widest = 0
            for client, membership in members:
                rank = membership.rank
                for start in starts:
                    planned, _ = planned_window(stub, pb, cpp_job, rank,
                                                epoch, start // WORLD)
                    widest = max([widest, *planned])
                    py = python_window(client, membership, epoch, start)
                    if planned != cpp.get((rank, start)) or planned != py:
                        agree = False
                        print(f"  rank {rank} from {start}: plan "
                              f"{planned[:4]}, C++ "
                              f"{cpp.get((rank, start), [])[:4]}, Python "
                              f"{py[:4]}")
            check(agree, f"{name} epoch {epoch}: C++ and Python streams "
                  f"equal the plan (ranks' shards {sizes}, windows at "
                  f"{starts}, largest index {widest})")
        head = shardctl_plan_head(args.bin_dir, daemon.address, py_job, 1, 1)
        check(head == planned_window(stub, pb, cpp_job, 1, 1, 0)[0],
              f"{name}: shardctl plan prints the plan")
    finally:
        for client, _ in members:
            client.close()


def main():
    args = parse_args(__doc__)
    import grpc
    import shard
    from shard.v1 import shard_pb2 as pb
    from shard.v1 import shard_pb2_grpc as pb_grpc
    with ShardDaemon(args.bin_dir) as daemon:
        channel = grpc.insecure_channel(daemon.address)
        stub = pb_grpc.CoordinatorStub(channel)
        for name, spec in shapes(pb, shard):
            check_shape(args, daemon, stub, pb, shard, name, spec)
        channel.close()
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
