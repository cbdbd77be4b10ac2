"""Time ``demonoise fetch`` for one year and for three consecutive years against the tests'
local fixture server (tests/test_fetch.py's server on 127.0.0.1, the JSON-stat answers of
tests/data/fetch/statistics: BE and three NUTS 2 regions), without the comparison tables.

For each of ``--year 2023`` and ``--year 2021 2022 2023``: the wall time of the command into
an empty cache (six tables downloaded, read, assembled, the manifest written) and again from
the cache (no download), the median of ``--repeat`` runs. Timings depend on what else runs on
the machine: the load average is printed.

Usage::

    PYTHONPATH=lib nice .venv/bin/python benchmarks/bench_fetch.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from demonoise.cli import main as cli  # noqa: E402
from test_fetch import FakeEurostat  # noqa: E402
from test_fetch_panel import panel_routes  # noqa: E402


def _run(args: list[str]) -> float:
    with contextlib.redirect_stdout(io.StringIO()):
        t0 = time.perf_counter()
        code = cli(args)
        dt = time.perf_counter() - t0
    if code != 0:
        raise SystemExit(f"demonoise {' '.join(args)} exited with {code}")
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    n = ap.parse_args().repeat
    print(f"load average {os.getloadavg()[0]:.2f}; median of {n} runs")
    srv = FakeEurostat(panel_routes())
    try:
        for years in (["2023"], ["2021", "2022", "2023"]):
            cold, warm = [], []
            for _ in range(n):
                cache = tempfile.mkdtemp(prefix="dn-bench-fetch-")
                args = ["fetch", "--base-url", srv.url, "--year", *years, "--countries", "BE"]
                args += ["--cache-dir", cache, "--no-comparison"]
                try:
                    cold.append(_run(args))
                    warm.append(_run(args))
                finally:
                    shutil.rmtree(cache)
            print(
                f"fetch --year {' '.join(years)}: {statistics.median(cold):.2f} s downloading, "
                f"{statistics.median(warm):.2f} s from the cache"
            )
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
