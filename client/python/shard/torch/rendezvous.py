"""torchrun's rendezvous through the coordinator (`--rdzv-backend shard`).

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend shard \\
        --rdzv-endpoint shardd:7070 --rdzv-id my-run train.py

Each node's torchrun agent joins the coordinator job `RUN_ID-nodes` (created
by the first agent, one rank per node) as member `HOST-PID` ($HOSTNAME, else
the host name, and the agent's process id: two agents on one host are two
members; or `--rdzv-conf member=ID`); the world it forms numbers the nodes,
and its key-value space is the store of that rendezvous round. No etcd, no
c10d host, and no TCPStore in the agents: torch builds without libuv
(Debian's torch 2.14) start too, as long as a script that forms its own
process group from MASTER_ADDR/MASTER_PORT (env://) sets USE_LIBUV=0 there.

Each round (the start, and every restart of a node's workers) joins as a new
process would: a new Client, so a new incarnation, which ends the previous
generation. The other nodes' workers learn it from the coordinator
(ABORTED) or from their failed collectives, their agents restart them and
re-join, and the new world forms with every node. The node count is fixed
(`--nnodes N`; a range MIN:MAX is refused): a data job's elastic world is
the trainers', not the agents'. num_nodes_waiting() is always 0.

At the end, an agent leaves the nodes' job once every node reached its
shutdown (torch's exit barrier is behind them all), and after a
coordinator restart lost the round's keys an agent's store call joins the
round again (renewing it) and is made once more, so that exit barrier
passes.

torch finds the handler through the package's `torchrun.handlers` entry
point (torch 2.3 and later); `python3 -m shard.torchrun` registers it
itself (any torch, 1.13 included). Settings from `--rdzv-conf`:
`join_timeout` (whole seconds, 1 to 604,800, default 600), `member`,
`token_file`, `tls_ca`, `tls_cert`, `tls_key` (as shard.Client takes them);
a bad value is a ValueError naming the setting.
"""
import os

from torch.distributed import PrefixStore
from torch.distributed.elastic.rendezvous import (RendezvousHandler,
                                                  rendezvous_handler_registry)

from shard.client import Client, host_name, job_spec
from shard.errors import ShardError
from shard.torch.store import CoordinatorStore

BACKEND = "shard"
_CLIENT_SETTINGS = ("token_file", "tls_ca", "tls_cert", "tls_key")
# The longest join_timeout: a week.
_LONGEST_JOIN_TIMEOUT_S = 7 * 24 * 3600
# Keys of the round's space (outside torch's "torchrun/" prefix) counting
# the nodes that reached shutdown, and how long one waits for the others.
_NODES_DONE = "shard/nodes-done"
_EVERY_NODE_DONE = "shard/every-node-done"
_LEAVE_WAIT_S = 60.0


class CoordinatorRendezvousHandler(RendezvousHandler):
    """A RendezvousHandler whose nodes meet in a coordinator job. Used by
    one torchrun agent (its thread); not thread-safe. Errors of the
    coordinator are shard.ShardError; a bad setting is ValueError."""

    def __init__(self, params):
        if params.min_nodes != params.max_nodes:
            raise ValueError(
                f"--rdzv-backend {BACKEND} forms a fixed number of nodes: "
                f"give --nnodes N (got {params.min_nodes}:"
                f"{params.max_nodes})")
        if not params.endpoint:
            raise ValueError(f"--rdzv-backend {BACKEND} needs "
                             f"--rdzv-endpoint COORDINATOR (host:port)")
        self._params = params
        self._nodes = params.max_nodes
        self._job = f"{params.run_id}-nodes"
        self._member = _text_setting(params, "member", default_agent_id())
        self._join_timeout = _seconds_setting(params, "join_timeout", 600,
                                              _LONGEST_JOIN_TIMEOUT_S)
        self._client_settings = {key: _text_setting(params, key, None)
                                 for key in _CLIENT_SETTINGS}
        self._client = None
        self._membership = None
        self._heartbeat = None
        self._store = None
        self._closed = False

    def get_backend(self):
        return BACKEND

    @property
    def use_agent_store(self):
        """The workers form their group through the coordinator or from
        MASTER_ADDR/MASTER_PORT, never through the agent's store."""
        return False

    def next_rendezvous(self):
        """Joins the nodes' job as a new incarnation and waits (up to
        join_timeout) for its world of --nnodes nodes. Returns torch's
        RendezvousInfo (torch 2.x) or (store, rank, world_size) (1.13)."""
        self._end_round()
        self._client = Client(self._params.endpoint, **self._client_settings)
        self._join_round()
        # The handler keeps the Python store alive: the PrefixStore holds
        # only its C++ side, whose calls need the Python object.
        self._store = CoordinatorStore(self._membership, self._client,
                                       renew=self._renew_round)
        store = PrefixStore("torchrun/", self._store)
        rank = self._membership.rank
        world_size = self._membership.world_size
        return _rendezvous_info(store, rank, world_size,
                                getattr(self._params, "local_addr", None))

    def _join_round(self):
        """Joins the nodes' job (or again: the same incarnation) and waits
        for its world; heartbeats the membership."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
        self._membership = self._client.join(
            self._job, self._member,
            spec=job_spec(dataset_size=self._nodes, world_size=self._nodes,
                          shuffle=False),
            wait=self._join_timeout)
        self._heartbeat = self._client.start_heartbeat(self._membership)

    def _renew_round(self):
        """For the agents' store, after a call was refused ABORTED: a
        coordinator restart lost the round's keys (joining again renews the
        world: a new generation of the same members and an empty key
        space), or another agent renewed it. Every agent's next store call
        comes here, so they meet in the renewed round: torch's exit barrier,
        whose keys are all set after the restart, passes. None when this
        handler has left (shutdown)."""
        if self._membership is None:
            return None
        self._join_round()
        return self._membership

    def is_closed(self):
        return self._closed

    def set_closed(self):
        self._closed = True

    def num_nodes_waiting(self):
        return 0

    def get_run_id(self):
        return self._params.run_id

    def shutdown(self):
        """Leaves the nodes' job once every node reached its shutdown (or
        the round ended, or _LEAVE_WAIT_S passed): a node that left at once
        ended the round under another still in torch's exit barrier, whose
        store calls then failed (ABORTED) after a run that succeeded.
        True."""
        membership, self._membership = self._membership, None
        client = self._client
        if membership is not None:
            self._await_every_node(client, membership)
        self._end_round(close=False)
        if membership is not None:
            client.leave(membership)
        if client is not None:
            client.close()
        return True

    def _await_every_node(self, client, membership):
        """Counts this node in and waits until every node of the round did
        (each does so after torch's exit barrier)."""
        try:
            if client.store_add(membership, _NODES_DONE, 1) >= self._nodes:
                client.store_set(membership, _EVERY_NODE_DONE, b"1")
            client.store_wait(membership, [_EVERY_NODE_DONE], _LEAVE_WAIT_S)
        except ShardError:
            pass  # The round ended (a node left or was lost): leave too.

    def _end_round(self, close=True):
        """Stops the round's heartbeat and (unless `close` is False: the
        caller still needs it) closes its client."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        if close and self._client is not None:
            self._client.close()
        self._client = None


def default_agent_id():
    """HOST-PID: $HOSTNAME (else the host name) and this agent's process
    id, so that two agents on one host (--nnodes 2 on one machine, or nodes
    sharing a host name) never take each other's membership."""
    return f"{host_name()}-{os.getpid()}"


def _text_setting(params, key, default):
    """--rdzv-conf KEY=TEXT: not empty when given."""
    value = params.get(key)
    if value is None:
        return default
    if not str(value).strip():
        raise ValueError(f"--rdzv-conf {key}= is empty: give a value or "
                         f"leave the setting out")
    return str(value)


def _seconds_setting(params, key, default, most):
    """--rdzv-conf KEY=SECONDS: whole seconds from 1 to `most`, in decimal
    digits (no sign, no leading zero), as every number of the project's
    options."""
    value = params.get(key)
    if value is None:
        return default
    text = str(value).strip()
    if not (text.isascii() and text.isdigit() and text[0] != "0" and
            int(text) <= most):
        raise ValueError(f"--rdzv-conf {key}={value}: give whole seconds "
                         f"from 1 to {most} in decimal digits, e.g. "
                         f"{key}={default}")
    return int(text)


def _rendezvous_info(store, rank, world_size, local_addr):
    """torch 2.x's RendezvousInfo, rank 0 naming its address and a free
    port as MASTER_ADDR/MASTER_PORT; torch 1.13's tuple (its agent does
    the same itself)."""
    try:
        from torch.distributed.elastic.rendezvous import (
            RendezvousInfo, RendezvousStoreInfo)
    except ImportError:
        return store, rank, world_size
    return RendezvousInfo(
        store, rank, world_size,
        RendezvousStoreInfo.build(rank, store, local_addr=local_addr))


def create_handler(params):
    """torch's handler factory for --rdzv-backend shard."""
    return CoordinatorRendezvousHandler(params)


def handler_factory():
    """The `torchrun.handlers` entry point: torch calls it and registers
    what it returns."""
    return create_handler


def register():
    """Registers --rdzv-backend shard with torch's registry (once)."""
    try:
        rendezvous_handler_registry.register(BACKEND, create_handler)
    except ValueError:
        pass  # Registered already (by the entry point, or a second call).


__all__ = ["BACKEND", "CoordinatorRendezvousHandler", "create_handler",
           "default_agent_id", "handler_factory", "register"]
