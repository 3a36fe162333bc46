#!/usr/bin/python3
"""Ending a DDP script: the recipe the example and the docs give.

torch 1.13 frees a Gloo process group with the GIL held when a
DistributedDataParallel's reducer drops the last reference to it; if one of
the group's threads still has a tensor to free (a collective that is still
running, or has just completed, on a tensor Python no longer references),
that thread waits for the GIL while the freeing thread waits for it: the
process hangs after its work is done. Two ranks form their group through
the coordinator (shard.torch.init_process_group), train a step, run an
asynchronous all_reduce, and rank 0 ends at once, its tensor and work
dropped (the collective has just completed), while rank 1 waits for it and
ends 1 s later (so that rank 0's end never abandons a collective rank 1
has yet to join: torch 2.14 closes the group's connections at
destroy_process_group):

- the recipe (`del ddp` while the group is registered, then
  `dist.destroy_process_group()`): both ranks exit 0;
- control: the order a script falls into (`dist.destroy_process_group()`,
  then the model freed) hangs rank 0 on torch 1.13, which is what the
  recipe prevents (reported, not required: torch 2.14 does not hang).
Exit status 0 when every check passes.
"""
import os
import subprocess
import sys
import time

from harness import ShardDaemon, check, exit_code, parse_args  # noqa: E402


# Run as a child process: one rank, ending in `order`.
def rank_main(address, job, order):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    import shard.torch
    sampler = shard.torch.DistributedShardSampler(
        range(10), coordinator=address, job=job, num_replicas=2,
        member=f"rank-{os.environ['SHARD_TEST_RANK']}")
    shard.torch.init_process_group(sampler, backend="gloo")
    ddp = DistributedDataParallel(torch.nn.Linear(2, 1))
    ddp(torch.ones(1, 2)).sum().backward()
    tensor = torch.ones(4)
    work = dist.all_reduce(tensor, async_op=True)
    if sampler.rank == 1:
        work.wait()
        time.sleep(1.0)  # Rank 1 ends 1 s after rank 0.
    del tensor, work
    if order == "recipe":
        del ddp
        dist.destroy_process_group()
    else:
        dist.destroy_process_group()
        del ddp
    sampler.close()
    print(f"rank {sampler.rank} ended", flush=True)


def run_ranks(args, address, job, order, wait_s):
    """Starts both ranks; their exit codes (None: still running after
    `wait_s`, then killed) and outputs."""
    env = {**os.environ, "PYTHONPATH": args.python_dir}
    procs = [subprocess.Popen(
        [sys.executable, __file__, "--python-dir", args.python_dir,
         "--rank-of", address, job, order],
        env={**env, "SHARD_TEST_RANK": str(i)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True) for i in range(2)]
    deadline = time.monotonic() + wait_s
    codes, outputs = [], []
    for proc in procs:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            codes.append(proc.returncode)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            codes.append(None)
        outputs.append(proc.stdout.read())
    return codes, outputs


def main():
    args = parse_args(
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument(
            "--rank-of", nargs=3, metavar=("ADDRESS", "JOB", "ORDER")),
        bin_dir_required=False)
    if args.rank_of:
        rank_main(*args.rank_of)
        return 0
    with ShardDaemon(args.bin_dir) as daemon:
        codes, outputs = run_ranks(args, daemon.address, "recipe", "recipe",
                                   wait_s=120)
        check(codes == [0, 0],
              f"with the recipe both ranks end and exit 0 (exit codes "
              f"{codes}) {outputs[0][-300:]} {outputs[1][-300:]}")
        codes, outputs = run_ranks(args, daemon.address, "naive", "naive",
                                   wait_s=20)
        if codes == [0, 0]:
            print("note    control: the naive order ended: this torch frees "
                  "the group safely", flush=True)
        else:
            check(None in codes and set(codes) <= {None, 0},
                  f"control: the naive order hangs rank 0 on this torch "
                  f"(exit codes {codes}) {outputs[0][-300:]} "
                  f"{outputs[1][-300:]}")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
