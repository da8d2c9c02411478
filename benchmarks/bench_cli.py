"""Whole-process CPU and wall time of the commands a user runs, as the speed targets count them.

Usage: ``python benchmarks/bench_cli.py [--repeat 5] [--only compare,size] [--first-run]``

Runs each command of :data:`COMMANDS` ``--repeat`` times in a fresh interpreter (in a scratch
directory, so the files it writes go there) and prints, per command, the median CPU time (user +
system of the child process, from ``resource.getrusage``) and the median wall time, then the
machine's load average.  The cache of generated code is warm: one untimed run of each command
comes first.  ``--first-run`` instead times each command once with an empty cache directory
(``XDG_CACHE_HOME`` pointed at a new folder), as the first run after a fresh install.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

#: the repository, for the bundled example plan
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: (label, arguments of ``python -m planner``)
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("--help", ("--help",)),
    ("point", ("point", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--gpus", "8",
               "--batch", "64", "--context", "2048")),
    ("compare", ("compare",)),
    ("compare --plot ''", ("compare", "--plot", "")),
    ("size", ("size", "--model", "kimi-k2-thinking", "--hardware", "gb200-nvl72", "hgx-h200",
              "--demand-tps", "1e6", "--min-tps-user", "50")),
    ("plan", ("plan", os.path.join(ROOT, "planner", "fleet", "data", "plan_example.yaml"))),
    ("compare --band --band-samples 24", ("compare", "--band", "--band-samples", "24")),
)


def run_once(args: tuple[str, ...], cwd: str, env: dict[str, str]) -> tuple[float, float, int]:
    """(CPU seconds of the child, wall seconds, exit status) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "planner", *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        sys.stderr.write(f"{' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}\n")
    return cpu, wall, proc.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per command (default 5)")
    ap.add_argument("--only", default="", help="comma-separated labels of the commands to time")
    ap.add_argument("--first-run", action="store_true", help="one run each with an empty cache")
    args = ap.parse_args(argv)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cwd:
        print(f"{'command':<36} {'CPU s (median)':>15} {'wall s (median)':>16}")
        for label, cmd in COMMANDS:
            if only and label not in only:
                continue
            if args.first_run:
                fresh = dict(env, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="moe-planner-cache-"))
                cpu, wall, _ = run_once(cmd, cwd, fresh)
                print(f"{label:<36} {cpu:>15.2f} {wall:>16.2f}   (first run, empty cache)")
                continue
            run_once(cmd, cwd, env)  # warm the cache of generated code
            times = [run_once(cmd, cwd, env) for _ in range(max(args.repeat, 1))]
            cpu = statistics.median(t[0] for t in times)
            wall = statistics.median(t[1] for t in times)
            print(f"{label:<36} {cpu:>15.2f} {wall:>16.2f}")
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
