#!/usr/bin/python3
"""Both clients follow the clients' table (proto/shard/v1/client_retries.json).

A fake shard.v1.Coordinator (grpcio, in this process) answers every call
with a chosen status code and counts the calls per method. For every RPC of
the table, the C++ client (through shard-client-probe) and the Python
client (where it has the call) face UNAVAILABLE, then CANCELLED (what
gRPC's server answers a call that reaches a coordinator process stopping): a "retry" call (a
stream's reconnection included) is sent again, a "once" call exactly once,
and both clients report UNAVAILABLE. DeleteJob answered UNAVAILABLE and
then NOT_FOUND is OK in both (the first attempt may have deleted the job),
NOT_FOUND at once is NOT_FOUND. For heartbeats answered with each kind
of code, both clients' heartbeat threads stop and report (heartbeat.ends),
report and go on (heartbeat.reported) or go on silently (any other code);
answered OK, both wait the longer of their interval and the one the
answer asks for (HeartbeatResponse.next_heartbeat_ms).
A standby that names a leader which failed without answering keeps the
Python client's retries (Replicas, the C++ rule's twin) until the hold-off
ends. Also: the Python errors are the ShardError subclass of their code and
survive pickling, `shard.job_spec` is exported (the package docstring uses
it) and the package is marked typed (py.typed).
Exit status 0 when every check passes.
"""
import collections
import itertools
import json
import os
import pickle
import subprocess
import sys
import threading
import time
from concurrent import futures

import grpc

from harness import check, exit_code, parse_args

TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                     "proto", "shard", "v1", "client_retries.json")
# Calls the Python client makes; ListJobs, PreviewShard and Drain are
# C++ only (shardctl's).
PYTHON_CALLS = {
    "CreateJob": lambda c, m: c.create_job("probe", _shard().job_spec(10, 1)),
    "GetJob": lambda c, m: c.get_job("probe"),
    "DeleteJob": lambda c, m: c.delete_job("probe"),
    "PutCosts": lambda c, m: c.put_costs([0]),
    "JoinJob": lambda c, m: c.join("probe", "member", wait=0.0),
    "Heartbeat": lambda c, m: c.heartbeat(m),
    "Leave": lambda c, m: c.leave(m),
    "CommitProgress": lambda c, m: c.commit(m, 0, 0),
    "StoreSet": lambda c, m: c.store_set(m, "k", b"v"),
    "StoreGet": lambda c, m: c.store_get(m, "k"),
    "StoreAdd": lambda c, m: c.store_add(m, "k", 1),
    "StoreCompareSet": lambda c, m: c.store_compare_set(m, "k", b"", b"v"),
    "StoreWait": lambda c, m: c.store_wait(m, ["k"], 0.0),
    "StoreDelete": lambda c, m: c.store_delete(m, "k"),
    "StoreCount": lambda c, m: c.store_count(m),
    "StreamShard": lambda c, m: next(iter(c.stream(m, 0))),
}
# Both clients read these answers of a call they did not cancel as
# UNAVAILABLE.
UNAVAILABLE_ANSWERS = ("UNAVAILABLE", "CANCELLED")
GO_ON = ("UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL", "RESOURCE_EXHAUSTED")


def _shard():
    import shard
    return shard


class FakeCoordinator:
    """Answers every unary call with `code` (OK: the message `answers` holds
    for the method) and counts calls per method."""

    def __init__(self, methods):
        from shard.v1 import shard_pb2_grpc as pb_grpc
        self.code = grpc.StatusCode.UNAVAILABLE
        self.then = None
        self.answers = {}
        self.calls = collections.Counter()
        self._lock = threading.Lock()

        def handler(name):
            def answer(servicer, request, context):
                with self._lock:
                    self.calls[name] += 1
                    code = self.code
                    if self.then is not None:
                        self.code = self.then
                    if code == grpc.StatusCode.OK:
                        return self.answers[name]
                context.abort(code, f"fake coordinator: {code.name}")
            return answer
        servicer = type("Fake", (pb_grpc.CoordinatorServicer,),
                        {name: handler(name) for name in methods})()
        self._server = grpc.server(futures.ThreadPoolExecutor(8))
        pb_grpc.add_CoordinatorServicer_to_server(servicer, self._server)
        self.address = f"127.0.0.1:{self._server.add_insecure_port('127.0.0.1:0')}"
        self._server.start()

    def reset(self, code, then=None):
        """Answers `code`, or `code` once and then `then`."""
        with self._lock:
            self.code = grpc.StatusCode[code]
            self.then = grpc.StatusCode[then] if then else None
            self.calls.clear()

    def count(self, name):
        with self._lock:
            return self.calls[name]

    def stop(self):
        self._server.stop(0)


def probe(bin_dir, address, *args):
    out = subprocess.run([f"{bin_dir}/shard-client-probe", "--coordinator",
                          address, *args], capture_output=True, text=True,
                         timeout=60)
    if out.returncode != 0:
        print(out.stderr, file=sys.stderr)
    return out.stdout.strip()


def check_retries(args, fake, table, shard):
    membership = shard.Membership("probe", "member", 0, 1, 1, None, 0, 0)
    client = shard.Client(fake.address, retry_deadline=1.0, rpc_timeout=5.0)
    for (rpc, mode), answer in itertools.product(
            sorted(table["calls"].items()), UNAVAILABLE_ANSWERS):
        expected = "once" if mode == "once" else "more than once"
        fake.reset(answer)
        code = probe(args.bin_dir, fake.address, "--call", rpc,
                     "--retry-deadline", "1s")
        sent = fake.count(rpc)
        check(code == "UNAVAILABLE" and
              (sent == 1 if mode == "once" else sent >= 2),
              f"C++ {rpc} facing {answer}: sent {sent} times ({expected}),"
              f" answered {code}")
        if rpc not in PYTHON_CALLS:
            continue
        fake.reset(answer)
        error = None
        try:
            PYTHON_CALLS[rpc](client, membership)
        except shard.ShardError as raised:
            error = raised
        sent = fake.count(rpc)
        check(isinstance(error, shard.errors.UnavailableError) and
              (sent == 1 if mode == "once" else sent >= 2),
              f"Python {rpc} facing {answer}: sent {sent} times "
              f"({expected}), raised {type(error).__name__}")
    client.close()


def check_ambiguous_delete(args, fake, shard):
    """DeleteJob: NOT_FOUND after an attempt that answered UNAVAILABLE is
    OK (that attempt may have deleted the job); NOT_FOUND at once is
    NOT_FOUND."""
    client = shard.Client(fake.address, retry_deadline=5.0, rpc_timeout=5.0)
    for first, expected in (("UNAVAILABLE", "OK"), ("NOT_FOUND", "NOT_FOUND")):
        fake.reset(first, then="NOT_FOUND")
        code = probe(args.bin_dir, fake.address, "--call", "DeleteJob",
                     "--retry-deadline", "5s")
        check(code == expected,
              f"C++ DeleteJob answered {first} then NOT_FOUND: {code}")
        fake.reset(first, then="NOT_FOUND")
        try:
            client.delete_job("probe")
            got = "OK"
        except shard.ShardError as error:
            got = error.code.name
        check(got == expected,
              f"Python DeleteJob answered {first} then NOT_FOUND: {got}")
    client.close()


def check_heartbeat_pace(args, fake, shard):
    """Both clients heartbeat at the longer of their own interval (50 ms)
    and the one the coordinator's answer asks for."""
    from shard.v1 import shard_pb2 as pb
    membership = shard.Membership("probe", "member", 0, 1, 1, None, 0, 0)
    client = shard.Client(fake.address, retry_deadline=1.0, rpc_timeout=5.0)
    for pace_ms, most, least in ((400, 4, 2), (0, None, 10)):
        fake.answers["Heartbeat"] = pb.HeartbeatResponse(
            generation=1, next_heartbeat_ms=pace_ms)
        fake.reset("OK")
        probe(args.bin_dir, fake.address, "--heartbeat-for", "1s",
              "--interval", "50ms")
        cpp_sent = fake.count("Heartbeat")
        fake.reset("OK")
        beat = client.start_heartbeat(membership, interval=0.05)
        time.sleep(1.0)
        beat.stop()
        python_sent = fake.count("Heartbeat")
        for who, sent in (("C++", cpp_sent), ("Python", python_sent)):
            check(least <= sent and (most is None or sent <= most),
                  f"{who} heartbeats for 1 s at 50 ms, asked for "
                  f"{pace_ms} ms: sent {sent} ({least}..{most or ''})")
    client.close()


def check_heartbeats(args, fake, table, shard):
    membership = shard.Membership("probe", "member", 0, 1, 1, None, 0, 0)
    client = shard.Client(fake.address, retry_deadline=1.0, rpc_timeout=5.0)
    ends, reported = table["heartbeat"]["ends"], table["heartbeat"]["reported"]
    for code in ends + reported + list(GO_ON):
        if code in ends:
            want, reports = "stops", code
        elif code in reported:
            want, reports = "goes on", code
        else:
            want, reports = "goes on", "OK"
        fake.reset(code)
        got = probe(args.bin_dir, fake.address, "--heartbeat-for", "1s",
                    "--interval", "50ms")
        sent = fake.count("Heartbeat")
        went_on = sent >= 3
        check(got == reports and went_on == (want == "goes on"),
              f"C++ heartbeat answered {code}: {want} (sent {sent}), "
              f"reports {got}")
        fake.reset(code)
        beat = client.start_heartbeat(membership, interval=0.05)
        time.sleep(1.0)
        sent = fake.count("Heartbeat")
        alive = beat._thread.is_alive()
        got = beat.error.code.name if beat.error else "OK"
        beat.stop()
        check(got == reports and alive == (want == "goes on") and
              (sent >= 3) == (want == "goes on"),
              f"Python heartbeat answered {code}: {want} (sent {sent}, "
              f"thread alive {alive}), reports {got}")
    client.close()


class Refusal(grpc.RpcError):
    """An UNAVAILABLE as a replica's answer carries it: a standby's refusal
    naming `leader`, or (without one) no answer at all."""

    def __init__(self, leader=None):
        super().__init__()
        self._trailers = ((("shard-leader", leader), ("shard-standby", "1"))
                          if leader else ())

    def trailing_metadata(self):
        return self._trailers


def check_silent_leader():
    from shard import _channel
    silent, standby = "127.0.0.1:1", "127.0.0.1:2"
    replicas = _channel.Replicas(f"{silent},{standby}")
    replicas.failed(0, Refusal())  # The leader does not answer.
    moved = replicas.current()[0]
    replicas.failed(1, Refusal(leader=silent))
    stayed = replicas.current()[0]
    check((moved, stayed) == (1, 1),
          f"Python: a standby naming a leader that did not answer keeps the "
          f"retries (replica {moved}, then {stayed}; want 1, then 1)")
    holdoff = _channel.SILENT_LEADER_HOLDOFF_S
    _channel.SILENT_LEADER_HOLDOFF_S = 0.0
    try:
        replicas.failed(1, Refusal(leader=silent))
        check(replicas.current()[0] == 0,
              "Python: after the hold-off the named leader is called again")
    finally:
        _channel.SILENT_LEADER_HOLDOFF_S = holdoff
    replicas.close()
    replicas = _channel.Replicas(f"{standby},{silent}")
    replicas.failed(0, Refusal(leader=silent))
    check(replicas.current()[0] == 1,
          "Python: a standby's hint to a leader not known silent is "
          "followed at once")
    replicas.close()


class Answer:
    """A call's answer whose initial metadata names a leader lease."""

    def __init__(self, lease_ms):
        self._metadata = (("shard-leader-lease-ms", str(lease_ms)),)

    def initial_metadata(self):
        return self._metadata

    def trailing_metadata(self):
        return ()


def check_lease_keepalive():
    """The Python client sizes its keepalive as the C++ client does
    (KeepaliveForLeaseTest) and follows the lease an answer names."""
    from shard import _channel
    table = {None: (3000, 2000), 30000: (3000, 2000), 5000: (3000, 2000),
             4000: (1000, 2000), 2000: (500, 1000), 1000: (500, 500)}
    got = {lease: _channel.keepalive_for_lease(lease) for lease in table}
    check(got == table, f"Python: keepalive for each lease {got}")
    replicas = _channel.Replicas("127.0.0.1:1,127.0.0.1:2")
    before = replicas.current()[1]
    replicas.answered(0, Answer(5000))
    kept = replicas.current()[1] is before
    replicas.answered(0, Answer(2000))
    check(kept and replicas.keepalive_ms == (500, 1000) and
          replicas.current()[1] is not before,
          "Python: channels follow a lease under 5 s an answer names, and "
          f"only then ({replicas.keepalive_ms})")
    replicas.close()


def check_errors(args, shard):
    error = shard.ShardError("GetJob", grpc.StatusCode.NOT_FOUND, "no job")
    check(type(error) is shard.errors.NotFoundError and
          isinstance(error, shard.ShardError),
          "ShardError(NOT_FOUND) is a shard.errors.NotFoundError")
    again = pickle.loads(pickle.dumps(error))
    check(type(again) is shard.errors.NotFoundError and
          (again.method, again.code, again.message) ==
          ("GetJob", grpc.StatusCode.NOT_FOUND, "no job"),
          "a ShardError survives pickling with its subclass and fields")
    check(all(issubclass(cls, shard.ShardError) for cls in
              (shard.errors.AbortedError, shard.errors.UnavailableError,
               shard.errors.FailedPreconditionError)),
          "every code's subclass is a ShardError")
    spec = shard.job_spec(dataset_size=10, world_size=2)
    check(spec.dataset_size == 10 and spec.world_size == 2,
          "shard.job_spec builds the JobSpec the package docstring uses")
    check(os.path.exists(os.path.join(args.python_dir, "shard", "py.typed")),
          "the package is marked typed (py.typed)")


def main():
    args = parse_args(__doc__)
    import shard
    import shard.errors
    with open(TABLE) as f:
        table = json.load(f)
    fake = FakeCoordinator(table["calls"])
    try:
        check_retries(args, fake, table, shard)
        check_ambiguous_delete(args, fake, shard)
        check_heartbeats(args, fake, table, shard)
        check_heartbeat_pace(args, fake, shard)
    finally:
        fake.stop()
    check_silent_leader()
    check_lease_keepalive()
    check_errors(args, shard)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
