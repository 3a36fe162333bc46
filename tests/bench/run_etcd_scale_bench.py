#!/usr/bin/python3
"""A large job on the replicated coordinator: 3 etcd members and 3 shardd
replicas on this machine (loopback, leader lease 2 s, a snapshot every
10,000 records, shardd's defaults otherwise but a member lease of 30 min,
since the benchmark's members do not heartbeat). For each W in --members,
on a fresh etcd cluster:

1. Join storm (shard-join-storm-bench against the leader): W members join
   a job of world size W at once: the time until every join was answered
   with the formed world, and another job's heartbeat p50 / p99 / max
   meanwhile. Then W more members join a job that never fills and are
   cancelled; they stay members, so the state holds 2W members.
2. etcd's footprint: the database size and the part in use (the largest
   of the 3 members), the keys under the prefix, and what
   `shardd --check-etcd` reports (records after the snapshot in force, the
   snapshot's bytes, whether within the bound).
3. Failover: the leader is SIGKILLed; the time until another replica
   serves, until it answers GetJob for the job of W with its W members,
   and the new leader's resident memory.

Prints a Markdown table.

  tests/bench/run_etcd_scale_bench.py --bin-dir build/bin --python-dir
      build/python [--members 16000,32000,100000]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from fresh_daemon_runs import rss_mib  # noqa: E402
from run_replication_bench import progress, run_client  # noqa: E402

LEADER_LEASE_S = 2.0


def etcd_footprint(etcd):
    status = json.loads(etcd.etcdctl("endpoint", "status", "-w", "json"))
    keys = etcd.etcdctl("get", "--prefix", "/shard/", "--keys-only")
    return {"db_mib": max(s["Status"]["dbSize"] for s in status) / 2**20,
            "db_in_use_mib": max(s["Status"].get("dbSizeInUse", 0)
                                 for s in status) / 2**20,
            "keys": len([k for k in keys.splitlines() if k.strip()])}


def check_etcd(bin_dir, etcd):
    """shardd --check-etcd's figures: records after the snapshot, the
    snapshot's bytes and whether the records are within the bound."""
    out = subprocess.run(
        [f"{bin_dir}/shardd", "--check-etcd", "--etcd-endpoints",
         etcd.endpoints], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"shardd --check-etcd failed: {out.stdout}{out.stderr}")
    sound = re.search(r"snapshot at record (\d+), (\d+) bytes, then (\d+) "
                      r"records", out.stdout)
    return {"check_line": next(line for line in out.stdout.splitlines()
                               if " is sound: " in line),
            "snapshot_record": int(sound.group(1)),
            "snapshot_mib": int(sound.group(2)) / 2**20,
            "records_after": int(sound.group(3)),
            "within_bound": "within it" in out.stdout}


def members_of(replicas, i, job, timeout):
    """GetJob's member count from replica i alone; None if it does not
    answer."""
    import grpc
    from shard.v1 import shard_pb2 as pb
    from shard.v1 import shard_pb2_grpc as pb_grpc
    with grpc.insecure_channel(
            replicas.addresses[i],
            options=[("grpc.max_receive_message_length", 256 << 20)]) \
            as channel:
        try:
            answer = pb_grpc.CoordinatorStub(channel).GetJob(
                pb.GetJobRequest(job_id=job), timeout=timeout)
            return answer.joined_members
        except grpc.RpcError:
            return None


def failover(replicas, job, members):
    """Kills the leader; seconds until another replica serves and until it
    answers GetJob with `members` members, and its RSS."""
    leader = replicas.leader()
    replicas.kill(leader)
    began = time.monotonic()
    new = replicas.leader(deadline_s=120, skip=(leader,))
    if new is None:
        sys.exit("no replica leads after the kill")
    served = time.monotonic() - began
    while members_of(replicas, new, job, timeout=5) != members:
        if time.monotonic() - began > 120:
            sys.exit(f"the new leader does not show {members} members")
        time.sleep(0.05)
    answered = time.monotonic() - began
    return {"served_s": served, "get_job_s": answered,
            "new_leader_rss_mib": rss_mib(replicas.pid(new))}


def measure(bin_dir, members):
    from replicated_coordinator import EtcdCluster, Replicas
    with tempfile.TemporaryDirectory(prefix="shard-etcd-scale-") as work, \
            EtcdCluster() as etcd, Replicas(
                bin_dir, etcd, work, lease=f"{LEADER_LEASE_S:.0f}s",
                snapshot_every=10000, extra_args=("--lease", "30m")) \
            as replicas:
        leader = replicas.leader(deadline_s=60)
        if leader is None:
            sys.exit("no replica leads")
        storm = run_client(bin_dir, "shard-join-storm-bench",
                           replicas.addresses[leader], replicas.pid(leader),
                           "joins", members)
        leader_rss = rss_mib(replicas.pid(leader))
        footprint = etcd_footprint(etcd)
        checked = check_etcd(bin_dir, etcd)
        progress(f"W = {members}: {checked['check_line']}")
        moved = failover(replicas, f"bench-storm-{members}", members)
        return {"members": members, **storm, "leader_rss_mib": leader_rss,
                **footprint, **checked, **moved}


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--members", default="16000,32000,100000")
    args = parser.parse_args()
    sizes = [int(w) for w in args.members.split(",")]
    if not sizes or min(sizes) < 1:
        parser.error("--members takes sizes of at least 1")
    sys.path.insert(0, args.python_dir)
    rows = []
    for members in sizes:
        progress(f"W = {members} ...")
        rows.append(measure(args.bin_dir, members))
        progress(json.dumps(rows[-1]))
    print("\n| W | world formed in | other job's heartbeat p50 / p99 / max "
          "during the storm | leader RSS, 2W members | etcd db / in use | "
          "keys | snapshot (record) | records after it | new leader serves "
          "after a kill -9 | its GetJob shows W members after | new leader "
          "RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | "
          "--- |")
    for r in rows:
        print(f"| {r['members']:,} | {r['form_s']:.2f} s | "
              f"{r['storm_hb_p50_ms']:.1f} / {r['storm_hb_p99_ms']:.1f} / "
              f"{r['storm_hb_max_ms']:.1f} ms | {r['leader_rss_mib']:,.0f} MiB "
              f"| {r['db_mib']:.1f} / {r['db_in_use_mib']:.1f} MiB | "
              f"{r['keys']} | {r['snapshot_mib']:.2f} MiB "
              f"({r['snapshot_record']:,}) | {r['records_after']:,} "
              f"({'within' if r['within_bound'] else 'OVER'} the bound) | "
              f"{r['served_s']:.2f} s | {r['get_job_s']:.2f} s | "
              f"{r['new_leader_rss_mib']:,.0f} MiB |")


if __name__ == "__main__":
    main()
