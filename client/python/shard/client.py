"""shard.Client: the coordinator's calls, with retries, streaming and
heartbeats. Thread-safe (gRPC channels are); one client per process is
enough."""
import dataclasses
import hashlib
import os
import random
import sys
import threading
import time
from typing import (Callable, Iterable, Iterator, Optional, Sequence, Tuple,
                    TypeVar)

import grpc
import numpy as np

from shard import _stream
from shard._channel import SOON_PACE_S, Replicas
from shard.errors import (HEARTBEAT_ENDS, HEARTBEAT_REPORTED, RETRYABLE,
                          NotFoundError, ShardError, UnavailableError)
from shard.v1 import shard_pb2 as pb

_TAILS = {"pad": pb.TAIL_POLICY_PAD, "drop": pb.TAIL_POLICY_DROP,
          "uneven": pb.TAIL_POLICY_UNEVEN}
_COST_MODELS = {"padded": pb.BATCH_COST_MODEL_PADDED,
                "sum": pb.BATCH_COST_MODEL_SUM}
# Costs per PutCosts piece: 1 MiB of u32 values.
_COSTS_PER_PIECE = 1 << 18
# The least time between two lines of a call retrying an unavailable
# coordinator (the C++ tools' RetryPolicy::report_every).
_REPORT_RETRY_EVERY_S = 5.0
# How long a round of a waiting join lasts at least, if it asked for as long.
_SHORTEST_JOIN_ROUND_S = 1.0

_Response = TypeVar("_Response")


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


_AWAITED_BY = {
    pb.Job.AWAITED_BY_SPEC_WORLD_SIZE: "the job's world size",
    pb.Job.AWAITED_BY_LAUNCH_SIZE: "the launch's size",
    pb.Job.AWAITED_BY_MIN_WORLD_SIZE: "the elastic minimum",
}


def missing_members_text(job: pb.Job) -> str:
    """What a job with no world waits for, as the waiting line says it:
    "1 more member (3 of 4 joined; 4: the launch's size)" (without the
    rule from a coordinator that does not say it)."""
    awaited = (job.world_size_awaited or job.spec.min_world_size or
               job.spec.world_size)
    rule = _AWAITED_BY.get(job.world_size_awaited_by, "")
    missing = max(0, awaited - job.joined_members)
    return (f"{missing} more member{'' if missing == 1 else 's'} "
            f"({job.joined_members} of {awaited} joined"
            f"{f'; {awaited}: {rule}' if rule else ''})")


@dataclasses.dataclass(frozen=True)
class Membership:
    """A joined member: its rank in the current generation's world."""
    job_id: str
    member_id: str
    rank: int
    world_size: int
    generation: int
    spec: pb.JobSpec
    # Where the job continues (last committed progress) at join time.
    committed_epoch: int
    committed_position: int
    # The job's incarnation (a job deleted and re-created under the same id
    # is another incarnation).
    job_incarnation: int = 0
    # The joining Client's incarnation: commit() and the store calls name
    # the member and it (a stale process of a member that re-joined is
    # refused).
    incarnation: int = 0


def job_spec(dataset_size: int, world_size: int, *, seed: int = 0,
             shuffle: bool = True, tail: str = "pad", min_world_size: int = 0,
             max_world_size: int = 0, sources: Sequence[pb.Source] = (),
             epoch_size: int = 0, batch_size: int = 0, batch_tokens: int = 0,
             cost_model: str = "padded", batch_window: int = 0,
             costs_sha256: str = "", attention_length: int = 0,
             costs_total: int = 0) -> pb.JobSpec:
    """A JobSpec with DistributedSampler's meaning: tail "pad" is
    drop_last=False, "drop" is drop_last=True, "uneven" splits every sample
    exactly once (evaluation). With `sources` (see source()) the job is a
    mixture of them (docs/mixtures.md): dataset_size is their total (or 0),
    and epoch_size is given when they have weights. With `batch_tokens` or
    `batch_size` the job serves balanced batches (docs/balanced-batches.md)
    over the costs named `costs_sha256` (Client.put_costs); with
    `attention_length` d too (cost_model "sum", batch_tokens), the costs
    are lengths, batch_tokens caps each micro-batch's tokens and the steps
    are balanced by L + L^2 / d. `costs_total` (costs_total(costs)) sizes
    a token budget's default window by the costs' mean."""
    if tail not in _TAILS:
        raise ValueError(f"tail must be one of {sorted(_TAILS)}, got {tail!r}")
    spec = pb.JobSpec(dataset_size=dataset_size, world_size=world_size,
                      seed=seed, shuffle=shuffle, tail=_TAILS[tail],
                      min_world_size=min_world_size,
                      max_world_size=max_world_size, sources=list(sources),
                      epoch_size=epoch_size)
    if batch_size or batch_tokens:
        if cost_model not in _COST_MODELS:
            raise ValueError(f"cost_model must be one of "
                             f"{sorted(_COST_MODELS)}, got {cost_model!r}")
        spec.batches.CopyFrom(pb.BatchPolicy(
            batch_size=batch_size, batch_tokens=batch_tokens,
            cost_model=_COST_MODELS[cost_model], window=batch_window,
            costs_sha256=costs_sha256, attention_length=attention_length,
            costs_total=costs_total))
    return spec


def costs_bytes(costs) -> bytes:
    """Per-sample costs (a sequence or array of integers in 0..2^32-1) as
    the little-endian u32 values PutCosts takes."""
    array = np.asarray(costs)
    if array.ndim != 1 or array.size == 0:
        raise ValueError("costs must be a non-empty one-dimensional sequence")
    if array.dtype.kind not in "iu":
        raise ValueError(f"costs must be integers, got {array.dtype}")
    if array.size and (int(array.min()) < 0 or int(array.max()) >= 1 << 32):
        raise ValueError("costs must be in 0..2^32-1")
    return array.astype("<u4").tobytes()


def costs_total(costs) -> int:
    """The sum of per-sample costs (as costs_bytes takes them), the
    costs_total a spec gives with them."""
    return int(np.frombuffer(costs_bytes(costs), "<u4").sum(dtype=np.uint64))


def source(name: str, size: int = 0, *, weight: Optional[float] = None,
           repeat: Optional[float] = None,
           choose: Optional[int] = None) -> pb.Source:
    """One source of a mixture (docs/mixtures.md), in the style of Mosaic
    Streaming's Stream: `size` samples and at most one share, a relative
    `weight`, a `repeat` of its size per epoch or `choose` samples per
    epoch (none: repeat=1). DistributedMixtureSampler fills in a size of 0
    from its ConcatDataset."""
    shares = {k: v for k, v in (("weight", weight), ("repeat", repeat),
                                ("choose", choose)) if v is not None}
    if len(shares) > 1:
        raise ValueError(f"source {name!r}: give at most one of weight, "
                         f"repeat and choose, got {sorted(shares)}")
    return pb.Source(name=name, size=size, **shares)


class Client:
    """Calls one coordinator ("host:port"), or the replicas of a replicated
    one ("a:7070,b:7070,c:7070"): calls go to the leader, and a call that
    meets a standby or a dead replica moves on to the leader (named in the
    standby's answer) or the next address before its retry.

    Unary calls retry UNAVAILABLE with exponential backoff (0.1 s doubling
    to 5 s, with jitter; a standby replica's answer is retried after a
    fixed 0.1 s, jittered: a leader is named or being elected; a pause
    ends once an unreachable coordinator is connected again) until
    `retry_deadline` seconds passed, except
    heartbeat() and store_add(), which make one attempt (the clients' table:
    proto/shard/v1/client_retries.json); every other error raises the
    ShardError subclass of its code at once. Each attempt is bounded by
    `rpc_timeout` seconds (joins add their wait). `token_file` is the
    file of the bearer token the coordinator requires (None: the file the
    SHARD_TOKEN_FILE environment variable names, as shardctl and
    shard-train take it, so that samplers, DataLoader workers and torchrun
    workers given only an address present their tenant's token). While a
    call retries,
    `on_retrying` gets a line every 5 s or so (default: printed on stderr;
    None: silent): "shard: coordinator ADDR unavailable (JoinJob: ...);
    retrying for 55 s more (retry_deadline)".
    """

    def __init__(self, address: str, *, token_file: Optional[str] = None,
                 tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
                 tls_key: Optional[str] = None, retry_deadline: float = 60.0,
                 rpc_timeout: float = 30.0,
                 on_retrying: Optional[Callable[[str], None]] = _stderr_line
                 ) -> None:
        if not address:
            raise ValueError("address must be host:port[,host:port...]")
        self._address = address
        self._on_retrying = on_retrying
        if token_file is None:
            token_file = os.environ.get("SHARD_TOKEN_FILE") or None
        self._replicas = Replicas(address, token_file, tls_ca, tls_cert,
                                  tls_key)
        self._metadata = self._replicas.metadata
        self._retry_deadline = retry_deadline
        self._rpc_timeout = rpc_timeout
        # A restarted process joining under the same member id makes the
        # coordinator end its old generation at once.
        self._incarnation = random.getrandbits(63) | 1
        # Incarnation of each job joined and not left: re-joins name it, so
        # that a member of a deleted job never re-creates it.
        self._joined_incarnations = {}

    def close(self) -> None:
        self._replicas.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- plumbing ---------------------------------------------------------

    def _call(self, name: str, request, timeout: Optional[float] = None,
              retry: bool = True):
        started = time.monotonic()
        give_up = started + self._retry_deadline
        reported = started
        backoff = 0.1
        while True:
            index, stub = self._replicas.current()
            soon = False
            try:
                response, call = getattr(stub, name).with_call(
                    request, timeout=timeout or self._rpc_timeout,
                    metadata=self._metadata)
                self._replicas.answered(index, call)
                return response
            except grpc.RpcError as error:
                # This client never cancels its unary calls.
                failure = ShardError.from_server_rpc_error(name, error)
                if failure.code == grpc.StatusCode.UNAVAILABLE:
                    soon = self._replicas.failed(index, error)
                else:
                    self._replicas.answered(index, error)
                pause = SOON_PACE_S if soon else backoff
                now = time.monotonic()
                if (not retry or failure.code not in RETRYABLE or
                        now + pause > give_up):
                    raise failure from None
                # Announced before a pause that ends _REPORT_RETRY_EVERY_S
                # or more after the previous line (or the first attempt).
                if (self._on_retrying is not None and
                        now + pause - reported >= _REPORT_RETRY_EVERY_S):
                    self._on_retrying(
                        f"shard: coordinator {self._address} unavailable "
                        f"({name}: {failure.message}); retrying for "
                        f"{give_up - now:.0f} s more (retry_deadline)")
                    reported = now
            self._replicas.pause(pause * random.uniform(0.5, 1.0))
            if not soon:
                backoff = min(backoff * 2, 5.0)

    @staticmethod
    def _scope(membership: Membership) -> pb.StoreScope:
        return pb.StoreScope(job_id=membership.job_id,
                             generation=membership.generation,
                             member_id=membership.member_id,
                             incarnation=membership.incarnation)

    # -- jobs and membership ----------------------------------------------

    def put_costs(self, costs) -> str:
        """Uploads per-sample costs (balanced batches; see costs_bytes) in
        pieces of 1 MiB, unless the coordinator has them already; an upload
        cut by a coordinator restart or failover goes on from what the
        coordinator holds. Returns
        their SHA-256, the name a spec gives them (job_spec's
        costs_sha256)."""
        data = costs_bytes(costs)
        digest = hashlib.sha256(data).hexdigest()
        count = len(data) // 4
        offset = 0
        while True:
            piece = data[4 * offset:4 * (offset + _COSTS_PER_PIECE)]
            response = self._call("PutCosts", pb.PutCostsRequest(
                sha256=digest, count=count, offset=offset, costs_le32=piece))
            if response.complete:
                return digest
            # Less than was sent: the coordinator restarted, took over or
            # dropped a stalled upload; go on from what it holds.
            if response.received == offset:
                raise ShardError(
                    "PutCosts", grpc.StatusCode.INTERNAL,
                    f"the coordinator took no costs from the piece at "
                    f"{offset}")
            offset = response.received

    def create_job(self, job_id: str, spec: pb.JobSpec) -> pb.Job:
        """Creates the job (ALREADY_EXISTS for another spec). `spec` is a
        JobSpec (see job_spec()). Returns the Job."""
        return self._call("CreateJob",
                          pb.CreateJobRequest(job_id=job_id, spec=spec))

    def get_job(self, job_id: str) -> pb.Job:
        return self._call("GetJob", pb.GetJobRequest(job_id=job_id))

    def delete_job(self, job_id: str, force: bool = False) -> None:
        """Deletes the job; NotFoundError when it did not exist. After an
        attempt whose outcome is unknown (UNAVAILABLE, as a leader stepping
        down answers a deletion it made durable) a retry that finds no job
        returns: gone is what was asked."""
        request = pb.DeleteJobRequest(job_id=job_id, force=force)
        try:
            self._call("DeleteJob", request, retry=False)
            return
        except UnavailableError:
            pass
        try:
            self._call("DeleteJob", request)
        except NotFoundError:
            pass

    def join(self, job_id: str, member_id: str, *,
             spec: Optional[pb.JobSpec] = None,
             wait: float = 600.0,
             progress: Optional[Callable[[str], None]] = _stderr_line,
             progress_every: float = 10.0,
             rank: Optional[int] = None) -> Membership:
        """Joins (creating the job with `spec` if it does not exist; a
        different stored spec is FAILED_PRECONDITION) and waits up to `wait`
        seconds for the world. Returns a Membership; DEADLINE_EXCEEDED if
        the world did not form in time (the member stays joined).

        While it waits, `progress` gets a line every `progress_every`
        seconds, e.g. "job j: waiting for 1 more member (2 of 3 joined; 3:
        the job's world size), generation 7, 590 s left" (the size the
        world waits for and its rule: the job's world size, the launch's
        size or the elastic minimum; default: printed on stderr; None:
        silent).

        `rank` asks for that rank (e.g. torchrun's RANK): the coordinator
        grants it when the world forms unless an earlier member of the
        world asked for it or it is outside the world; the Membership has
        the rank given (compare, the sampler warns).

        Once this client joined a job, its later joins of it (re-joins)
        name the job incarnation joined, until leave(): NotFoundError if
        the job was deleted meanwhile, even with `spec` (a member of a
        deleted job never re-creates it)."""
        request = pb.JoinJobRequest(
            job_id=job_id, member_id=member_id, incarnation=self._incarnation,
            job_incarnation=self._joined_incarnations.get(job_id, 0))
        if rank is not None:
            request.requested_rank = rank
        if spec is not None:
            request.spec.CopyFrom(spec)
        until = time.monotonic() + wait
        while True:  # The coordinator bounds one wait (--max-wait).
            left = max(0.0, until - time.monotonic())
            round_s = min(left, progress_every) if progress else left
            request.wait_for_world_ms = int(round_s * 1000)
            round_began = time.monotonic()
            try:
                response = self._call("JoinJob", request,
                                      timeout=self._rpc_timeout + round_s)
                if response.world_formed or time.monotonic() >= until:
                    break
            except ShardError as error:
                # The coordinator's answer when the world did not form
                # within this round.
                if (error.code != grpc.StatusCode.DEADLINE_EXCEEDED or
                        time.monotonic() >= until):
                    raise
            # A coordinator that bounds waits far below the round asked (an
            # older shardd's --max-wait 0) answers at once: the round still
            # lasts what it asked, up to a second, before the next join.
            time.sleep(max(0.0, min(
                round_began + min(round_s, _SHORTEST_JOIN_ROUND_S), until) -
                time.monotonic()))
            if progress:
                self._report_waiting(job_id, until, progress)
        if not response.world_formed:
            raise ShardError("JoinJob", grpc.StatusCode.DEADLINE_EXCEEDED,
                             f"job {job_id!r} has no world including "
                             f"{member_id!r} yet")
        if response.job_incarnation:
            self._joined_incarnations[job_id] = response.job_incarnation
        return Membership(job_id, member_id, response.rank,
                          response.world_size, response.generation,
                          response.spec, response.committed_epoch,
                          response.committed_position,
                          response.job_incarnation, self._incarnation)

    def _report_waiting(self, job_id: str, until: float,
                        progress: Callable[[str], None]) -> None:
        """One progress line of a join still waiting for its world."""
        try:
            job = self._call("GetJob", pb.GetJobRequest(job_id=job_id),
                             retry=False)
        except ShardError:
            return  # The next round's JoinJob reports what matters.
        rejoining = sum(1 for m in job.members if m.awaiting_rejoin)
        if rejoining:
            progress(f"job {job_id}: waiting for {rejoining} "
                     f"member{'' if rejoining == 1 else 's'} of the ended "
                     f"generation {job.generation} to re-join (or its lease "
                     f"to expire), {max(0.0, until - time.monotonic()):.0f}"
                     f" s left")
            return
        progress(f"job {job_id}: waiting for {missing_members_text(job)}, "
                 f"generation {job.generation}, "
                 f"{max(0.0, until - time.monotonic()):.0f} s left")

    def heartbeat(self, membership: Membership) -> pb.HeartbeatResponse:
        """Renews the lease; ABORTED once the generation ended."""
        return self._call("Heartbeat", pb.HeartbeatRequest(
            job_id=membership.job_id, member_id=membership.member_id,
            generation=membership.generation,
            incarnation=self._incarnation), retry=False)

    def start_heartbeat(self, membership: Membership,
                        interval: float = 2.0) -> "Heartbeat":
        """Heartbeats every `interval` seconds (or less often when the
        coordinator asks: shardd --max-heartbeat-rate) on a daemon thread
        until stop() or the generation ended; returns the Heartbeat."""
        return Heartbeat(self, membership, interval)

    def leave(self, membership: Membership) -> None:
        """Leaves the job; a later join of it is a first join again."""
        self._joined_incarnations.pop(membership.job_id, None)
        self._call("Leave", pb.LeaveRequest(
            job_id=membership.job_id, member_id=membership.member_id,
            incarnation=self._incarnation))

    def commit(self, membership: Membership, epoch: int,
               position: int) -> Tuple[int, int]:
        """Records that every rank consumed `position` entries of `epoch`
        (a multiple of the world size from the generation's start). Returns
        the stored (epoch, position): a complete epoch is the next one's
        start."""
        response = self._call("CommitProgress", pb.CommitProgressRequest(
            job_id=membership.job_id, generation=membership.generation,
            epoch=epoch, position=position, member_id=membership.member_id,
            incarnation=membership.incarnation))
        return response.committed_epoch, response.committed_position

    # -- streaming --------------------------------------------------------

    def stream(self, membership: Membership, epoch: int,
               start_position: int = 0, *, prefetch_bytes: int = 8 << 20,
               chunk_indices: int = 0) -> Iterator[np.ndarray]:
        """This rank's indices of `epoch` from global `start_position`, as
        numpy uint64 arrays (one per chunk), read ahead on a background
        thread up to `prefetch_bytes`; reconnects after UNAVAILABLE from the
        first index not yet received. Close the iterator (or exhaust it) to
        stop the thread."""
        return _stream.ShardStream(self, membership, epoch, start_position,
                                   prefetch_bytes, chunk_indices)

    def stream_batches(self, membership: Membership, epoch: int,
                       start_position: int = 0, *,
                       prefetch_bytes: int = 8 << 20,
                       chunk_indices: int = 0) -> Iterator[Tuple[np.ndarray,
                                                                 int]]:
        """A job with balanced batches: this rank's micro-batches of
        `epoch` from `start_position` (a step's end), one per step, as
        (numpy uint64 indices, position at the end of the step), read
        ahead like stream()."""
        return _stream.BatchStream(self, membership, epoch, start_position,
                                   prefetch_bytes, chunk_indices)

    def _open_stream(self, request):
        """(replica index, call) of a StreamShard call on the current
        replica; report its UNAVAILABLE through _replica_failed."""
        index, stub = self._replicas.current()
        return index, stub.StreamShard(request, metadata=self._metadata)

    def _replica_failed(self, index, error) -> bool:
        """Moves on from replica `index`; True when the retry should come
        at SOON_PACE_S (Replicas.failed)."""
        return self._replicas.failed(index, error)

    def _pause_before_retry(self, seconds: float, closed=None) -> None:
        """Replicas.pause: `seconds`, or less once the replica to call
        reconnects (or `closed` is set)."""
        self._replicas.pause(seconds, closed)

    def _replica_answered(self, index, call) -> None:
        self._replicas.answered(index, call)

    # -- rendezvous store (the generation's key-value space) --------------

    def store_set(self, membership: Membership, key: str,
                  value: bytes) -> None:
        self._call("StoreSet", pb.StoreSetRequest(
            scope=self._scope(membership), key=key, value=value))

    def _wait_in_rounds(self, name: str, make_request: Callable[[int], object],
                        wait: float,
                        done: Callable[[_Response], bool]) -> _Response:
        """The coordinator cuts each wait at its --max-wait: repeats the
        call until `done(response)`, or until `wait` seconds are spent."""
        until = time.monotonic() + wait
        while True:
            left = max(0.0, until - time.monotonic())
            response = self._call(name, make_request(int(left * 1000)),
                                  timeout=self._rpc_timeout + left)
            if done(response) or time.monotonic() >= until:
                return response

    def store_get(self, membership: Membership, key: str,
                  wait: float = 0.0) -> Optional[bytes]:
        """The value, or None if the key is not set within `wait` s."""
        response = self._wait_in_rounds(
            "StoreGet", lambda wait_ms: pb.StoreGetRequest(
                scope=self._scope(membership), key=key, wait_ms=wait_ms),
            wait, lambda r: r.found)
        return response.value if response.found else None

    def store_add(self, membership: Membership, key: str, delta: int) -> int:
        """Adds `delta`; not idempotent, so never retried (an UNAVAILABLE
        add may or may not have been applied: ShardError at once), as in
        the C++ client."""
        return self._call("StoreAdd", pb.StoreAddRequest(
            scope=self._scope(membership), key=key, delta=delta),
            retry=False).value

    def store_compare_set(self, membership: Membership, key: str,
                          expected: bytes, desired: bytes) -> bytes:
        return self._call("StoreCompareSet", pb.StoreCompareSetRequest(
            scope=self._scope(membership), key=key, expected=expected,
            desired=desired)).value

    def store_wait(self, membership: Membership, keys: Iterable[str],
                   wait: float) -> bool:
        """True once all keys are set, False if not within `wait` s."""
        keys = list(keys)
        return self._wait_in_rounds(
            "StoreWait", lambda wait_ms: pb.StoreWaitRequest(
                scope=self._scope(membership), keys=keys, wait_ms=wait_ms),
            wait, lambda r: r.ready).ready

    def store_delete(self, membership: Membership, key: str) -> bool:
        return self._call("StoreDelete", pb.StoreDeleteRequest(
            scope=self._scope(membership), key=key)).deleted

    def store_count(self, membership: Membership) -> int:
        return self._call("StoreCount", pb.StoreCountRequest(
            scope=self._scope(membership))).count


class Heartbeat:
    """A daemon thread renewing a membership's lease (see
    Client.start_heartbeat), following the clients' table
    (proto/shard/v1/client_retries.json, the same in C++): ABORTED (the
    generation ended, or the member was removed; the lease is still renewed)
    is kept in `error` and the thread goes on until the owner re-joins;
    NOT_FOUND (the job was deleted), FAILED_PRECONDITION (a restarted
    process of this member joined since), INVALID_ARGUMENT, UNAUTHENTICATED,
    PERMISSION_DENIED and UNIMPLEMENTED are kept in `error` and stop the
    thread (the owner must stop too: DistributedShardSampler raises it); other errors (UNAVAILABLE while the coordinator
    restarts, a slow answer) are not an ending and are not kept."""

    error: Optional[ShardError]

    def __init__(self, client: Client, membership: Membership,
                 interval: float) -> None:
        self.error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(client, membership, interval),
            name=f"shard-heartbeat-{membership.member_id}", daemon=True)
        self._thread.start()

    def _run(self, client, membership, interval):
        wait = interval
        while not self._stop.wait(wait):
            try:
                answer = client.heartbeat(membership)
                # The coordinator's pace, when it asks for a longer one.
                wait = max(interval, answer.next_heartbeat_ms / 1000)
            except ShardError as error:
                if error.code in HEARTBEAT_REPORTED + HEARTBEAT_ENDS:
                    self.error = error
                if error.code in HEARTBEAT_ENDS:
                    return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def host_name() -> str:
    """$HOSTNAME (a pod's name), else the machine's host name."""
    return os.environ.get("HOSTNAME") or os.uname().nodename


def default_member_id() -> str:
    """pod/host name plus the local rank (LOCAL_RANK, else RANK, else the
    process id): stable across restarts of the same worker under torchrun
    or a Kubernetes Job. A torchrun worker (TORCHELASTIC_RUN_ID set) also
    names its agent's process id, HOST-AGENT_PID-LOCAL_RANK, so that the
    workers of two agents on one host (--nnodes 2 there, or nodes sharing a
    host name) are other members."""
    host = host_name()
    local = os.environ.get("LOCAL_RANK") or os.environ.get("RANK")
    if local is None:
        return f"{host}-{os.getpid()}"
    if os.environ.get("TORCHELASTIC_RUN_ID") is not None:
        return f"{host}-{os.getppid()}-{local}"
    return f"{host}-{local}"
