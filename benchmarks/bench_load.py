"""Load time of the embedded datasets: the CSV reader (the old path) against the packed form
(what ``demonoise.io.datasets.load`` reads now, its checks included), in the same run.

Each measurement is a fresh Python process (what every command and notebook kernel pays),
timing only the load call after the imports; the two paths alternate, ``--repeat`` times
each (default 5), and the medians and their ratio are printed. The import time of the
registry is printed apart for context. The machine may be shared: read the ratio.

    PYTHONPATH=lib python benchmarks/bench_load.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

LIB = str(Path(__file__).resolve().parents[1] / "lib")

#: The old path: the users' CSV reader with full validation, then the JSON's provenance.
OLD = """
import time, json
t0 = time.perf_counter()
from importlib import resources
from demonoise.io import datasets
from demonoise.io.template import read_counts_csv
t1 = time.perf_counter()
meta = datasets._meta(NAME)
with resources.as_file(datasets._folder().joinpath(NAME + ".csv.gz")) as p:
    c = read_counts_csv(p, name=NAME, year=int(meta["year"])).replace(provenance=datasets._provenance(meta))
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "births": int(c.births.sum())}))
"""

#: The new path: the registry's load (packed form, checked against the CSV and the JSON).
NEW = """
import time, json
t0 = time.perf_counter()
from demonoise.io import datasets
t1 = time.perf_counter()
c = datasets.load(NAME)
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "births": int(c.births.sum())}))
"""


def run(code: str, name: str) -> dict:
    env = {**os.environ, "PYTHONPATH": LIB}
    out = subprocess.run(
        [sys.executable, "-c", f"NAME = {name!r}\n{code}"], capture_output=True, text=True, env=env, check=True
    )
    if out.stderr.strip():  # the registry says when it could not use the packed form
        print(f"  stderr: {out.stderr.strip()}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    print(f"load time of the embedded datasets, fresh process per load, median of {a.repeat} (machine may be shared)")
    for name in ("be-2023", "ess-2023"):
        old, new = [], []
        for _ in range(a.repeat):
            old.append(run(OLD, name))
            new.append(run(NEW, name))
        assert {r["births"] for r in old} == {r["births"] for r in new}, "the two paths give different counts"
        t_old = statistics.median(r["load"] for r in old)
        t_new = statistics.median(r["load"] for r in new)
        imp = statistics.median(r["import"] for r in new)
        runs_old = " ".join(f"{r['load']:.2f}" for r in old)
        runs_new = " ".join(f"{r['load']:.3f}" for r in new)
        print(
            f"{name}: CSV reader {t_old:.3f} s, packed {t_new:.3f} s, ratio {t_old / t_new:.1f}x "
            f"(runs CSV {runs_old}; packed {runs_new}); import of the registry {imp:.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
