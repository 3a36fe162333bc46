#!/usr/bin/python3
"""Both clients connect to a coordinator whose connections are slow to
start (a loaded coordinator, a TLS handshake far away).

A TCP proxy in front of the real shardd holds every new connection silent
for 1.5 s before it passes bytes either way. The Python client
(create_job) and the C++ client (shardctl create-job, then describe) must
get their answers through it: a connection attempt may take longer than
the reconnect backoff (gRPC's minimum connect timeout, which both clients
set, was that backoff's 100 ms, so every attempt was cut off and neither
client ever connected).
Exit status 0 when every check passes.
"""
import socket
import subprocess
import threading
import time

from harness import ShardDaemon, check, exit_code, parse_args  # noqa: E402

SILENT_SECONDS = 1.5


def _pipe(source, target):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class SlowStartProxy:
    """Forwards 127.0.0.1:port to `upstream`, each connection only after
    SILENT_SECONDS."""

    def __init__(self, upstream):
        host, port = upstream.split(":")
        self._upstream = (host, int(port))
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self._listener.accept()
            threading.Thread(target=self._forward, args=(client,),
                             daemon=True).start()

    def _forward(self, client):
        time.sleep(SILENT_SECONDS)
        upstream = socket.create_connection(self._upstream)
        threading.Thread(target=_pipe, args=(client, upstream),
                         daemon=True).start()
        _pipe(upstream, client)


def main():
    args = parse_args(__doc__)
    import shard
    with ShardDaemon(args.bin_dir) as daemon:
        proxy = SlowStartProxy(daemon.address)
        client = shard.Client(proxy.address, retry_deadline=20)
        began = time.monotonic()
        try:
            client.create_job("python", shard.job_spec(10, 1))
            check(True, f"the Python client's call was answered after "
                  f"{time.monotonic() - began:.1f} s")
        except shard.ShardError as error:
            check(False, f"the Python client's call was answered ({error})")
        client.close()
        shardctl = [f"{args.bin_dir}/shardctl", "--coordinator",
                    proxy.address]
        for command in (["create-job", "--job", "cpp", "--size", "10",
                         "--world-size", "1"], ["describe", "--job", "cpp"]):
            began = time.monotonic()
            done = subprocess.run(shardctl + command, capture_output=True,
                                  text=True, timeout=60)
            check(done.returncode == 0,
                  f"shardctl {command[0]} answered after "
                  f"{time.monotonic() - began:.1f} s "
                  f"({done.stderr.strip()[-300:]})")
    return exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
