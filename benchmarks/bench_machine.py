"""What two busy processes get from this machine: the ceiling of any 1 -> 2 worker speed-up.

Run from the repository root::

    .venv/bin/python benchmarks/bench_machine.py

The same fixed piece of work (numpy on one thread, then a pure-Python loop) runs alone,
then in two processes at once. Printed: the CPU seconds of each run; the ratio of a
process's CPU seconds when two run to its seconds alone (1.0 on two independent cores; more
where the cores share caches, memory bandwidth or a host); and the throughput of two
processes against one, ``2 / ratio`` -- what a perfectly parallel job could gain from a
second worker here. Compare with the speed-ups ``bench_compute.py`` and
``bench_reports.py --workers 1 2`` print.
"""

from __future__ import annotations

import os
import subprocess
import sys

WORK = """
import time, numpy as np
a = np.random.default_rng(0).random((600, 600))
c = time.process_time()
for _ in range(120):
    a = np.sin(a) @ np.eye(600) * 0.5 + 0.1
s = 0
for i in range(6_000_000):
    s += i * i
print(time.process_time() - c)
"""


def _start():
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", WORK], env=env, stdout=subprocess.PIPE, text=True)


def _cpu(procs) -> list[float]:
    return [float(p.communicate()[0]) for p in procs]


def main() -> int:
    print(f"load average before: {os.getloadavg()[0]:.2f} (cpus: {os.cpu_count()})")
    alone = [_cpu([_start()])[0] for _ in range(2)]
    pair = _cpu([_start(), _start()])
    alone += [_cpu([_start()])[0]]
    one, two = min(alone), sum(pair) / len(pair)
    ratio = two / one
    print(f"one process alone: {', '.join(f'{x:.2f}' for x in alone)} s of cpu")
    print(f"two at once: {', '.join(f'{x:.2f}' for x in pair)} s of cpu each")
    print(f"cpu per process, two at once / alone: {ratio:.2f}")
    print(f"throughput of two processes against one: {2 / ratio:.2f} (the ceiling of a 1 -> 2 worker speed-up)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
