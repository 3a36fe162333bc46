"""Runs a real shardd on a free loopback port for the duration of a test."""
import subprocess


class ShardDaemon:
    def __init__(self, bin_dir, *extra_args):
        self._cmd = [f"{bin_dir}/shardd", "--listen", "127.0.0.1:0",
                     *extra_args]
        self.address = None
        self._proc = None

    def __enter__(self):
        self._proc = subprocess.Popen(self._cmd, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL, text=True)
        line = self._proc.stdout.readline()
        if not line.startswith("listening on "):
            self._proc.kill()
            raise RuntimeError(f"shardd did not start: {line!r}")
        self.address = line.split()[-1]
        return self

    def __exit__(self, *exc):
        self._proc.terminate()
        try:
            self._proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        return False
