"""What the checks of manifests_test.sh share: the objects of a rendered
manifest by (kind, name), and a tally of expectations printed as they are
checked."""
import sys

import yaml


def objects(path):
    """{(kind, name): object} of the rendered manifest at `path`."""
    with open(path) as f:
        return {(o["kind"], o["metadata"]["name"]): o
                for o in yaml.safe_load_all(f) if o}


class Expectations:
    """expect(ok, what) prints "ok"/"FAIL" and the check; done() exits 1
    if any failed."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def done(self):
        sys.exit(1 if self.failures else 0)
