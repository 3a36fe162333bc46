#!/usr/bin/python3
"""Real DDP training on variable-length data, per sampler, in one run:
W = 2 processes (Gloo, one CPU thread each) train the small Transformer
encoder of client/python/examples/variable_length_ddp.py on its synthetic
corpus (lognormal lengths, mu 5, sigma 1, clamped to [16, 1024]) over
batches padded to their longest sequence, for --steps steps each, and
report real tokens per second (all ranks), step time p50 / p90 and the
padding fraction:

  torch         DistributedSampler, batches of --batch-size;
  group_by_len  Hugging Face's group_by_length rule, --batch-size;
  token_budget  a token-budget sampler with a strided split (fairseq,
                NeMo), --batch-tokens;
  shard         this project: the example itself under torchrun
                (DistributedBatchSampler, --batch-tokens, the process group
                formed through the coordinator).

The baselines' batches come from tests/bench/run_balanced_batches_bench.py.
Prints a Markdown table with each sampler's tokens/s relative to torch's.

  tests/bench/run_balanced_ddp_bench.py --bin-dir build/bin
      --python-dir build/python [--samples 20000] [--steps 30]
      [--batch-size 8] [--batch-tokens 2048]
"""
import argparse
import json
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "client", "python", "examples",
                       "variable_length_ddp.py")
WORLD = 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def baseline_rank(sampler, rank, port, args):
    """One rank of a baseline sampler: prints rank 0's figures as JSON."""
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    sys.path.insert(0, os.path.dirname(EXAMPLE))
    sys.path.insert(0, HERE)
    import run_balanced_batches_bench as simulated
    import variable_length_ddp as example
    torch.set_num_threads(1)
    sizes = example.lengths(args.samples)
    dataset = example.Sequences(sizes)
    steps = {
        "torch": lambda: simulated.torch_steps(sizes, WORLD, args.batch_size),
        "group_by_len": lambda: simulated.group_by_length_steps(
            sizes, WORLD, args.batch_size),
        "token_budget": lambda: simulated.token_budget_steps(
            sizes, WORLD, args.batch_tokens),
    }[sampler]()
    mine = [np.asarray(step[rank]).tolist() for step in steps]
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=WORLD)
    torch.manual_seed(0)
    model = DistributedDataParallel(example.Encoder())
    batches = (example.pad_to_longest([dataset[i] for i in batch])
               for batch in mine)
    figures = example.train(model, batches, args.steps)
    if rank == 0:
        print(json.dumps(figures), flush=True)
    # Every rank lets go of the group before rank 0, which holds the TCP
    # store, exits.
    del model
    dist.barrier()
    dist.destroy_process_group()


def run_baseline(sampler, args, env):
    port = free_port()
    ranks = [subprocess.Popen(
        [sys.executable, __file__, "--bin-dir", args.bin_dir,
         "--python-dir", args.python_dir, "--samples", str(args.samples),
         "--steps", str(args.steps), "--batch-size", str(args.batch_size),
         "--batch-tokens", str(args.batch_tokens), "--rank-of", sampler,
         str(rank), str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for rank in range(WORLD)]
    return report(ranks, sampler)


def run_shard(args, env):
    sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
    from shardd_process import ShardDaemon
    with ShardDaemon(args.bin_dir) as daemon:
        torchrun = subprocess.Popen(
            # A rendezvous port of its own: --standalone's fixed 29400 would
            # meet another torchrun on this machine.
            [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
             "--rdzv_backend", "c10d", "--rdzv_endpoint",
             f"127.0.0.1:{free_port()}", "--nproc_per_node", str(WORLD),
             "--redirects", "2", "--tee", "2", EXAMPLE,
             "--coordinator", daemon.address, "--job", "bench",
             "--samples", str(args.samples), "--steps", str(args.steps),
             "--batch-tokens", str(args.batch_tokens)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        return report([torchrun], "shard")


def report(processes, sampler):
    figures = None
    for process in processes:
        out, err = process.communicate(timeout=3600)
        if process.returncode != 0:
            sys.exit(f"{sampler}: exit {process.returncode}: {err[-3000:]}")
        lines = [line for line in out.splitlines() if line.startswith("{")]
        if lines:
            figures = json.loads(lines[-1])
    return figures


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--rank-of", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank_of:
        sampler, rank, port = args.rank_of
        baseline_rank(sampler, int(rank), int(port), args)
        return
    env = dict(os.environ, PYTHONPATH=args.python_dir, OMP_NUM_THREADS="1")
    results = {sampler: run_baseline(sampler, args, env)
               for sampler in ("torch", "group_by_len", "token_budget")}
    results["shard"] = run_shard(args, env)
    print("| sampler | steps | real tokens/s | vs torch | step p50 (ms) | "
          "step p90 (ms) | padding |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    base = results["torch"]["tokens_per_s"]
    for sampler, f in results.items():
        print(f"| {sampler} | {f['steps']} | {f['tokens_per_s']:.0f} | "
              f"{f['tokens_per_s'] / base:.2f}x | {f['step_ms_p50']:.0f} | "
              f"{f['step_ms_p90']:.0f} | {100 * f['padding']:.1f} % |")


if __name__ == "__main__":
    main()
