#!/usr/bin/python3
"""End to end: a replicated coordinator (3 etcd members, 3 shardd replicas,
leader lease 2 s) and the clients that ride through its failures.

1. Leader kills: 2 shard-train ranks (Gloo, committing their progress with
   a checkpoint every 40 steps) train while the leader is
   SIGKILLed 3 times (each killed replica restarts as a standby). Both exit
   0 with equal parameters, each rank trained exactly its planned indices
   of each epoch (once), and each failover's time from the kill to the
   first call a new leader serves is at most the lease + 2 s.
2. A paused leader: SIGSTOP past its lease; a new leader serves; a join
   parked on the paused one (the client's keepalive following the lease)
   moves on and is answered once the world forms; a call
   sent to the paused one meanwhile is answered UNAVAILABLE after SIGCONT
   (it answers nothing as leader), a stream it served ends UNAVAILABLE at
   its next chunk (not streamed on, nor cancelled), the job it named never
   exists, every
   record in etcd was written exactly once (a deposed leader wrote
   nothing), and shardd --check-etcd finds the history sound and starting
   from a snapshot (replicas snapshot every 50 records).
3. etcd quorum: with 1 of 3 etcd members killed 2 trainers keep committing;
   with 2 of 3 killed a write fails UNAVAILABLE naming etcd; with quorum
   back the trainers finish by themselves, each rank having trained exactly
   its planned indices; every acknowledged job is still there.
4. Every replica killed at once and restarted: the jobs and their
   committed progress come back from etcd alone.
5. The Python client, given the list of replicas, streams a shard across a
   leader kill: the indices equal the plan.
6. A hung etcd member: each of the 3 in turn SIGSTOPped for 6 s while a
   job commits in a loop (the raft followers, then the raft leader); the
   leader keeps its leadership through the followers' stops (no replica
   logs a change) and every commit is acknowledged.
7. A graceful stop: the leader SIGTERMed while a stream it serves is held
   open; it gives its leadership up before its server drains (its log
   says so, in that order), another replica serves, and it exits 0.
8. The leader key deleted behind the leader's back (as etcd does when it
   revokes a lease early, etcd-io/etcd#15247: the lease renews fine): the
   leader stops answering at once and another leads; the old one answers
   nothing as leader.
Prints "N passed, N failed".
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from trainer_e2e_test import (RESULTS, check, trainer_cmd,  # noqa: E402
                              verify_exact_training)
from trainer_processes import finish, start_trainers  # noqa: E402

LEASE_S = 2.0


def failover_time(replicas, killed):
    """Seconds until a replica other than `killed` serves."""
    began = time.monotonic()
    leader = replicas.leader(deadline_s=30, skip=(killed,))
    return leader, time.monotonic() - began


def committed(client, job):
    """(epoch, position) the job's ranks committed ((0, 0) before the job
    exists)."""
    import shard
    try:
        got = client.get_job(job)
    except shard.errors.NotFoundError:
        return 0, 0
    return got.committed_epoch, got.committed_position


def start_training(bin_dir, coordinator, job, size, epochs, work):
    os.makedirs(work, exist_ok=True)
    members = [f"{job}-m{i}" for i in range(2)]
    procs = start_trainers(
        [trainer_cmd(bin_dir, coordinator, job, m, 2, size, work,
                     ["--epochs", str(epochs), "--batch-size", "8",
                      "--checkpoint-dir", os.path.join(work, "ckpt"),
                      "--checkpoint-every", "40"])
         for m in members], work, job)
    return members, procs


def leader_kills(bin_dir, replicas, work):
    job, size, epochs = "failover", 48000, 2
    members, procs = start_training(bin_dir, replicas.coordinator, job, size,
                                    epochs, work)
    times = []
    while len(times) < 3 and any(p.poll() is None for p, _ in procs):
        time.sleep(2.0)
        leader = replicas.leader()
        replicas.kill(leader)
        _, took = failover_time(replicas, leader)
        times.append(took)
        replicas.start(leader)
    training = any(p.poll() is None for p, _ in procs)
    outputs = finish(procs)
    check(len(times) == 3 and training,
          f"leader kills: 3 kills while the trainers ran ({len(times)})")
    check(all(t <= LEASE_S + 2 for t in times),
          "leader kills: each failover served within lease + 2 s "
          f"({', '.join(f'{t:.2f}' for t in times)} s)")
    # shardctl status with the list: one leader, the others standing by
    # (the replica restarted last has had a moment to find the leader).
    time.sleep(1.0)
    status = subprocess.run(
        [f"{bin_dir}/shardctl", "--coordinator", replicas.coordinator,
         "status"], capture_output=True, text=True)
    roles = re.findall(r"^(127\.0\.0\.1:\d+)\s+(leader|not serving)",
                       status.stdout, re.M)
    check(status.returncode == 0 and len(roles) == 3 and
          sum(role == "leader" for _, role in roles) == 1 and
          status.stdout.count("standing by; the leader is") == 2,
          f"shardctl status shows the replicas' roles:\n{status.stdout}")
    check_standby_trailers(replicas)
    verify_exact_training(bin_dir, replicas.coordinator, job, members, epochs, work,
                    "leader kills", outputs)


def check_standby_trailers(replicas):
    """A standby's refusal names the leader (shard-leader) and says that a
    replica answered (shard-standby), which clients retry at a short fixed
    pace rather than with a growing backoff."""
    from shard.v1 import shard_pb2 as pb
    from shard.v1 import shard_pb2_grpc as pb_grpc
    leader = replicas.leader()
    standby = next(i for i in range(len(replicas.addresses)) if i != leader)
    with grpc.insecure_channel(replicas.addresses[standby]) as channel:
        try:
            pb_grpc.CoordinatorStub(channel).ListJobs(pb.ListJobsRequest(),
                                                      timeout=10)
            trailers, code = {}, grpc.StatusCode.OK
        except grpc.RpcError as error:
            trailers = dict(error.trailing_metadata() or ())
            code = error.code()
    check(code == grpc.StatusCode.UNAVAILABLE and
          trailers.get("shard-standby") == "1" and
          trailers.get("shard-leader") == replicas.addresses[leader],
          f"a standby answers UNAVAILABLE with the shard-leader and "
          f"shard-standby trailers ({code}, {trailers})")


def open_raw_stream(address, membership):
    """StreamShard of rank 0, epoch 0 on one replica, with no client library
    in between (its own reading of codes included), after its first chunk:
    (channel, call)."""
    from shard.v1 import shard_pb2 as pb
    from shard.v1 import shard_pb2_grpc as pb_grpc
    channel = grpc.insecure_channel(address)
    call = pb_grpc.CoordinatorStub(channel).StreamShard(
        pb.StreamShardRequest(job_id=membership.job_id,
                              generation=membership.generation, rank=0,
                              epoch=0, max_chunk_indices=64), timeout=60)
    next(call)
    return channel, call


def read_to_end(call):
    """(the stream's final code, chunks received until then)."""
    chunks = 0
    try:
        for _ in call:
            chunks += 1
        return grpc.StatusCode.OK, chunks
    except grpc.RpcError as error:
        return error.code(), chunks


def paused_leader(bin_dir, replicas, etcd):
    import shard
    from shard.v1 import shard_pb2 as pb
    from shard.v1 import shard_pb2_grpc as pb_grpc
    client = shard.Client(replicas.coordinator, retry_deadline=30)
    client.create_job("before-pause", shard.job_spec(100, 2))
    reader = client.join("held-across-pause", "reader", wait=30,
                         spec=shard.job_spec(10**7, 1, shuffle=False))
    check(client._replicas.keepalive_ms == (500, 1000),
          f"pause: the client's keepalive follows the {LEASE_S:g} s lease "
          f"its answers name ({client._replicas.keepalive_ms} ms)")
    parked = {}

    def park_a_join():
        # One call (no progress rounds) parked until the world fills.
        parked["membership"] = client.join(
            "parked-across-pause", "first", wait=30, progress=None,
            spec=shard.job_spec(100, 2))
    parker = threading.Thread(target=park_a_join)
    parker.start()
    # Parked past gRPC's default of 2 pings without data at the default
    # keepalive (3 s), after which it used to stop pinging.
    time.sleep(7)
    paused = replicas.leader()
    channel, held = open_raw_stream(replicas.addresses[paused], reader)
    replicas.signal(paused, signal.SIGSTOP)
    outcome = {}

    def send_to_paused():
        with grpc.insecure_channel(replicas.addresses[paused]) as channel:
            try:
                pb_grpc.CoordinatorStub(channel).CreateJob(
                    pb.CreateJobRequest(job_id="sent-to-paused",
                                        spec=shard.job_spec(100, 2)),
                    timeout=30)
                outcome["code"] = grpc.StatusCode.OK
            except grpc.RpcError as error:
                outcome["code"] = error.code()
                outcome["message"] = error.details()

    sender = threading.Thread(target=send_to_paused)
    sender.start()
    began = time.monotonic()
    leader = replicas.leader(deadline_s=30, skip=(paused,))
    took = time.monotonic() - began
    check(leader is not None and took <= LEASE_S + 2,
          f"pause: a new leader serves {took:.2f} s after SIGSTOP")
    client.create_job("during-pause", shard.job_spec(100, 2))
    with shard.Client(replicas.coordinator, retry_deadline=30) as second:
        second.join("parked-across-pause", "second", wait=30, progress=None)
    parker.join(timeout=30)
    joined = parked.get("membership")
    check(joined is not None and joined.world_size == 2,
          f"pause: a join parked on the paused leader moves on and is "
          f"answered once the world forms on the new one ({joined})")
    time.sleep(LEASE_S)  # Well past the paused leader's lease.
    replicas.signal(paused, signal.SIGCONT)
    # 156,250 chunks of 64 in all: read at once, the stream must end at the
    # chunk after those already in flight, refused like any call.
    code, chunks = read_to_end(held)
    channel.close()
    check(code == grpc.StatusCode.UNAVAILABLE and chunks < 20000,
          f"pause: a stream the paused leader served ends {code.name} after "
          f"{chunks} more chunks of 64 once it resumed (UNAVAILABLE, at "
          "most those in flight)")
    sender.join(timeout=30)
    check(outcome.get("code") == grpc.StatusCode.UNAVAILABLE,
          f"pause: the call sent to the paused leader is refused after "
          f"SIGCONT ({outcome})")
    served, _ = replicas.answer(paused)
    check(not served, "pause: the resumed replica answers nothing as leader")
    kept = [client.get_job(j).job_id for j in ("before-pause", "during-pause")]
    try:
        client.get_job("sent-to-paused")
        refused_absent = False
    except shard.errors.NotFoundError:
        refused_absent = True
    check(len(kept) == 2 and refused_absent,
          "pause: acknowledged jobs kept, the refused one absent")
    versions = etcd.record_versions()
    check(versions and all(v == 1 for v in versions.values()),
          f"pause: each of {len(versions)} batches of records in etcd "
          "written once")
    checked = subprocess.run(
        [f"{bin_dir}/shardd", "--check-etcd", "--etcd-endpoints",
         etcd.endpoints, "--snapshot-every", "50"],
        capture_output=True, text=True)
    check(checked.returncode == 0 and "is sound" in checked.stdout and
          "bound 2 x --snapshot-every = 100: within it" in checked.stdout,
          f"pause: --check-etcd: sound, footprint within its bound: "
          f"{checked.stdout.strip()}")
    snapshot = re.search(r"snapshot at record (\d+)", checked.stdout)
    check(snapshot is not None and int(snapshot.group(1)) > 0,
          "pause: the leaders kept snapshots in etcd (records before them "
          "deleted)")
    client.close()


def hung_etcd_member(replicas, etcd, work):
    """Each etcd member in turn SIGSTOPped (a frozen VM, a stalled disk:
    connections stay open, nothing answers) while a job commits in a loop,
    the two raft followers first (in list order), then the raft leader:
    through the followers' stops the leader stays the leader, and every
    commit is acknowledged throughout. (A raft leader that resumes after a
    pause longer than the lease revokes every lease in etcd before 3.4.28
    and 3.5.11, etcd-io/etcd#15247, so the replicas may fail over then;
    fenced, nothing lost.)"""
    import shard
    client = shard.Client(replicas.coordinator, retry_deadline=30)
    membership = client.join("hung-etcd", "m0",
                             spec=shard.job_spec(1_000_000, 1), wait=30)
    heartbeat = client.start_heartbeat(membership, 1.0)
    leader = replicas.leader()
    logs = [os.path.join(work, f"shardd-{i}.log")
            for i in range(len(replicas.addresses))]
    log_sizes = [os.path.getsize(log) for log in logs]
    latencies, errors, done = [], [], threading.Event()

    def commit_loop():
        position = 0
        while not done.is_set():
            position += 1
            began = time.monotonic()
            try:
                client.commit(membership, 0, position)
                latencies.append(time.monotonic() - began)
            except shard.ShardError as error:
                errors.append(error)
            time.sleep(0.02)

    committer = threading.Thread(target=commit_loop)
    committer.start()
    raft_leader = etcd.raft_leader()
    order = [m for m in range(3) if m != raft_leader] + (
        [raft_leader] if raft_leader is not None else [])
    changes, kept = None, False
    for member in order:
        if member == raft_leader:
            changes = leadership_changes(logs, log_sizes)
            kept = replicas.answer(leader)[0]
        time.sleep(1.0)
        etcd.signal(member, signal.SIGSTOP)
        time.sleep(6.0)
        etcd.signal(member, signal.SIGCONT)
    time.sleep(1.0)
    done.set()
    committer.join()
    heartbeat.stop()
    check(raft_leader is not None and kept and not changes,
          f"hung etcd member: the leader kept its leadership through each "
          f"raft follower's SIGSTOP ({changes or 'no change'}; then the raft "
          f"leader's: {leadership_changes(logs, log_sizes) or 'no change'})")
    check(not errors and len(latencies) > 100,
          f"hung etcd member: all {len(latencies)} commits acknowledged "
          f"(slowest {max(latencies or [0]):.2f} s; errors: {errors[:3]})")
    client.close()


def leadership_changes(logs, sizes):
    """The lines of the replicas' logs after `sizes` that say a leadership
    began or ended."""
    from replicated_coordinator import leadership_lines
    return [line[:160] for log, size in zip(logs, sizes)
            for line in leadership_lines(log, size)]


def graceful_stop(replicas, work):
    """SIGTERM of the leader while it serves a stream held open: it hands
    its leadership over before its server drains, so that a standby serves
    without waiting for the drain. Whether the old process is still
    draining when the successor answers is a race (stepping down lets its
    streams go at once), so the order is read from its log instead."""
    import shard
    client = shard.Client(replicas.coordinator, retry_deadline=30)
    membership = client.join("graceful", "reader", wait=30,
                             spec=shard.job_spec(10**7, 1, shuffle=False))
    stream = client.stream(membership, 0, prefetch_bytes=16 << 10,
                           chunk_indices=1024)
    next(stream)  # Open; the reader takes nothing more, so it stays open.
    time.sleep(0.5)
    leader = replicas.leader()
    log_path = os.path.join(work, f"shardd-{leader}.log")
    log_size = os.path.getsize(log_path)
    replicas.terminate(leader)
    successor = replicas.leader(deadline_s=30, skip=(leader,))
    exit_code = replicas.wait(leader)
    order = drain_events(log_path, log_size)
    handed_over_first = order == ["gave up the leadership", "stopped"]
    check(successor is not None and handed_over_first and exit_code == 0,
          f"graceful stop: the SIGTERMed leader gave its leadership up "
          f"before its drain ended and a standby serves (successor "
          f"{successor}, its log after the SIGTERM: {order}, exit "
          f"{exit_code})")
    stream.close()
    replicas.start(leader)
    client.close()


def drain_events(log_path, offset):
    """The handover and the end of the drain, in the order the log after
    `offset` has them ("stopped" is the last line shardd logs)."""
    events = []
    with open(log_path) as f:
        f.seek(offset)
        for line in f:
            if "gave up the leadership" in line:
                events.append("gave up the leadership")
            elif line.rstrip().endswith("Z stopped"):
                events.append("stopped")
    return events


def deleted_leader_key(replicas, etcd):
    old = replicas.leader()
    etcd.etcdctl("del", "/shard/leader")
    new = replicas.leader(deadline_s=30, skip=(old,))
    served, _ = replicas.answer(old)
    check(new is not None and not served,
          f"deleted leader key: replica {new} leads, the old leader {old} "
          f"answers nothing as leader (answered: {served})")


def etcd_quorum(bin_dir, replicas, etcd, work):
    import shard
    job, size, epochs = "quorum", 200000, 1
    members, procs = start_training(bin_dir, replicas.coordinator, job, size,
                                    epochs, work)
    client = shard.Client(replicas.coordinator, retry_deadline=30)
    while committed(client, job) == (0, 0):  # Training has begun.
        time.sleep(0.2)
    etcd.kill(2)
    before = committed(client, job)
    # Commits go on once etcd has a raft leader among the two left (an
    # election when the killed member led; seconds on a loaded machine).
    until = time.monotonic() + 15
    after = committed(client, job)
    while after <= before and time.monotonic() < until:
        time.sleep(0.5)
        after = committed(client, job)
    check(after > before, f"quorum: 1 of 3 etcd members down, commits go on "
                          f"({before} -> {after})")
    etcd.kill(1)
    impatient = shard.Client(replicas.coordinator, retry_deadline=4)
    try:
        impatient.create_job("no-quorum", shard.job_spec(100, 2))
        failed = None
    except shard.ShardError as error:
        failed = error
    check(failed is not None and failed.code == grpc.StatusCode.UNAVAILABLE
          and "etcd" in str(failed),
          f"quorum: 2 of 3 down, a write fails UNAVAILABLE naming etcd "
          f"({failed})")
    time.sleep(3)
    etcd.start(1)
    etcd.start(2)
    outputs = finish(procs)
    verify_exact_training(bin_dir, replicas.coordinator, job, members, epochs, work,
                    "quorum", outputs)
    impatient.close()
    client.close()


def all_replicas_restart(replicas):
    """Every replica SIGKILLed at once, then restarted: with no local disk
    the state comes back from etcd alone."""
    import shard
    client = shard.Client(replicas.coordinator, retry_deadline=30)
    jobs = ["failover", "before-pause", "during-pause"]
    expected = {j: client.get_job(j).committed_epoch for j in jobs}
    client.close()
    for i in range(len(replicas.addresses)):
        replicas.kill(i)
    for i in range(len(replicas.addresses)):
        replicas.start(i)
    client = shard.Client(replicas.coordinator, retry_deadline=30)
    got = {j: client.get_job(j).committed_epoch for j in jobs}
    check(got == expected, "all replicas killed at once and restarted: the "
                           f"jobs and their progress come back from etcd "
                           f"({got})")
    client.close()


def python_stream(replicas):
    import shard
    import numpy as np
    client = shard.Client(replicas.coordinator, retry_deadline=30)
    size = 3_000_000
    membership = client.join("py-stream", "reader",
                             spec=shard.job_spec(size, 1), wait=30)
    stream = client.stream(membership, 0, prefetch_bytes=64 << 10,
                           chunk_indices=4096)
    got, killed = [], None
    for chunk in stream:
        got.append(chunk)
        if killed is None and sum(len(c) for c in got) > size // 4:
            killed = replicas.leader()
            replicas.kill(killed)
    received = np.concatenate(got)
    expected = np.frombuffer(b"".join(
        c.tobytes() for c in client.stream(membership, 0)), dtype=np.uint64)
    check(killed is not None and np.array_equal(received, expected) and
          len(received) == size,
          f"python stream: {len(received)} indices across a leader kill "
          f"equal the plan")
    replicas.start(killed)
    client.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    from replicated_coordinator import EtcdCluster, Replicas
    bin_dir = os.path.abspath(args.bin_dir)
    with tempfile.TemporaryDirectory() as work:
        with EtcdCluster() as etcd, \
                Replicas(bin_dir, etcd, work, lease=f"{LEASE_S:g}s",
                         shutdown_grace="3s") as reps:
            leader_kills(bin_dir, reps, os.path.join(work, "kills"))
            paused_leader(bin_dir, reps, etcd)
            all_replicas_restart(reps)
            python_stream(reps)
            hung_etcd_member(reps, etcd, work)
            graceful_stop(reps, work)
            deleted_leader_key(reps, etcd)
            etcd_quorum(bin_dir, reps, etcd, os.path.join(work, "quorum"))
        if RESULTS["failed"]:
            for name in sorted(os.listdir(work)):
                if name.startswith("shardd-"):
                    print(f"--- {name}")
                    print(open(os.path.join(work, name)).read()[-4000:])
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
