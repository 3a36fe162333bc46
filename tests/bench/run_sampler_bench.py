#!/usr/bin/python3
"""Per-rank sampler benchmark: shardd + client vs python and libtorch.

For each N (default 1e6, 1e7, 1e8) and W = 8, measures rank 0's time to the
first index, time to drain the epoch and the peak RSS of the process that
holds the sampler, for:
  shard (cold)  epoch 0 streamed from a fresh job: the coordinator computes
                the epoch order when the stream opens;
  shard (warm)  epoch 1, which the coordinator prepared in the background
                while epoch 0 was consumed (the run waits --warm-pause
                seconds between the two, standing in for an epoch of
                training, and again after it so that no background work
                overlaps the other samplers' runs);
  python        torch.utils.data.distributed.DistributedSampler (python3-torch);
  libtorch      torch::data::samplers::DistributedRandomSampler.
  shard feistel (cold / warm)  the same for the O(1)-memory Feistel
                shuffle at --feistel-sizes (default 1e9), where the other
                samplers cannot run.
Each figure is the median of --repeats runs, all in this one run. Prints a
markdown table, ratios (other / shard-warm) and the streaming bound: one
stream's indices/s (shard warm) against a memcpy of the same index bytes
(4 per index below 2^32 samples), as measured by shard-scale-bench.

  tests/bench/run_sampler_bench.py --bin-dir build/bin [--sizes 1e6,1e7,1e8]
      [--feistel-sizes 1e9]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_of(runs):
    return {k: statistics.median(r[k] for r in runs)
            for k in ("first_index_s", "drain_s", "peak_rss_mib")} | {
                "indices": runs[0]["indices"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--sizes", default="1e6,1e7,1e8")
    parser.add_argument("--world-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warm-pause", type=float, default=5.0)
    parser.add_argument("--feistel-sizes", default="1e9")
    args = parser.parse_args()
    bench = os.path.join(args.bin_dir, "shard-sampler-bench")
    libtorch_bench = os.path.join(args.bin_dir, "libtorch-sampler-bench")
    shardctl = os.path.join(args.bin_dir, "shardctl")
    w = args.world_size
    rows = []
    with ShardDaemon(args.bin_dir) as daemon:
        for size_text in filter(None, args.sizes.split(",")):
            n = int(float(size_text))
            results = {"shard (cold)": [], "shard (warm)": [], "python": [],
                       "libtorch": []}
            for rep in range(args.repeats):
                # python and libtorch first, while the coordinator is idle;
                # after the warm run, pause again so the coordinator's
                # prefetch of epoch 2 is done before the next repeat.
                results["python"].append(measure(
                    ["/usr/bin/python3", os.path.join(HERE, "python_sampler.py"),
                     str(n), str(w), "1"]))
                results["libtorch"].append(measure(
                    [libtorch_bench, "--size", str(n),
                     "--world-size", str(w), "--epoch", "1"]))
                job = f"bench-{n}-{rep}"
                subprocess.run([shardctl, "--coordinator", daemon.address,
                                "create-job", "--job", job, "--size", str(n),
                                "--world-size", str(w)], check=True,
                               capture_output=True)
                shard = [bench, "--coordinator", daemon.address, "--job", job,
                         "--world-size", str(w)]
                results["shard (cold)"].append(measure(shard + ["--epoch", "0"]))
                time.sleep(args.warm_pause)
                results["shard (warm)"].append(measure(shard + ["--epoch", "1"]))
                time.sleep(args.warm_pause)
                print(f"N={n} repeat {rep + 1}/{args.repeats} done",
                      file=sys.stderr, flush=True)
            medians = {k: median_of(v) for k, v in results.items()}
            rows.append((n, medians))

        for size_text in filter(None, args.feistel_sizes.split(",")):
            n = int(float(size_text))
            results = {"shard feistel (cold)": [], "shard feistel (warm)": []}
            for rep in range(args.repeats):
                job = f"bench-feistel-{n}-{rep}"
                subprocess.run([shardctl, "--coordinator", daemon.address,
                                "create-job", "--job", job, "--size", str(n),
                                "--world-size", str(w),
                                "--shuffle-algorithm", "feistel"], check=True,
                               capture_output=True)
                shard = [bench, "--coordinator", daemon.address, "--job", job,
                         "--world-size", str(w)]
                results["shard feistel (cold)"].append(
                    measure(shard + ["--epoch", "0"]))
                results["shard feistel (warm)"].append(
                    measure(shard + ["--epoch", "1"]))
                print(f"feistel N={n} repeat {rep + 1}/{args.repeats} done",
                      file=sys.stderr, flush=True)
            rows.append((n, {k: median_of(v) for k, v in results.items()}))

    print(f"\nW={w}, rank 0, median of {args.repeats} runs\n")
    print("| N | sampler | first index (s) | drain epoch (s) | peak RSS (MiB) |"
          " indices |")
    print("|---|---|---|---|---|---|")
    for n, medians in rows:
        for name, m in medians.items():
            print(f"| {n:.0e} | {name} | {m['first_index_s']:.4f} | "
                  f"{m['drain_s']:.3f} | {m['peak_rss_mib']:.0f} | "
                  f"{m['indices']} |")
    print("\nRatios, other / shard (warm): first index, drain, peak RSS\n")
    print("| N | vs | first index | drain | peak RSS |")
    print("|---|---|---|---|---|")
    for n, medians in rows:
        if "shard (warm)" not in medians:
            continue
        base = medians["shard (warm)"]
        for name in ("shard (cold)", "python", "libtorch"):
            m = medians[name]
            print(f"| {n:.0e} | {name} | "
                  f"{m['first_index_s'] / base['first_index_s']:.1f}x | "
                  f"{m['drain_s'] / base['drain_s']:.2f}x | "
                  f"{m['peak_rss_mib'] / base['peak_rss_mib']:.1f}x |")

    print("\nStreaming bound: one stream vs memcpy of the same index bytes\n")
    print("| N | sampler | stream indices/s | memcpy indices/s | stream / "
          "memcpy |")
    print("|---|---|---|---|---|")
    scale_bench = os.path.join(args.bin_dir, "shard-scale-bench")
    for n, medians in rows:
        for name, m in medians.items():
            if "warm" not in name or "shard" not in name:
                continue
            width = 4 if n <= 2**32 else 8
            copy = measure([scale_bench, "--memcpy-bytes",
                            str(m["indices"] * width)])
            stream_rate = m["indices"] / m["drain_s"]
            copy_rate = copy["bytes_per_s"] / width
            print(f"| {n:.0e} | {name} | {stream_rate:.3g} | "
                  f"{copy_rate:.3g} | 1/{copy_rate / stream_rate:.1f} |")


if __name__ == "__main__":
    main()
