"""Channels, credentials and bearer token for the coordinator's replicas."""
import os
import stat
import threading
import time

import grpc

from shard.v1 import shard_pb2_grpc as pb_grpc

# The trailer a standby replica names the leader in (common/leader_hint.h).
LEADER_METADATA_KEY = "shard-leader"
# Set on every refusal of a standby replica (common/leader_hint.h).
STANDBY_METADATA_KEY = "shard-standby"
# The pause (a random 50..100% of it) after an UNAVAILABLE that
# Replicas.failed() says to retry soon (a standby's refusal: it is up and
# names the leader or awaits one; or a replica that did not answer while
# the list has another to try): the backoff does not grow
# (RetryPolicy::soon_pace in C++).
SOON_PACE_S = 0.1
# How long a leader that failed without answering (killed, frozen, cut
# off) is passed over when a standby names it: shardd's default
# --leader-lease, within which a standby takes over from a leader that
# stopped renewing (CoordinatorReplicas::kSilentLeaderHoldoff in C++).
SILENT_LEADER_HOLDOFF_S = 5.0
# Sent with every answer of a replicated coordinator: its leader lease in
# milliseconds (common/leader_hint.h).
LEADER_LEASE_METADATA_KEY = "shard-leader-lease-ms"
# Keepalive of open calls, parked ones included: (ping once the connection
# has been silent this long, fail the call UNAVAILABLE when the ping is not
# answered within this long), in ms. As the C++ client's Keepalive.
DEFAULT_KEEPALIVE_MS = (3000, 2000)


def keepalive_for_lease(lease_ms):
    """The keepalive (ms, ms) for coordinators whose leader lease is
    `lease_ms` (None: not known): the default at 5 s and longer; under 5 s
    a ping every lease / 4 (500 ms at the most often) answered within
    lease / 2, so that a frozen leader fails the calls open on it about
    when a standby may take over. As the C++ client's KeepaliveForLease."""
    if lease_ms is None or lease_ms <= 0 or lease_ms >= 5000:
        return DEFAULT_KEEPALIVE_MS
    return (max(lease_ms // 4, 500), lease_ms // 2)


def _read_secret(path, what):
    """The file's contents. A secret (the token, a private key) that others
    may read is refused; owner- and group-readable files are accepted
    (Kubernetes mounts Secrets group-readable for the pod's fsGroup). The
    mode is the one of the file behind symlinks, as in a Secret volume. The
    same rule as the C++ programs' (common/security/secret_files.h)."""
    if what in ("token", "key"):
        mode = os.stat(path).st_mode
        if mode & stat.S_IRWXO:
            raise ValueError(
                f"{path}: the {what} file is a secret but others may read "
                f"it (mode {stat.S_IMODE(mode):04o}); allow its owner and "
                "group only (chmod 600 or 640)")
    with open(path, "rb") as f:
        return f.read()


_TARGET_SCHEMES = ("unix:", "unix-abstract:", "ipv4:", "ipv6:")
_EXAMPLE = "give HOST:PORT, e.g. shardd:7070 or [::1]:7070"


def check_address(address):
    """ValueError unless `address` is HOST:PORT or [IPV6]:PORT with PORT in
    1..65535, or a gRPC target URI (dns:///..., unix:...): without a port
    gRPC would dial port 443. The same rule, and the same messages, as the
    C++ side's (common/net/address.cc)."""
    if "://" in address or address.startswith(_TARGET_SCHEMES):
        return
    problem = _address_problem(address)
    if problem:
        raise ValueError(f"coordinator address \"{address}\" {problem}")


def _address_problem(address):
    if address.startswith("["):
        end = address.find("]")
        if end < 0:
            return f"has no closing ']'; {_EXAMPLE}"
        host, rest = address[1:end], address[end + 1:]
        if not rest.startswith(":"):
            return f"has no port: {_EXAMPLE}"
        port = rest[1:]
    else:
        if ":" not in address:
            return (f"has no port: {_EXAMPLE} (without one gRPC would dial "
                    f"port 443)")
        if address.count(":") > 1:
            return ("has more than one ':'; an IPv6 address goes in "
                    "brackets: [::1]:7070")
        host, port = address.split(":")
    if not host:
        return f"has no host; {_EXAMPLE}"
    if not (port.isascii() and port.isdigit()) or len(port) > 10:
        return f"has no port: {_EXAMPLE}"
    if not 1 <= int(port) <= 65535:
        return f"has port {port}, out of range: give a port from 1 to 65535"
    return None


def open_channel(address, token_file=None, tls_ca=None, tls_cert=None,
                 tls_key=None, keepalive_ms=DEFAULT_KEEPALIVE_MS):
    """A channel to `address` ("host:port"); TLS when any TLS file is given,
    mutual TLS with tls_cert + tls_key; `keepalive_ms` as
    keepalive_for_lease returns. Returns (channel, call metadata)."""
    metadata = ()
    if token_file:
        token = _read_secret(token_file, "token").decode().strip()
        metadata = (("authorization", f"Bearer {token}"),)
    # Ping open calls (parked ones too: gRPC stops after 2 pings without
    # data unless told otherwise, and a parked call then learned of a
    # frozen leader only about 30 s later); a paused or cut off replica
    # fails the call UNAVAILABLE once a ping goes unanswered; reconnect to
    # a replica that went away after 100 ms, backing off to at most 400 ms
    # (gRPC's default grows to 120 s); give a connection attempt 2 s (gRPC
    # takes min_reconnect_backoff_ms as its minimum connect timeout: at
    # 100 ms a slower handshake never connected); resolve the address again
    # 100 ms after the last time at the soonest (gRPC's 30 s held calls to
    # a coordinator restarted in 0.1 s back for 5 s). As the C++ client
    # (coordinator_channel.h).
    options = [("grpc.max_receive_message_length", 16 << 20),
               ("grpc.keepalive_time_ms", keepalive_ms[0]),
               ("grpc.keepalive_timeout_ms", keepalive_ms[1]),
               ("grpc.http2.max_pings_without_data", 0),
               ("grpc.initial_reconnect_backoff_ms", 100),
               ("grpc.min_reconnect_backoff_ms", 2000),
               ("grpc.max_reconnect_backoff_ms", 400),
               ("grpc.dns_min_time_between_resolutions_ms", 100)]
    if tls_ca or tls_cert or tls_key:
        if bool(tls_cert) != bool(tls_key):
            raise ValueError("give both tls_cert and tls_key, or neither")
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read_secret(tls_ca, "ca") if tls_ca else None,
            private_key=_read_secret(tls_key, "key") if tls_key else None,
            certificate_chain=(_read_secret(tls_cert, "cert")
                               if tls_cert else None))
        return grpc.secure_channel(address, credentials, options), metadata
    return grpc.insecure_channel(address, options), metadata


class Replicas:
    """The coordinator replicas a client may call ("a:1" or "a:1,b:2,c:3")
    and the one it calls now. After a call answered UNAVAILABLE, failed()
    moves on: to the replica the shard-leader trailer names (added when the
    list lacks it), else to the next one; but a named leader that itself
    failed without answering within SILENT_LEADER_HOLDOFF_S is passed over
    meanwhile (the client stays with the standby, which takes over when
    the leader's lease ends). Once an answer names a leader lease whose
    keepalive differs from the channels', new channels with it replace them
    for the calls that follow (calls open on the old ones keep them). The
    same rules as the C++ client's CoordinatorReplicas. Thread-safe."""

    def __init__(self, addresses, token_file=None, tls_ca=None,
                 tls_cert=None, tls_key=None):
        self._security = (token_file, tls_ca, tls_cert, tls_key)
        self._lock = threading.Lock()
        self._addresses = []
        self._channels = []
        self._states = []  # Each channel's connectivity, as gRPC reports it.
        self._stubs = []
        self._keepalive_ms = DEFAULT_KEEPALIVE_MS
        # Channels replaced by ones of another keepalive, closed by close()
        # (closing one earlier would cancel the calls open on it).
        self._replaced = []
        # Per replica: when its calls began failing without an answer
        # (None while it answers).
        self._silent_since = []
        self._current = 0
        # Replicas in a row that failed without answering since one did.
        self._unanswered = 0
        self.metadata = ()
        for address in addresses.split(","):
            if address.strip():
                check_address(address.strip())
                self._add(address.strip())
        if not self._addresses:
            raise ValueError("address must be host:port[,host:port...]")

    def _add(self, address):
        self._addresses.append(address)
        self._channels.append(None)
        self._states.append(None)
        self._silent_since.append(None)
        self._stubs.append(None)
        self._connect(len(self._addresses) - 1)

    def _connect(self, index):
        """Opens replica `index`'s channel with the keepalive now."""
        channel, self.metadata = open_channel(
            self._addresses[index], *self._security,
            keepalive_ms=self._keepalive_ms)
        self._channels[index] = channel
        self._states[index] = None

        def note(state):
            if self._channels[index] is channel:
                self._states[index] = state
        channel.subscribe(note, try_to_connect=False)
        self._stubs[index] = pb_grpc.CoordinatorStub(channel)

    def _learn_lease(self, call, ended):
        """Follows the leader lease `call`'s answer names, if any: in its
        initial metadata, or (`ended`: a refusal without a body) among its
        trailers, which a call still open would wait for. Holds the
        lock."""
        lease = None
        parts = ("initial_metadata",) + (("trailing_metadata",) if ended
                                         else ())
        for part in parts:
            metadata = getattr(call, part, None)
            for key, value in (metadata() if callable(metadata) else ()) or ():
                if key == LEADER_LEASE_METADATA_KEY and value.isdigit():
                    lease = int(value)
            if lease is not None:
                break
        if lease is None or keepalive_for_lease(lease) == self._keepalive_ms:
            return
        self._keepalive_ms = keepalive_for_lease(lease)
        self._replaced.extend(self._channels)
        for index in range(len(self._addresses)):
            self._connect(index)

    @property
    def keepalive_ms(self):
        """The keepalive of the channels calls go out on now."""
        with self._lock:
            return self._keepalive_ms

    @property
    def addresses(self):
        with self._lock:
            return list(self._addresses)

    def current(self):
        """(index, stub) of the replica to call now."""
        with self._lock:
            return self._current, self._stubs[self._current]

    def failed(self, index, error):
        """The call to replica `index` raised `error` (UNAVAILABLE): moves
        on. True when the retry should come at SOON_PACE_S, not after a
        growing backoff: a standby replica gave that answer, another call
        moved on already, or the replica did not answer and the list has one
        that has not failed to answer since a replica last did."""
        leader, standby = None, False
        trailers = getattr(error, "trailing_metadata", None)
        for key, value in (trailers() if callable(trailers) else None) or ():
            if key == LEADER_METADATA_KEY:
                leader = value
            elif key == STANDBY_METADATA_KEY:
                standby = True
        now = time.monotonic()
        with self._lock:
            self._learn_lease(error, ended=True)
            if not standby and self._silent_since[index] is None:
                self._silent_since[index] = now
            if index != self._current:
                return True  # Another call moved on already.
            self._unanswered = 0 if standby else self._unanswered + 1
            soon = standby or self._unanswered < len(self._addresses)
            if leader:
                if leader not in self._addresses:
                    self._add(leader)
                named = self._addresses.index(leader)
                silent = self._silent_since[named]
                # Stay with the standby until it takes over from a silent
                # leader.
                if silent is None or now - silent >= SILENT_LEADER_HOLDOFF_S:
                    self._current = named
            else:
                self._current = (self._current + 1) % len(self._addresses)
        return soon

    def pause(self, seconds, closed=None):
        """Sleeps `seconds` before a retry, or less when the replica to call
        now was not connected and connects meanwhile (a restarted
        coordinator is called as soon as it serves, not after the rest of a
        backoff), or when the `closed` event (if any) is set. As the C++
        client's CoordinatorReplicas::PauseBeforeRetry."""
        with self._lock:
            channel = self._channels[self._current]
            connected = (self._states[self._current] ==
                         grpc.ChannelConnectivity.READY)
        until = time.monotonic() + seconds
        if not connected:
            ready = grpc.channel_ready_future(channel)
            try:
                # In slices, to notice `closed`.
                while time.monotonic() < until and not (closed and
                                                       closed.is_set()):
                    try:
                        ready.result(timeout=min(0.05, max(
                            0.0, until - time.monotonic())))
                        return
                    except grpc.FutureTimeoutError:
                        pass
            finally:
                ready.cancel()
            return
        if closed:
            closed.wait(seconds)
        else:
            time.sleep(seconds)

    def answered(self, index, call):
        """The call to replica `index` (a grpc.Call whose answer's metadata
        has arrived) got an answer other than UNAVAILABLE."""
        with self._lock:
            self._unanswered = 0
            self._silent_since[index] = None
            self._learn_lease(call, ended=False)

    def close(self):
        with self._lock:
            for channel in self._channels + self._replaced:
                channel.close()
