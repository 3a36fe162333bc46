#!/usr/bin/python3
"""Partitions between the leader and etcd: does a cut-off leader answer
anything after its lease lapsed?

3 etcd members and 3 shardd replicas on loopback; each replica reaches each
etcd member through its own TCP proxy, so one replica can be cut off from
etcd alone: its proxies stop forwarding (connections stay open, nothing
moves, as when a network drops packets). For each leader lease in
--leases, --partitions times: while a reader asks the leader directly (a
ListJobs every 10 ms, 200 ms deadline), its proxies freeze; the reader
records the last answer the old leader gave, and another the first answer
a new leader gives; then the proxies thaw and the old leader returns to
standing by. Reports, from the cut: the old leader's last answer and the
new leader's first (p50 / p99 / max), the smallest gap between them, and
how many cuts saw the old leader answer after the new one served (must be
0: two leaders answering at once).

  tests/bench/run_partition_bench.py --bin-dir build/bin --python-dir
      build/python [--partitions 20] [--leases 2,5]
"""
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))


def progress(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def answers(replicas, i):
    ok, _ = replicas.answer(i, timeout=0.2)
    return ok


def cut(replicas, proxies, leader):
    """Freezes the leader's proxies; returns (last answer of the old leader,
    first answer of another replica), seconds from the cut."""
    stop = threading.Event()
    last_old = [None]

    def read_old():
        while not stop.is_set():
            began = time.monotonic()
            if answers(replicas, leader):
                last_old[0] = time.monotonic()
            time.sleep(max(0.0, 0.01 - (time.monotonic() - began)))

    reader = threading.Thread(target=read_old)
    reader.start()
    time.sleep(0.5)
    cut_at = time.monotonic()
    for proxy in proxies[leader]:
        proxy.freeze()
    first_new = None
    while first_new is None and time.monotonic() < cut_at + 60:
        for i in range(len(proxies)):
            if i != leader and answers(replicas, i):
                first_new = time.monotonic()
                break
        else:
            time.sleep(0.01)
    time.sleep(1.0)  # The old leader keeps being asked past the takeover.
    stop.set()
    reader.join()
    for proxy in proxies[leader]:
        proxy.thaw()
    # Back to standing by before the next cut.
    deadline = time.monotonic() + 30
    while answers(replicas, leader) and time.monotonic() < deadline:
        time.sleep(0.1)
    return ((last_old[0] - cut_at) if last_old[0] else None,
            (first_new - cut_at) if first_new else None)


def summary(values):
    from run_replication_bench import percentile
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return (f"{statistics.median(values):.2f} / "
            f"{percentile(values, 0.99):.2f} / {max(values):.2f}")


def run_lease(bin_dir, lease_s, partitions, work):
    from replicated_coordinator import EtcdCluster, Replicas, proxies_to
    with EtcdCluster() as etcd:
        proxies, endpoints = proxies_to(etcd)
        with Replicas(bin_dir, etcd, work, lease=f"{lease_s:g}s",
                      etcd_endpoints=endpoints) as replicas:
            results = []
            for k in range(partitions):
                leader = replicas.leader(deadline_s=60)
                if leader is None:
                    sys.exit("no replica leads")
                old, new = cut(replicas, proxies, leader)
                results.append((old, new))
                progress(f"lease {lease_s:g} s, cut {k + 1}/{partitions}: "
                         f"old leader's last answer "
                         f"{old if old is None else round(old, 2)} s, new "
                         f"leader's first {new if new is None else round(new, 2)} s")
            return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--leases", type=lambda v: [float(x) for x in
                                                     v.split(",")],
                        default=[2.0, 5.0])
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    rows, overlaps = [], 0
    with tempfile.TemporaryDirectory() as work:
        for lease in args.leases:
            results = run_lease(os.path.abspath(args.bin_dir), lease,
                                args.partitions, work)
            gaps = [new - old for old, new in results
                    if old is not None and new is not None]
            overlapping = sum(1 for g in gaps if g <= 0)
            overlaps += overlapping
            rows.append((lease, summary([o for o, _ in results]),
                         summary([n for _, n in results]),
                         f"{min(gaps):.2f}" if gaps else "-", overlapping,
                         len(results)))
    print("\n| lease | cuts | old leader's last answer after the cut | new "
          "leader's first answer | smallest gap | old answered after new |")
    print("| --- | --- | --- | --- | --- | --- |")
    for lease, old, new, gap, overlapping, n in rows:
        print(f"| {lease:g} s | {n} | {old} s | {new} s | {gap} s | "
              f"{overlapping} |")
    return 1 if overlaps else 0


if __name__ == "__main__":
    sys.exit(main())
