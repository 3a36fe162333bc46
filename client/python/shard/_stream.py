"""A rank's shard of one epoch, read ahead on a background thread."""
import queue
import random
import threading
import time

import grpc
import numpy as np

from shard._channel import SOON_PACE_S
from shard.errors import RETRYABLE, ShardError
from shard.v1 import shard_pb2 as pb

_END = object()


def chunk_indices(chunk):
    """The chunk's indices as a numpy uint64 array (either encoding)."""
    if chunk.packed_indices:
        dtype = "<u4" if chunk.index_width == 4 else "<u8"
        return np.frombuffer(chunk.packed_indices, dtype=dtype).astype(
            np.uint64)
    return np.asarray(chunk.indices, dtype=np.uint64)


class ShardStream:
    """Iterator of numpy uint64 arrays; see Client.stream(). Subclasses
    change what a chunk yields (_take) and where a reconnect resumes
    (_resume_position)."""

    def __init__(self, client, membership, epoch, start_position,
                 prefetch_bytes, chunk_indices_limit):
        self._client = client
        self._request = pb.StreamShardRequest(
            job_id=membership.job_id, generation=membership.generation,
            rank=membership.rank, epoch=epoch, start_position=start_position,
            max_chunk_indices=chunk_indices_limit)
        self._world_size = membership.world_size
        self._prefetch_bytes = prefetch_bytes
        self._buffered = 0  # Bytes queued and not handed out yet.
        self._room = threading.Condition()
        self._queue = queue.Queue()
        self._closed = threading.Event()
        self._call = None
        self._lock = threading.Lock()
        self.received = 0  # Indices handed out so far.
        # The epoch's length in positions (IndexChunk.epoch_positions):
        # where a rank is once its shard is exhausted.
        self.epoch_positions = None
        self._thread = threading.Thread(target=self._read, daemon=True,
                                        name="shard-stream")
        self._thread.start()

    def _wait_for_room(self):
        """Blocks while the prefetch window is full; False once closed."""
        with self._room:
            self._room.wait_for(lambda: self._closed.is_set() or
                                self._buffered < self._prefetch_bytes)
            return not self._closed.is_set()

    def _resume_position(self, consumed):
        """Where a (re)connection starts, `consumed` indices received."""
        return self._request.start_position + consumed * self._world_size

    def _take(self, chunk, array):
        """The items a received chunk gives the iterator, one at a time
        (the first goes to the iterator before the rest are cut)."""
        yield array

    def _read(self):
        consumed = 0  # Indices received since start_position.
        give_up = None
        backoff = 0.1
        while not self._closed.is_set():
            request = pb.StreamShardRequest()
            request.CopyFrom(self._request)
            request.start_position = self._resume_position(consumed)
            replica = None
            try:
                with self._lock:
                    if self._closed.is_set():
                        return
                    replica, self._call = self._client._open_stream(request)
                answered = False
                for chunk in self._call:
                    if not answered:
                        self._client._replica_answered(replica, self._call)
                        answered = True
                    if not self._wait_for_room():
                        return
                    array = chunk_indices(chunk)
                    if chunk.epoch_positions:
                        self.epoch_positions = chunk.epoch_positions
                    with self._room:
                        self._buffered += array.nbytes
                    for item in self._take(chunk, array):
                        self._queue.put(item)
                    consumed += len(array)
                    give_up, backoff = None, 0.1
                self._queue.put(_END)
                return
            except grpc.RpcError as error:
                if self._closed.is_set():
                    return
                # Not cancelled by close(): the coordinator's doing.
                failure = ShardError.from_server_rpc_error("StreamShard",
                                                           error)
                soon = (failure.code == grpc.StatusCode.UNAVAILABLE and
                        replica is not None and
                        self._client._replica_failed(replica, error))
                now = time.monotonic()
                give_up = give_up or now + self._client._retry_deadline
                if failure.code not in RETRYABLE or now > give_up:
                    self._queue.put(failure)
                    return
                if soon:  # A leader named or being elected, or another to try.
                    self._client._pause_before_retry(
                        SOON_PACE_S * random.uniform(0.5, 1.0), self._closed)
                    continue
                self._client._pause_before_retry(backoff, self._closed)
                backoff = min(backoff * 2, 5.0)

    def __iter__(self):
        return self

    def __next__(self):
        item = self._queue.get()
        if item is _END:
            self._closed.set()
            raise StopIteration
        if isinstance(item, ShardError):
            self._closed.set()
            raise item
        with self._room:
            self._buffered -= _payload(item).nbytes
            self._room.notify()
        self.received += 1 if isinstance(item, tuple) else len(item)
        return item

    def close(self):
        """Stops reading (cancels the call) and ends the thread."""
        with self._lock:
            self._closed.set()
            if self._call is not None:
                self._call.cancel()
        with self._room:
            self._room.notify_all()
        self._thread.join()

    def __del__(self):
        if not self._closed.is_set():
            self.close()


def _payload(item):
    return item[0] if isinstance(item, tuple) else item


class BatchStream(ShardStream):
    """Iterator of (indices, step_end) for a job with balanced batches (see
    Client.stream_batches()): one micro-batch of this rank per step, as a
    numpy uint64 array, with the epoch's position at the end of its step
    (what a commit after the step names). A reconnection resumes at the
    end of the last step received whole; `received` counts micro-batches.
    """

    def __init__(self, *args, **kwargs):
        self._step_end = None  # End of the last whole micro-batch's step.
        self._partial = []  # Pieces of a micro-batch that spans chunks.
        super().__init__(*args, **kwargs)

    def _resume_position(self, consumed):
        # The connection restarts at a step's end: a micro-batch received
        # in part is received again.
        with self._room:
            self._buffered -= sum(piece.nbytes for piece in self._partial)
        self._partial = []
        if self._step_end is None:
            return self._request.start_position
        return self._step_end

    def _take(self, chunk, array):
        begin = 0
        for end, step_end in zip(chunk.batch_ends, chunk.step_ends):
            cut = end - chunk.rank_offset
            self._partial.append(array[begin:cut])
            batch = (self._partial[0] if len(self._partial) == 1
                     else np.concatenate(self._partial))
            self._partial = []
            self._step_end = step_end
            begin = cut
            yield batch, step_end
        if begin < len(array):
            self._partial.append(array[begin:])
