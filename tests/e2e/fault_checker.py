#!/usr/bin/python3
"""A fault checker for the replicated coordinator: a random schedule of the
faults clusters have, under a workload, and the promises checked after.

Cluster: 3 etcd members and 3 shardd replicas on loopback (lease 2 s),
each replica reaching each member through its own TCP proxy. Faults, one
at a time with a random pause between (the seed is printed; --seed
replays a schedule): kill -9 of the leader or of a standby (it restarts),
SIGSTOP of the leader past its lease then SIGCONT, SIGTERM of the leader
(a rolling restart), the leader cut off from etcd (its proxies stop
forwarding) until another leads, SIGSTOP of an etcd member for a few
seconds, kill -9 of an etcd member (it restarts), quorum loss (2 etcd
members killed) and its return.
Workload, all through the address list: pairs of shard-train ranks (Gloo,
2 DataLoader worker processes, committing, a checkpoint every 40 steps),
one job after another; a Python writer creating and deleting jobs; a
Python member committing its progress in a loop; a Python member setting
and reading rendezvous keys.
Checked after: no two replicas admitted calls as leader at the same
instant (each replica logs the CLOCK_MONOTONIC time and leadership
revision of every call and streamed chunk it admits, shardd --answer-log;
each leadership's first admission must come after the last of every
earlier one, while a prober asks every replica every 20 ms); every acknowledged create is present unless its
delete was acknowledged; no acknowledged commit was lost (the job's committed
position is at least the last one acknowledged); every trainer exited 0
and each rank trained exactly its planned indices of each epoch, once; no
replica exited but those the schedule stopped (a SIGTERMed one exits 0).
Prints the seed, the faults run and "N passed, N failed"; exit 1 on a
failure.

  tests/e2e/fault_checker.py --bin-dir build/bin --python-dir build/python
      [--seconds 180] [--seed N]
"""
import argparse
import os
import random
import signal
import sys
import tempfile
import threading
import time
import traceback

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from trainer_e2e_test import (RESULTS, check, trainer_cmd,  # noqa: E402
                              verify_exact_training)
from trainer_processes import finish, start_trainers  # noqa: E402

LEASE_S = 2.0


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


class Faults:
    """The schedule's faults on `replicas` and `etcd`; each returns when
    the cluster has a leader again (or quorum is back)."""

    def __init__(self, replicas, etcd, proxies, rng):
        self.replicas, self.etcd, self.rng = replicas, etcd, rng
        self.proxies = proxies  # Each replica's proxies to etcd.
        self.stopped = set()  # Replicas the schedule stopped on purpose.
        self.counts = {}

    def run_one(self):
        name, fault = self.rng.choice([
            ("kill leader", self.kill_leader),
            ("kill standby", self.kill_standby),
            ("pause leader", self.pause_leader),
            ("SIGTERM leader", self.term_leader),
            ("partition leader from etcd", self.partition_leader),
            ("pause etcd member", self.pause_etcd_member),
            ("kill etcd member", self.kill_etcd_member),
            ("etcd quorum loss", self.quorum_loss)])
        log(f"fault: {name}")
        fault()
        self.counts[name] = self.counts.get(name, 0) + 1

    def _leader(self):
        leader = self.replicas.leader(deadline_s=60)
        if leader is None:
            raise RuntimeError("no replica leads")
        return leader

    def _restart(self, i):
        self.replicas.start(i)
        self.stopped.discard(i)

    def kill_leader(self):
        leader = self._leader()
        self.stopped.add(leader)
        self.replicas.kill(leader)
        self.replicas.leader(deadline_s=60, skip=(leader,))
        self._restart(leader)

    def kill_standby(self):
        leader = self._leader()
        standby = self.rng.choice([i for i in range(3) if i != leader])
        self.stopped.add(standby)
        self.replicas.kill(standby)
        time.sleep(self.rng.uniform(0.5, 3.0))
        self._restart(standby)

    def pause_leader(self):
        leader = self._leader()
        self.replicas.signal(leader, signal.SIGSTOP)
        self.replicas.leader(deadline_s=60, skip=(leader,))
        time.sleep(self.rng.uniform(0.0, LEASE_S))
        self.replicas.signal(leader, signal.SIGCONT)

    def term_leader(self):
        leader = self._leader()
        self.stopped.add(leader)
        self.replicas.terminate(leader)
        self.replicas.leader(deadline_s=60, skip=(leader,))
        code = self.replicas.wait(leader)
        check(code == 0, f"a SIGTERMed leader exits 0 ({code})")
        self._restart(leader)

    def partition_leader(self):
        leader = self._leader()
        for proxy in self.proxies[leader]:
            proxy.freeze()
        self.replicas.leader(deadline_s=60, skip=(leader,))
        time.sleep(self.rng.uniform(0.0, LEASE_S))
        for proxy in self.proxies[leader]:
            proxy.thaw()

    def pause_etcd_member(self):
        member = self.rng.randrange(3)
        self.etcd.signal(member, signal.SIGSTOP)
        time.sleep(self.rng.uniform(1.0, 6.0))
        self.etcd.signal(member, signal.SIGCONT)

    def kill_etcd_member(self):
        member = self.rng.randrange(3)
        self.etcd.kill(member)
        time.sleep(self.rng.uniform(1.0, 5.0))
        self.etcd.start(member)

    def quorum_loss(self):
        members = self.rng.sample(range(3), 2)
        for member in members:
            self.etcd.kill(member)
        time.sleep(self.rng.uniform(1.0, 5.0))
        for member in members:
            self.etcd.start(member)
        self._leader()


class Workload:
    """The Python clients of the checker, each on its own thread, and what
    the coordinator acknowledged to them."""

    def __init__(self, coordinator):
        import shard
        self.shard = shard
        self.client = shard.Client(coordinator, retry_deadline=120)
        self.created, self.deleted = set(), set()
        self.last_commit = 0
        self.unexpected = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=f) for f in
                         (self._create_and_delete, self._commit,
                          self._store)]
        for thread in self._threads:
            thread.start()

    def _create_and_delete(self):
        shard, n = self.shard, 0
        while not self._stop.wait(0.05):
            job = f"fc-created-{n}"
            n += 1
            try:
                self.client.create_job(job, shard.job_spec(100, 1))
                self.created.add(job)
                if n % 3 == 0:
                    self.client.delete_job(job, force=True)
                    self.deleted.add(job)
            except shard.ShardError as error:
                self._record(error)

    def _commit(self):
        shard = self.shard
        membership = self.client.join("fc-commits", "m0", wait=120,
                                      spec=shard.job_spec(10**9, 1))
        heartbeat = self.client.start_heartbeat(membership, 0.5)
        position = 0
        while not self._stop.wait(0.02):
            try:
                self.client.commit(membership, 0, position + 1)
                position += 1
                self.last_commit = position
            except shard.ShardError as error:
                self._record(error)
        heartbeat.stop()

    def _store(self):
        shard = self.shard
        n = 0
        while not self._stop.wait(0.05):
            try:
                membership = self.client.join(
                    "fc-store", "m0", wait=120, spec=shard.job_spec(100, 1))
                while not self._stop.wait(0.05):
                    n += 1
                    value = f"v{n}".encode()
                    self.client.store_set(membership, f"k{n}", value)
                    got = self.client.store_get(membership, f"k{n}", 10)
                    if got != value:
                        self.unexpected.append(
                            f"store: k{n} read {got!r}, set {value!r}")
            except shard.ShardError as error:
                # A failover loses the rendezvous keys by design: ABORTED,
                # and the member joins again.
                if error.code.name != "ABORTED":
                    self._record(error)

    def _record(self, error):
        # Errors the retry deadline (2 min) let through are failures;
        # each is reported.
        self.unexpected.append(str(error)[:300])

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join()


class LeaderProbe:
    """Asks each replica ListJobs every 20 ms (one thread and one channel
    per replica, 200 ms deadline), so that a replica that should no longer
    answer as the leader is asked all the time; counts the answers."""

    def __init__(self, addresses):
        self.answers = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._ask, args=(a,))
                         for a in addresses]
        for thread in self._threads:
            thread.start()

    def _ask(self, address):
        from shard.v1 import shard_pb2 as pb
        from shard.v1 import shard_pb2_grpc as pb_grpc
        options = [("grpc.initial_reconnect_backoff_ms", 100),
                   ("grpc.min_reconnect_backoff_ms", 100),
                   ("grpc.max_reconnect_backoff_ms", 500)]
        with grpc.insecure_channel(address, options) as channel:
            stub = pb_grpc.CoordinatorStub(channel)
            while not self._stop.wait(0.02):
                try:
                    stub.ListJobs(pb.ListJobsRequest(), timeout=0.2)
                    self.answers += 1
                except grpc.RpcError:
                    pass

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join()


def leaderships(answer_logs):
    """Each leadership's admissions from the replicas' --answer-log files:
    [(revision, replica, first ns, last ns, admissions)] by revision."""
    spans = {}
    for replica, path in enumerate(answer_logs):
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) != 2:
                    continue  # A line cut short by kill -9.
                ns, revision = int(fields[0]), int(fields[1])
                first, last, count = spans.get((revision, replica),
                                               (ns, ns, 0))
                spans[(revision, replica)] = (min(first, ns), max(last, ns),
                                              count + 1)
    return sorted((revision, replica, *span)
                  for (revision, replica), span in spans.items())


def two_leaders(spans):
    """Pairs of leaderships that admitted calls at the same instant: a
    later leadership (higher etcd revision) whose first admission is not
    after the last admission of every earlier one, or one revision on two
    replicas."""
    found = []
    for earlier, later in zip(spans, spans[1:]):
        if earlier[0] == later[0] or later[2] <= earlier[3]:
            found.append((earlier, later))
    return found


def train_continuously(bin_dir, coordinator, work, stop, runs):
    """Pairs of shard-train ranks, one job after another until `stop`;
    appends (job, members, outputs) to `runs`."""
    n = 0
    while not stop.is_set():
        job = f"fc-train-{n}"
        run_dir = os.path.join(work, job)
        os.makedirs(run_dir)
        members = [f"{job}-m{i}" for i in range(2)]
        procs = start_trainers(
            [trainer_cmd(bin_dir, coordinator, job, m, 2, 6000, run_dir,
                         ["--epochs", "2", "--batch-size", "8",
                          "--loader-workers", "2",
                          "--checkpoint-dir", os.path.join(run_dir, "ckpt"),
                          "--checkpoint-every", "40"])
             for m in members], run_dir, job)
        runs.append((job, members, finish(procs, timeout=900), run_dir))
        n += 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    from replicated_coordinator import EtcdCluster, Replicas, proxies_to
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    print(f"fault checker seed {seed} ({args.seconds:g} s; replay with "
          f"--seed {seed})", flush=True)
    rng = random.Random(seed)
    bin_dir = os.path.abspath(args.bin_dir)
    with tempfile.TemporaryDirectory() as work:
        with EtcdCluster() as etcd:
            proxies, endpoints = proxies_to(etcd)
            with Replicas(bin_dir, etcd, work, lease=f"{LEASE_S:g}s",
                          etcd_endpoints=endpoints,
                          answer_logs=True) as replicas:
                try:
                    run_schedule(args.seconds, rng, bin_dir, work,
                                 Faults(replicas, etcd, proxies, rng))
                except Exception as error:  # reported with the logs below
                    traceback.print_exc()
                    check(False, f"the schedule ran to its end ({error!r})")
        if RESULTS["failed"]:
            for name in sorted(os.listdir(work)):
                if name.startswith("shardd-"):
                    print(f"--- {name}")
                    print(open(os.path.join(work, name)).read()[-4000:])
    print(f"seed {seed}: {RESULTS['passed']} passed, "
          f"{RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


def run_schedule(seconds, rng, bin_dir, work, faults):
    """Faults for `seconds` under the workload, then every check."""
    replicas = faults.replicas
    replicas.leader(deadline_s=60)
    workload = Workload(replicas.coordinator)
    probe = LeaderProbe(replicas.addresses)
    stop, runs = threading.Event(), []
    # A daemon: a schedule that fails part-way must not wait for trainers
    # of a coordinator that is gone.
    trainer = threading.Thread(target=train_continuously, args=(
        bin_dir, replicas.coordinator, work, stop, runs), daemon=True)
    trainer.start()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(rng.uniform(1.0, 4.0))
        faults.run_one()
    stop.set()
    trainer.join()
    workload.stop()
    probe.stop()
    spans = leaderships([os.path.join(work, f"answers-{i}.log")
                         for i in range(3)])
    overlaps = two_leaders(spans)
    check(len(spans) > 1 and not overlaps,
          f"no two replicas admitted calls as leader at the same instant: "
          f"{len(spans)} leaderships, "
          f"{sum(span[4] for span in spans)} admissions logged "
          f"({probe.answers} probe answers); overlaps: {overlaps[:3]}")
    crashed = [i for i in range(3) if not replicas.running(i)
               and i not in faults.stopped]
    check(not crashed, f"no replica exited on its own ({crashed})")
    log(f"faults run: {sum(faults.counts.values())} ({faults.counts})")
    verify(bin_dir, replicas.coordinator, workload, runs)
    workload.client.close()


def verify(bin_dir, coordinator, workload, runs):
    shard, client = workload.shard, workload.client
    present = set()
    for job in workload.created:
        try:
            client.get_job(job)
            present.add(job)
        except shard.errors.NotFoundError:
            pass
    lost = workload.created - workload.deleted - present
    revived = workload.deleted & present
    check(workload.created and not lost and not revived,
          f"{len(workload.created)} acknowledged creates, "
          f"{len(workload.deleted)} acknowledged deletes: none lost "
          f"({sorted(lost)[:5]}), none deleted came back "
          f"({sorted(revived)[:5]})")
    committed = client.get_job("fc-commits").committed_position
    check(workload.last_commit > 0 and committed >= workload.last_commit,
          f"{workload.last_commit} commits acknowledged, the job's committed "
          f"position is {committed}")
    check(not workload.unexpected,
          f"no call failed past the clients' retries ("
          f"{len(workload.unexpected)}: {workload.unexpected[:3]})")
    check(runs, f"{len(runs)} trainer runs")
    for job, members, outputs, run_dir in runs:
        verify_exact_training(bin_dir, coordinator, job, members, 2, run_dir,
                              job, outputs)


if __name__ == "__main__":
    sys.exit(main())
