"""What scripts/pipeline-turns.py and scripts/floor-noise.py share: finding the zcbench
client that scripts/perf.py builds, waiting for servers' sockets, and stopping them."""
import os
import shutil
import time


def zcbench():
    """The zcbench client built by scripts/perf.py (its echo server is this path + "-echo")."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    path = os.path.join(cache, "zcbench-target", "release", "zcbench")
    if not os.path.exists(path):
        raise SystemExit(f"no {path}: run scripts/perf.py once to build zcbench")
    return path


def wait_sockets(paths, limit=10.0):
    """Waits until every socket in `paths` exists, at most `limit` seconds for each."""
    for path in paths:
        deadline = time.monotonic() + limit
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise SystemExit(f"no socket at {path}")
            time.sleep(0.02)


def stop(procs, tmp):
    """Stops the servers and removes their temporary directory."""
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(5)
    shutil.rmtree(tmp, ignore_errors=True)
