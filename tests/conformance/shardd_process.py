"""Runs a real shardd on a loopback port for the duration of a test.

The daemon keeps durable state in a temporary data directory. kill() and
restart() simulate a crash (SIGKILL) and a restart on the same port and
data directory.
"""
import os
import shutil
import signal
import subprocess
import tempfile


class ShardDaemon:
    def __init__(self, bin_dir, *extra_args, log_path=os.devnull):
        self._bin_dir = bin_dir
        self._extra = list(extra_args)
        self._log_path = log_path
        self._data_dir = None
        self.address = None
        self.metrics_address = None
        self._proc = None

    def _start(self, listen):
        log = open(self._log_path, "a")
        self._proc = subprocess.Popen(
            [f"{self._bin_dir}/shardd", "--listen", listen, "--data-dir",
             self._data_dir, *self._extra],
            stdout=subprocess.PIPE, stderr=log, text=True)
        log.close()
        line = self._proc.stdout.readline()
        if line.startswith("metrics on "):
            self.metrics_address = line.split()[-1]
            line = self._proc.stdout.readline()
        if not line.startswith("listening on "):
            self._proc.kill()
            raise RuntimeError(f"shardd did not start: {line!r}")
        self.address = line.split()[-1]

    def __enter__(self):
        self._data_dir = tempfile.mkdtemp(prefix="shardd-data-")
        self._start("127.0.0.1:0")
        return self

    def kill(self):
        """SIGKILL, as a crash would."""
        self._proc.send_signal(signal.SIGKILL)
        self._proc.wait()

    @property
    def pid(self):
        return self._proc.pid

    @property
    def data_dir(self):
        return self._data_dir

    def wait(self, timeout):
        """Waits for the daemon to exit on its own; returns its exit code."""
        return self._proc.wait(timeout=timeout)

    def restart(self):
        """Starts again on the same address and data directory."""
        self._start(self.address)

    def __exit__(self, *exc):
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        shutil.rmtree(self._data_dir, ignore_errors=True)
        return False
