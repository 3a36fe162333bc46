"""A replicated coordinator on loopback for end-to-end tests: a 3-member
etcd cluster (real etcd processes in a temporary directory) and 3 shardd
replicas keeping their state in it. Members and replicas can be killed,
paused (SIGSTOP: a hung member) and restarted on the same addresses; a
replica can reach etcd through proxies that cut it off (a partition)."""
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import grpc

from shard.v1 import shard_pb2 as pb
from shard.v1 import shard_pb2_grpc as pb_grpc


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


# What a replica logs when its leadership begins or ends.
LEADERSHIP_MARKERS = ("leading the coordinator cluster", "stopped leading",
                      "gave up the leadership")


def leadership_lines(log_path, offset=0):
    """The lines of a replica's log after byte `offset` that say its
    leadership began or ended."""
    with open(log_path) as f:
        f.seek(offset)
        return [line.strip() for line in f
                if any(marker in line for marker in LEADERSHIP_MARKERS)]


class Proxy:
    """Forwards 127.0.0.1:port to `target`; freeze() stops every byte (and
    new connections wait in the kernel's backlog) until thaw(), as when a
    network drops packets. A target that refuses (an etcd member down)
    closes the connection, as the member itself would."""

    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.endpoint = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._flowing = threading.Event()
        self._flowing.set()
        threading.Thread(target=self._accept, daemon=True).start()

    def freeze(self):
        self._flowing.clear()

    def thaw(self):
        self._flowing.set()

    def _accept(self):
        while True:
            self._flowing.wait()
            client, _ = self._listener.accept()
            try:
                upstream = socket.create_connection(self._target, timeout=1)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pump, args=(client, upstream),
                             daemon=True).start()

    def _pump(self, a, b):
        sockets = [a, b]
        while True:
            self._flowing.wait()
            ready, _, _ = select.select(sockets, [], [], 0.05)
            if not self._flowing.is_set():
                continue  # Frozen while waiting: what arrived stays queued.
            try:
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:
                        raise ConnectionError("closed")
                    (b if sock is a else a).sendall(data)
            except OSError:
                a.close()
                b.close()
                return


def proxies_to(etcd, replicas=3):
    """For each of `replicas` replicas, a Proxy to each etcd member, and
    the --etcd-endpoints each replica is then given."""
    proxies = [[Proxy(e) for e in etcd.endpoints.split(",")]
               for _ in range(replicas)]
    return proxies, [",".join(p.endpoint for p in mine) for mine in proxies]


class EtcdCluster:
    """3 etcd members; endpoints is "HOST:PORT,HOST:PORT,HOST:PORT"."""

    def __init__(self, size=3):
        self._dir = tempfile.mkdtemp(prefix="shard-etcd-cluster-")
        ports = free_ports(2 * size)
        self._names = [f"m{i}" for i in range(size)]
        self._client = [f"127.0.0.1:{p}" for p in ports[:size]]
        self._peer = [f"http://127.0.0.1:{p}" for p in ports[size:]]
        self._procs = [None] * size
        self.endpoints = ",".join(self._client)

    def start(self, i):
        cluster = ",".join(f"{n}={p}" for n, p in zip(self._names, self._peer))
        log = open(os.path.join(self._dir, f"{self._names[i]}.log"), "a")
        self._procs[i] = subprocess.Popen(
            ["etcd", f"--name={self._names[i]}",
             f"--data-dir={self._dir}/{self._names[i]}",
             f"--listen-client-urls=http://{self._client[i]}",
             f"--advertise-client-urls=http://{self._client[i]}",
             f"--listen-peer-urls={self._peer[i]}",
             f"--initial-advertise-peer-urls={self._peer[i]}",
             f"--initial-cluster={cluster}",
             "--initial-cluster-state=new",
             "--initial-cluster-token=shard-test"],
            stdout=log, stderr=log)
        log.close()

    def kill(self, i):
        self._procs[i].kill()
        self._procs[i].wait()

    def signal(self, i, number):
        self._procs[i].send_signal(number)

    def raft_leader(self):
        """The index of the member that is etcd's raft leader now."""
        status = json.loads(self.etcdctl("endpoint", "status", "-w", "json"))
        for i, endpoint in enumerate(self._client):
            for member in status:
                header = member["Status"]["header"]
                if (member["Endpoint"].endswith(endpoint) and
                        header["member_id"] == member["Status"]["leader"]):
                    return i
        return None

    def etcdctl(self, *args):
        return subprocess.run(
            ["etcdctl", f"--endpoints={self.endpoints}", *args],
            env={**os.environ, "ETCDCTL_API": "3"}, check=True,
            capture_output=True, text=True).stdout

    def __enter__(self):
        for i in range(len(self._names)):
            self.start(i)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.etcdctl("endpoint", "health")
                return self
            except subprocess.CalledProcessError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def __exit__(self, *exc):
        for proc in self._procs:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)
        return False

    def record_versions(self, prefix="/shard/"):
        """{key: etcd version} of the coordinator's batches of records
        (version 1: written once)."""
        out = self.etcdctl("get", "--prefix", prefix + "log/", "--keys-only",
                           "-w", "json")
        import base64
        return {base64.b64decode(kv["key"]).decode(): kv["version"]
                for kv in json.loads(out).get("kvs", [])}


class Replicas:
    """`size` shardd replicas on fixed loopback addresses over `etcd`, with
    a snapshot every `snapshot_every` records (small by default: failovers
    then happen across snapshots, record deletions and compactions of
    etcd's history)."""

    def __init__(self, bin_dir, etcd, work, lease="2s", size=3,
                 snapshot_every=50, extra_args=(), shutdown_grace="1s",
                 etcd_endpoints=None, answer_logs=False,
                 probe_credentials=None, probe_metadata=None):
        """`etcd_endpoints`: each replica's --etcd-endpoints (default: the
        cluster's for all), e.g. through proxies that cut one off.
        `answer_logs`: replica i records its admissions as leader in
        `work`/answers-i.log (--answer-log). `probe_credentials` (gRPC
        channel credentials; None: plaintext) and `probe_metadata` (e.g.
        a bearer token) are what answer() calls with, for replicas with
        TLS or authentication in `extra_args`."""
        self._probe_credentials = probe_credentials
        self._probe_metadata = probe_metadata
        self._answer_logs = answer_logs
        self.snapshot_every = snapshot_every
        self._etcd_endpoints = etcd_endpoints or [etcd.endpoints] * size
        self._shutdown_grace = shutdown_grace
        self._extra_args = list(extra_args)
        self._bin_dir = bin_dir
        self._work = work
        self.lease = lease
        self.addresses = [f"127.0.0.1:{p}" for p in free_ports(size)]
        self._procs = [None] * size
        self.coordinator = ",".join(self.addresses)

    def start(self, i):
        log = open(os.path.join(self._work, f"shardd-{i}.log"), "a")
        answer_log = (["--answer-log",
                       os.path.join(self._work, f"answers-{i}.log")]
                      if self._answer_logs else [])
        proc = subprocess.Popen(
            [f"{self._bin_dir}/shardd", "--listen", self.addresses[i],
             "--etcd-endpoints", self._etcd_endpoints[i], "--leader-lease",
             self.lease, "--shutdown-grace", self._shutdown_grace,
             "--snapshot-every",
             str(self.snapshot_every), *answer_log, *self._extra_args],
            stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            proc.kill()
            raise RuntimeError(f"shardd {i} did not start: {line!r}")
        self._procs[i] = proc

    def pid(self, i):
        return self._procs[i].pid

    def signal(self, i, number):
        self._procs[i].send_signal(number)

    def kill(self, i):
        self._procs[i].kill()
        self._procs[i].wait()

    def terminate(self, i):
        """SIGTERM (a graceful stop, as in a rolling restart); returns at
        once: wait(i) for the exit."""
        self._procs[i].terminate()

    def wait(self, i, timeout=60):
        return self._procs[i].wait(timeout=timeout)

    def running(self, i):
        return self._procs[i].poll() is None

    def __enter__(self):
        for i in range(len(self.addresses)):
            self.start(i)
        return self

    def __exit__(self, *exc):
        for proc in self._procs:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        return False

    def answer(self, i, timeout=0.3):
        """ListJobs on replica i alone: (True, response) when it serves,
        (False, grpc error) otherwise."""
        channel = (grpc.insecure_channel(self.addresses[i])
                   if self._probe_credentials is None else
                   grpc.secure_channel(self.addresses[i],
                                       self._probe_credentials))
        with channel:
            try:
                return True, pb_grpc.CoordinatorStub(channel).ListJobs(
                    pb.ListJobsRequest(), timeout=timeout,
                    metadata=self._probe_metadata)
            except grpc.RpcError as error:
                return False, error

    def leader(self, deadline_s=30, skip=()):
        """The index of the replica that serves (waits for one); None when
        none does within `deadline_s`."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            for i in range(len(self.addresses)):
                if i in skip or self._procs[i].poll() is not None:
                    continue
                if self.answer(i)[0]:
                    return i
            time.sleep(0.05)
        return None
