#!/usr/bin/env python3
"""layering_test.py refuses what it must: runs it on small source trees
made here, each with one wrong include or one missing rule, and checks it
fails naming the file (and passes on the tree without the fault).

Usage: layering_refusals_test.py
"""
import pathlib
import subprocess
import sys
import tempfile

CHECKER = pathlib.Path(__file__).with_name("layering_test.py")

# A sound tree: server/core may include server/state, not the reverse;
# common/plan/high may include common/plan/low, not the reverse.
SOUND = {
    "proto/a.h": "",
    "common/b.h": '#include "proto/a.h"\n',
    "client/c.h": '#include "common/b.h"\n',
    "trainer/t.h": '#include "client/c.h"\n',
    "server/shardd_main.cc": '#include "server/core/core.h"\n',
    "server/state/state.h": '#include "common/b.h"\n',
    "server/state/README.md": "May include: no other folder of server/.\n",
    "server/core/core.h": '#include "server/state/state.h"\n',
    "server/core/README.md": "# core\n\nMay include: `server/state`.\n",
    "common/plan/low/low.h": '#include "proto/a.h"\n',
    "common/plan/low/README.md": "May include: no other folder of common/.\n",
    "common/plan/high/high.h": '#include "common/plan/low/low.h"\n',
    "common/plan/high/README.md": "May include: `common/plan/low`.\n",
}

# (what is wrong, files changed from SOUND, text the report must hold)
FAULTS = [
    ("client includes server",
     {"client/c.h": '#include "server/core/core.h"\n'}, "client/c.h:1"),
    ("a folder includes one its README does not name",
     {"server/state/state.h": '#include "server/core/core.h"\n'},
     "server/state/state.h:1"),
    ("a folder includes the top of server/",
     {"server/core/core.h": '#include "server/shardd_flags.h"\n'},
     "server/core/core.h:1"),
    ("a folder has no README", {"server/core/README.md": None},
     "server/core/README.md"),
    ("a README names no rule",
     {"server/core/README.md": "# core\n\nMay include: whatever.\n"},
     "server/core/README.md"),
    ("a README names a folder that does not exist",
     {"server/core/README.md": "May include: `server/stat`.\n"},
     "server/stat"),
    ("a common/ folder includes one its README does not name",
     {"common/plan/low/low.h": '#include "common/plan/high/high.h"\n'},
     "common/plan/low/low.h:1"),
    ("a common/ folder includes the top of common/",
     {"common/plan/high/high.h": '#include "common/b.h"\n'},
     "common/plan/high/high.h:1"),
    ("a common/ folder has no README",
     {"common/plan/high/README.md": None}, "common/plan/high/README.md"),
]


def run_on(files):
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            if text is None:
                continue
            path = pathlib.Path(root, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        done = subprocess.run(
            [sys.executable, str(CHECKER), "--source-dir", root],
            capture_output=True, text=True)
        return done.returncode, done.stdout + done.stderr


def main():
    failed = 0
    code, out = run_on(SOUND)
    ok = code == 0
    print(("ok   " if ok else "FAIL ") + "the sound tree passes")
    failed += not ok
    if not ok:
        print(out)
    for what, change, expected in FAULTS:
        code, out = run_on({**SOUND, **change})
        ok = code != 0 and expected in out
        print(("ok   " if ok else "FAIL ") + f"refused: {what}")
        if not ok:
            print(f"     exit {code}, expected {expected!r} in:\n{out}")
        failed += not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
