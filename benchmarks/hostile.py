"""Replay a table of hostile and careless uses of demonoise and check that each ends cleanly.

Every case runs in a fresh directory, in its own process session, with a timeout. A case
fails if it

* prints a Python traceback, or a numpy/pandas ``RuntimeWarning`` (a cast or a division
  that should have been refused first);
* hangs (runs past its timeout; the session is then killed);
* exits with a status other than the expected one (0 success, 2 bad input, 130
  interrupted), or other than 0, 2 or 130 at all;
* does not print the expected message fragment (on stderr, or stdout for exit 0);
* leaves a temporary ``.dn-tmp-`` file anywhere in its directory, or -- on failure --
  anything in its output directory (a half-written output), or on success lacks an
  expected output;
* leaves a child process behind in its session.

Usage::

    python benchmarks/hostile.py            # every case, 2 at a time
    python benchmarks/hostile.py --fast     # the fast subset (what tests/test_hostile.py runs)
    python benchmarks/hostile.py --only counts-inf json-deep --verbose
    python benchmarks/hostile.py --list

Prints one line per case and the totals; exits 1 if any case failed.

Adding a case is one :class:`Case` entry in :data:`CASES`: an id, a class, a command line
(``argv``, run as ``demonoise ...``) or a Python snippet (``python``, run with
:class:`~demonoise.core.errors.DemonoiseError` mapped to exit 2 as the command line does),
the fixture to create (a function of the case directory; helpers below), the expected
exit code and message fragment. In ``argv`` and ``python``, ``{dir}`` is the case
directory and ``{out}`` its (initially empty) output directory.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "templates" / "counts_template.csv"
EUROSTAT = ROOT / "tests" / "data" / "eurostat"
PTABLES = ROOT / "tests" / "data" / "ptables"
TMP_MARK = ".dn-tmp-"  # demonoise.core.atomic.TMP_MARK (not imported: this script runs demonoise only as a user would)
ALLOWED_EXITS = (0, 2, 130)
#: Environment variable that marks every process a case starts (for the leftover check).
TOKEN_VAR = "DEMONOISE_HOSTILE_CASE"
#: Seconds a case's children get to exit after the command has ended.
GRACE = 2.0


@dataclass(frozen=True)
class Case:
    """One hostile use and what must come of it.

    Attributes
    ----------
    id : str
        Short unique name.
    cls : str
        The class of problem it belongs to (``counts``, ``exposure``, ``codes``, ``files``,
        ``json``, ``ptable-file``, ``options``, ``limits``, ``outputs``, ``contract``, ``control``,
        ``fetch``).
    argv : sequence of str, optional
        ``demonoise`` arguments (``{dir}``, ``{out}`` substituted).
    python : str, optional
        A Python snippet run in the case directory instead.
    fixture : callable, optional
        ``fixture(dir)`` creates the input files.
    exit : int
        Expected exit status: 0, 2 or 130.
    message : str
        Fragment the output must contain (stderr; stdout for exit 0).
    outputs : tuple of str
        Files expected in ``{out}`` after a successful run (nothing else may be there).
    fast : bool
        Part of the fast subset run by the test suite.
    timeout : float
        Seconds before the case counts as a hang.
    """

    id: str
    cls: str
    exit: int
    message: str
    argv: Sequence[str] | None = None
    python: str | None = None
    fixture: Callable[[Path], None] | None = None
    outputs: tuple[str, ...] = ()
    fast: bool = False
    timeout: float = 60.0

    def __post_init__(self):
        if (self.argv is None) == (self.python is None):
            raise ValueError(f"case {self.id}: give argv or python, not both")
        if self.exit not in ALLOWED_EXITS:
            raise ValueError(f"case {self.id}: expected exit must be one of {ALLOWED_EXITS}")


# ----------------------------------------------------------------------------- fixtures
def template_cell(
    region: str, sex: str, age: str, measure: str, value: str, *, col: int = 5, year=None, name: str = "c.csv"
) -> Callable[[Path], None]:
    """The counts template with field ``col`` (5: value, 0: region, 2: age, 3: year) of
    the matching rows replaced by ``value``."""

    def make(d: Path) -> None:
        out = []
        for line in TEMPLATE.read_text(encoding="utf-8").splitlines():
            f = line.split(",")
            hit = len(f) > 5 and f[:3] == [region, sex, age] and f[4] == measure
            if hit and (year is None or f[3] == str(year)):
                f[col] = value
            out.append(",".join(f))
        (d / name).write_text("\n".join(out) + "\n", encoding="utf-8")

    return make


def chain(*makers: Callable[[Path], None]) -> Callable[[Path], None]:
    """Fixtures applied in turn (later ones edit ``c.csv`` in place)."""

    def make(d: Path) -> None:
        for m in makers:
            m(d)

    return make


def edit_cell(region: str, sex: str, age: str, measure: str, value: str, name: str = "c.csv"):
    """Like :func:`template_cell`, on the file the previous fixture wrote."""

    def make(d: Path) -> None:
        lines = (d / name).read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            f = line.split(",")
            if len(f) > 5 and f[:3] == [region, sex, age] and f[4] == measure:
                f[5] = value
                lines[i] = ",".join(f)
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    return make


def text_file(name: str, content: str | bytes) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        (d / name).write_bytes(data)

    return make


def copy_template(name: str = "c.csv") -> Callable[[Path], None]:
    return text_file(name, TEMPLATE.read_bytes())


def truncated_gzip(d: Path) -> None:
    data = gzip.compress(TEMPLATE.read_bytes())
    (d / "c.csv.gz").write_bytes(data[: len(data) // 2])


def eurostat_long(edit: Callable[[list[str]], None], name: str = "x.csv") -> Callable[[Path], None]:
    """The BE10 deaths extract (long CSV) with its lines edited by ``edit``."""

    def make(d: Path) -> None:
        lines = gzip.decompress((EUROSTAT / "demo_r_magec_BE10_2023.csv.gz").read_bytes()).decode().splitlines()
        edit(lines)
        (d / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        (d / "pop.csv.gz").write_bytes((EUROSTAT / "demo_r_d2jan_BE10_2023_2024.csv.gz").read_bytes())

    return make


def _nul_in_geo(lines: list[str]) -> None:
    lines[5] = lines[5].replace("BE10", "BE1\x000", 1)


def _inf_value(lines: list[str]) -> None:
    i = next(i for i, line in enumerate(lines) if ",M,Y30," in line)
    lines[i] = "1e400" + lines[i][lines[i].index(",") :]


def jsonstat(mutate: Callable[[dict], None], name: str = "x.json") -> Callable[[Path], None]:
    """The DE/ES/FR/IT/PL population JSON-stat extract, mutated."""

    def make(d: Path) -> None:
        src = json.loads((EUROSTAT / "demo_pjan_jsonstat_DE_ES_FR_IT_PL_2023_2024.json").read_text(encoding="utf-8"))
        mutate(src)
        (d / name).write_text(json.dumps(src), encoding="utf-8")

    return make


def _jsonstat_position(d: dict, **codes: str) -> int:
    """Flat position of a cell (row-major over ``id``; JSON-stat 2.0)."""
    pos = 0
    for k, n in zip(d["id"], d["size"], strict=True):
        idx = d["dimension"][k]["category"]["index"]
        pos = pos * n + (idx.index(codes[k]) if isinstance(idx, list) else idx[codes[k]])
    return pos


def _huge_int_value(d: dict) -> None:
    p = _jsonstat_position(d, geo="DE", sex="M", age="Y30", time="2023", freq="A", unit="NR")
    d["value"][str(p)] = int("1" + "0" * 400)


def ptable_file(text: str, name: str = "p.csv") -> Callable[[Path], None]:
    return text_file(name, text)


def params_with_ptable(name: str) -> Callable[[Path], None]:
    """A params file ``p.yaml`` comparing V = 1 with the p-table file ``name`` of the case directory."""

    def make(d: Path) -> None:
        (d / "p.yaml").write_text(f"datasets: {{ess-2023: [LU]}}\nnoise: [{{V: 1}}, {{ptable: {d / name}}}]\n")

    return make


def symlink(name: str, target: str) -> Callable[[Path], None]:
    """A symlink ``name`` in the case directory pointing to ``target`` ({dir} substituted)."""

    def make(d: Path) -> None:
        (d / name).symlink_to(target.replace("{dir}", str(d)))

    return make


def directory(name: str) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        (d / name).mkdir()

    return make


def many_settings(n: int) -> Callable[[Path], None]:
    """A valid params file comparing ``n`` values of V for one country."""
    return text_file(
        "p.yaml", "datasets: {ess-2023: [LU]}\nnoise:\n" + "".join(f"  - {{V: {1 + i}}}\n" for i in range(n))
    )


def report_notebooks(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """The report notebooks copied to ``{dir}/nb``, the summary's parameters cell edited."""

    def make(d: Path) -> None:
        (d / "nb").mkdir()
        for src in (ROOT / "notebooks").glob("*.ipynb"):
            nb = json.loads(src.read_text(encoding="utf-8"))
            if src.stem == "summary":
                cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
                edit(cell)
            (d / "nb" / src.name).write_text(json.dumps(nb), encoding="utf-8")

    return make


def _untag(cell: dict) -> None:
    cell["metadata"]["tags"] = []


def _drop_country(cell: dict) -> None:
    src = cell["source"]
    lines = src.splitlines(keepends=True) if isinstance(src, str) else list(src)
    cell["source"] = [line for line in lines if not line.lstrip().startswith("country")]


PLAN = (
    "from demonoise.report.batch.stages import plan\nfrom demonoise.report.batch.params import load_params\n"
    "plan(load_params('{root}/params/default.yaml'), '{out}', notebooks_dir='{dir}/nb')"
).replace("{root}", str(ROOT))


#: A server on 127.0.0.1 in a thread of the case: ``ANSWER`` (bytes of a whole HTTP
#: answer) sent ``STEP`` bytes at a time, ``PAUSE`` seconds apart; then the snippet's ``GET``.
SERVE = """
import socket, threading, time
from demonoise.io.http import download
from demonoise.io.options import FetchOptions
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(4)
def serve():
    while True:
        c, _ = srv.accept()
        c.recv(65536)
        try:
            for k in range(0, len(ANSWER), STEP):
                c.sendall(ANSWER[k : k + STEP]); time.sleep(PAUSE)
        except OSError:
            pass
        c.close()
threading.Thread(target=serve, daemon=True).start()
URL = f"http://127.0.0.1:{srv.getsockname()[1]}/data"
"""
TRICKLE = (
    "ANSWER = b'HTTP/1.1 200 OK\\r\\nContent-Length: 100000\\r\\n\\r\\n' + b'x' * 100000\nSTEP, PAUSE = 1, 0.5\n"
    + SERVE
    + "download(URL, 'p', FetchOptions(timeout=5, deadline=3), label='demo_r_d2jan')"
)
BOMB = (
    "import gzip\nBODY = gzip.compress(bytes(1 << 30), 9)\n"
    "ANSWER = b'HTTP/1.1 200 OK\\r\\nContent-Encoding: gzip\\r\\nContent-Length: %d\\r\\n\\r\\n' % len(BODY) + BODY\n"
    "STEP, PAUSE = 1 << 16, 0\n"
    + SERVE
    + "import resource\nresource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
    "download(URL, 'p', FetchOptions(timeout=5), label='demo_r_d2jan', max_bytes=1 << 27)"
)
RETRY_AFTER = (
    "ANSWER = b'HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 60\\r\\nContent-Length: 0\\r\\n\\r\\n'\n"
    "STEP, PAUSE = 1 << 16, 0\n"
    + SERVE
    + "download(URL, 'p', FetchOptions(timeout=5, retries=3, max_wait=30), label='demo_r_d2jan')"
)

DEEP = "[" * 100_000 + "]" * 100_000
T = "{dir}/c.csv"
OUT = "{out}/r.csv"
COMPUTE = ("compute", "--counts", T, "--V", "1", "--out", OUT)

# -------------------------------------------------------------------------------- cases
CASES: list[Case] = [
    # ---- counts out of range: refused before any cast, naming file, line and cell
    Case(
        "counts-beyond-int64",
        "counts",
        2,
        "above 2^53",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "deaths", "99999999999999999999999"),
        fast=True,
    ),
    Case(
        "counts-2^64+5",
        "counts",
        2,
        "above 2^53",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "deaths", "18446744073709551621"),
    ),
    Case(
        "counts-inf",
        "counts",
        2,
        "infinite count inf [file",
        COMPUTE,
        fixture=template_cell("BE10", "F", "Y30", "deaths", "inf"),
    ),
    Case(
        "counts-minus-inf",
        "counts",
        2,
        "infinite count -inf",
        COMPUTE,
        fixture=template_cell("BE10", "F", "Y30", "deaths", "-inf"),
    ),
    Case(
        "counts-400-digits",
        "counts",
        2,
        "infinite count",
        COMPUTE,
        fixture=template_cell("BE10", "F", "Y30", "deaths", "1" + "0" * 400),
    ),
    Case(
        "counts-5000-digits",
        "counts",
        2,
        "non-numeric value",
        COMPUTE,
        fixture=template_cell("BE10", "F", "Y30", "deaths", "1" + "0" * 5000),
    ),
    Case(
        "counts-10^15-people",
        "counts",
        2,
        "above 10^9",
        COMPUTE,
        fixture=template_cell("BE10", "F", "Y_LT1", "population", "1000000000000000"),
        fast=True,
    ),
    Case(
        "counts-negative",
        "counts",
        2,
        "negative count -3",
        COMPUTE,
        fixture=template_cell("BE10", "M", "Y70", "deaths", "-3"),
    ),
    Case(
        "counts-fraction",
        "counts",
        2,
        "non-integer count 0.5",
        COMPUTE,
        fixture=template_cell("BE10", "M", "Y70", "deaths", "0.5"),
    ),
    Case(
        "counts-year-1e300",
        "counts",
        2,
        "four-digit year",
        COMPUTE,
        fixture=template_cell("BE10", "M", "Y70", "deaths", "1e300", col=3),
    ),
    Case(
        "counts-eurostat-1e400",
        "counts",
        2,
        "infinite count inf [file x.csv, line",
        python="from demonoise.io.eurostat import read_eurostat as r\n"
        "from demonoise.io.tidy import counts_from_eurostat as c\n"
        "c(r('pop.csv.gz'), r('x.csv'), year=2023, name='x', check_totals='ignore')",
        fixture=eurostat_long(_inf_value),
    ),
    Case(
        "counts-api-uint64",
        "counts",
        2,
        "above 10^9",
        python="import numpy as np\nfrom demonoise.io.template import read_counts_csv\n"
        "c = read_counts_csv('c.csv'); d = c.deaths.astype(np.uint64); d[0, 0, 5] = 2**63 + 5\n"
        "c.replace(deaths=d)",
        fixture=copy_template(),
    ),
    # ---- events with zero exposure, absurd indicators
    Case(
        "births-zero-female-exposure",
        "exposure",
        2,
        "births with zero female exposure",
        ("compute", "--counts", T, "--V", "1", "--indicators", "tfr", "--out", OUT),
        fixture=template_cell("BE10", "F", "Y30", "population", "0"),
        fast=True,
    ),
    Case(
        "no-births-zero-female-exposure",
        "exposure",
        2,
        "no births and zero female exposure",
        ("compute", "--counts", T, "--V", "1", "--indicators", "asfr", "--out", OUT),
        fixture=chain(
            template_cell("BE34", "F", "Y30", "population", "0"), edit_cell("BE34", "T", "Y30", "births", "0")
        ),
    ),
    Case(
        "deaths-zero-population-90",
        "exposure",
        2,
        "127 deaths with zero exposure",
        ("compute", "--counts", T, "--V", "1", "--indicators", "asmr", "--out", OUT),
        fixture=template_cell("BE10", "M", "Y90", "population", "0"),
    ),
    Case(
        "deaths-zero-population-90-e-pooled",
        "exposure",
        0,
        "rows",
        ("compute", "--counts", T, "--V", "1", "--indicators", "e", "--out", OUT),
        fixture=template_cell("BE10", "M", "Y90", "population", "0"),
        outputs=("r.csv",),
    ),
    Case(
        "deaths-exceed-population",
        "exposure",
        2,
        "q >= 1 in a closed interval",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "deaths", "100000"),
        fast=True,
    ),
    Case(
        "e0-beyond-130",
        "exposure",
        2,
        "outside 0-130",
        python="import numpy as np\nfrom demonoise.io.template import read_counts_csv\n"
        "from demonoise.uncertainty.propagation import linearise\n"
        "c = read_counts_csv('c.csv'); d = c.deaths.copy(); d[1] = 0; d[1, :, -2] = 1\n"
        "p = c.pop_start.copy(); p[1] = 10**8\n"
        "linearise(c.replace(deaths=d, pop_start=p, pop_end=p), indicators=['e'])",
        fixture=copy_template(),
    ),
    # ---- codes
    Case(
        "age-Y400",
        "codes",
        2,
        "implausible age code",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "population", "Y400", col=2, year=2023),
        fast=True,
    ),
    Case(
        "age-Y_LT0",
        "codes",
        2,
        "empty age interval",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "population", "Y_LT0", col=2, year=2023),
    ),
    Case(
        "region-NUL",
        "codes",
        2,
        "control character U+0000 in region code",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "population", "BE34\x00", col=0, year=2023),
        fast=True,
    ),
    Case(
        "region-zero-width-space",
        "codes",
        2,
        "U+200B",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "deaths", "BE3\u200b4", col=0),
    ),
    Case(
        "region-tab-inside",
        "codes",
        2,
        "U+0009",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "deaths", "BE3\t4", col=0),
    ),
    Case(
        "sex-NUL",
        "codes",
        2,
        "control character U+0000 in sex code",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "deaths", "M\x00", col=1),
    ),
    Case(
        "eurostat-geo-NUL",
        "codes",
        2,
        "control character U+0000 in geo code",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.csv')",
        fixture=eurostat_long(_nul_in_geo),
    ),
    # ---- file structure
    Case(
        "tsv-header-no-rows",
        "files",
        2,
        "header but no data rows",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.tsv')",
        fixture=text_file("x.tsv", "freq,unit,sex,age,geo\\TIME_PERIOD\t2023 \t2024 \n"),
        fast=True,
    ),
    Case("template-empty", "files", 2, "empty file", COMPUTE, fixture=text_file("c.csv", "")),
    Case(
        "template-extra-field",
        "files",
        2,
        "9) [file",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "deaths", "1,2"),
    ),
    Case(
        "params-ptable-is-counts",
        "files",
        2,
        "noise[1].ptable: the p-table file",
        ("report", "--params", "{dir}/p.yaml", "--out-dir", "{out}", "--no-pdf"),
        fixture=chain(copy_template("counts.csv"), params_with_ptable("counts.csv")),
    ),
    Case(
        "template-header-only",
        "files",
        2,
        "header but no rows",
        COMPUTE,
        fixture=text_file("c.csv", "region,sex,age,year,measure,value\n"),
    ),
    Case(
        "template-latin1",
        "files",
        2,
        "not UTF-8",
        COMPUTE,
        fixture=text_file(
            "c.csv", "region,sex,age,year,measure,value,name\nBE10,F,Y1,2023,population,5,R\xe9gion\n".encode("latin-1")
        ),
    ),
    Case(
        "template-truncated-gzip",
        "files",
        2,
        "truncated or corrupt gzip",
        ("compute", "--counts", "{dir}/c.csv.gz", "--V", "1", "--out", OUT),
        fixture=truncated_gzip,
    ),
    Case("template-random-bytes", "files", 2, "not UTF-8", COMPUTE, fixture=text_file("c.csv", bytes(range(256)) * 40)),
    Case(
        "counts-is-a-directory",
        "files",
        2,
        "counts file not found",
        ("compute", "--counts", "{dir}", "--V", "1", "--out", OUT),
    ),
    # ---- JSON
    Case(
        "json-deep-eurostat",
        "json",
        2,
        "nested too deeply",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.json')",
        fixture=text_file("x.json", DEEP),
        fast=True,
    ),
    Case(
        "json-deep-geojson",
        "json",
        2,
        "nested too deeply",
        python="from demonoise.io.geo import load_nuts2_geojson as g\ng(open('x.json').read(), file='x.json')",
        fixture=text_file("x.json", DEEP),
    ),
    Case(
        "json-deep-parameter",
        "json",
        0,
        "text",
        python="from demonoise.cli import _parameter_value\nv = _parameter_value(open('x.json').read())\n"
        "print('text' if isinstance(v, str) else 'parsed')",
        fixture=text_file("x.json", DEEP),
    ),
    Case(
        "json-400-digit-count",
        "json",
        2,
        "infinite count",
        python="from demonoise.io.eurostat import read_eurostat\nfrom demonoise.io.tidy import counts_from_eurostat\n"
        "counts_from_eurostat(read_eurostat('x.json'), year=2023, name='x', regions=['DE'])",
        fixture=jsonstat(_huge_int_value),
    ),
    Case(
        "json-5000-digit-int",
        "json",
        2,
        "digits",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.json')",
        fixture=text_file("x.json", '{"class": "dataset", "value": [' + "9" * 5000 + "]}"),
    ),
    Case(
        "json-NaN-constant",
        "json",
        2,
        "NaN is not a JSON number",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.json')",
        fixture=text_file("x.json", '{"class": "dataset", "value": [NaN]}'),
    ),
    Case(
        "jsonstat-10^15-cells",
        "json",
        2,
        "larger than",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.json')",
        fixture=jsonstat(lambda d: d.update(id=["geo", "age", "time"], size=[10**5] * 3)),
        fast=True,
    ),
    Case(
        "jsonstat-size-not-a-list",
        "json",
        2,
        "'size' must be a list",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.json')",
        fixture=jsonstat(lambda d: d.update(size="3")),
    ),
    Case(
        "jsonstat-position-beyond-int64",
        "json",
        2,
        "non-integer position",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.json')",
        fixture=jsonstat(lambda d: d["value"].update({"9" * 30: 1})),
    ),
    Case(
        "json-truncated",
        "json",
        2,
        "invalid or truncated JSON",
        python="from demonoise.io.eurostat import read_eurostat\nread_eurostat('x.json')",
        fixture=text_file("x.json", '{"class": "dataset", "value": [1, 2'),
    ),
    # ---- fetch: bounded whatever the server does
    Case("fetch-trickle-deadline", "fetch", 2, "gave up at the 3 s deadline of a download", python=TRICKLE, timeout=15),
    Case("fetch-gzip-bomb", "fetch", 2, "the answer decodes to more than 128 MiB", python=BOMB, timeout=30),
    Case(
        "fetch-429-retry-after-beyond-budget",
        "fetch",
        2,
        "HTTP 429 (after 1 attempt); the next attempt would wait 60 s more (Retry-After), beyond the 30 s",
        python=RETRY_AFTER,
        timeout=15,
    ),
    # ---- p-table files
    Case(
        "ptable-ckey-beyond-2^53",
        "ptable-file",
        2,
        "beyond 2^53",
        ("ptable", "show", "{dir}/p.csv"),
        fixture=ptable_file('"pcv";"ckey";"pvalue"\n1;99999999999999999999;0\n'),
        fast=True,
    ),
    Case(
        "ptable-pvalue-inf",
        "ptable-file",
        2,
        "missing or infinite value in column pvalue",
        ("ptable", "show", "{dir}/p.csv"),
        fixture=ptable_file('"pcv";"ckey";"pvalue"\n1;1;inf\n'),
    ),
    Case(
        "ptable-j-beyond-2^53",
        "ptable-file",
        2,
        "column j",
        ("ptable", "show", "{dir}/p.csv"),
        fixture=ptable_file("i,j,p,v,p_int_lb,p_int_ub,type\n0,99999999999999999999,1,0,0,1,all\n"),
    ),
    Case(
        "ptable-header-only",
        "ptable-file",
        2,
        "p.csv",
        ("ptable", "show", "{dir}/p.csv"),
        fixture=ptable_file('"pcv";"ckey";"pvalue"\n'),
    ),
    # ---- command-line numbers: one line naming the option, exit 2
    Case(
        "V-1e15",
        "limits",
        2,
        "argument --V: V = 1e+15 is above the limit 10^12",
        ("compute", "--dataset", "be-2023", "--V", "1e15", "--out", OUT),
        fast=True,
    ),
    Case(
        "V-1e300",
        "limits",
        2,
        "above the limit 10^12",
        ("compute", "--dataset", "be-2023", "--V", "1e300", "--out", OUT),
    ),
    Case(
        "params-V-1e300",
        "limits",
        2,
        "noise[0].V: V = 1e+300 is above the limit 10^12",
        ("report", "--params", "{dir}/p.yaml", "--out-dir", "{out}", "--no-pdf"),
        fixture=text_file("p.yaml", "datasets: {ess-2023: [LU]}\nnoise: [{V: 1e300}]\n"),
    ),
    Case(
        "params-date-not-a-date",
        "options",
        2,
        "publisher.date: not a date",
        ("report", "--params", "{dir}/p.yaml", "--out-dir", "{out}", "--no-pdf"),
        fixture=text_file(
            "p.yaml",
            "datasets: {ess-2023: [LU]}\nnoise: [{V: 1}]\npublisher: {organisation: O, contact: c, date: not-a-date}\n",
        ),
    ),
    Case(
        "V-nan",
        "options",
        2,
        "argument --V: V is a variance",
        ("compute", "--dataset", "be-2023", "--V", "nan", "--out", OUT),
    ),
    Case(
        "V-zero",
        "options",
        2,
        "argument --V: V is a variance",
        ("compute", "--dataset", "be-2023", "--V", "0", "--out", OUT),
    ),
    Case(
        "ptable-D-100000",
        "limits",
        2,
        "above the limit 10^4",
        ("ptable", "build", "--D", "100000", "--V", "1", "--out", "{out}/p.csv"),
        fast=True,
    ),
    Case(
        "ptable-K-0",
        "options",
        2,
        "argument --K: must be >= 1",
        ("ptable", "build", "--D", "3", "--V", "1", "--format", "eurostat", "--K", "0", "--out", "{out}/p.csv"),
        fast=True,
    ),
    Case(
        "ptable-K-10^8",
        "options",
        2,
        "argument --K: must be at most 10^7",
        ("ptable", "build", "--D", "3", "--V", "1", "--format", "eurostat", "--K", "100000000", "--out", "{out}/p.csv"),
    ),
    Case("ptable-show-V-inf", "options", 2, "argument --V", ("ptable", "show", "v01", "--V", "inf")),
    Case(
        "compare-size-classes-0",
        "options",
        2,
        "argument --size-classes: a size-class edge is a population",
        ("compare", "--dataset", "be-2023", "--ptable", "v01", "--size-classes", "0", "--out", OUT),
        fast=True,
    ),
    Case(
        "compare-level-7",
        "options",
        2,
        "argument --level: invalid choice",
        ("compare", "--dataset", "be-2023", "--ptable", "v01", "--level", "7", "--out", OUT),
    ),
    Case(
        "mc-10^30",
        "options",
        2,
        "argument --mc: must be at most 10^9",
        ("compute", "--dataset", "be-2023", "--V", "1", "--mc", "1" + "0" * 30, "--out", OUT),
    ),
    Case(
        "mc-negative",
        "options",
        2,
        "argument --mc: must be >= 0",
        ("compute", "--dataset", "be-2023", "--V", "1", "--mc", "-5", "--out", OUT),
    ),
    Case(
        "compute-D-0",
        "options",
        2,
        "D (maximum deviation) must be a positive integer",
        ("compute", "--dataset", "be-2023", "--V", "1", "--D", "0", "--out", OUT),
    ),
    Case(
        "fetch-timeout-1e300",
        "options",
        2,
        "argument --timeout",
        ("fetch", "--year", "2023", "--offline", "--cache-dir", "{dir}", "--timeout", "1e300"),
    ),
    Case(
        "fetch-deadline-0",
        "options",
        2,
        "argument --deadline: deadline must be a number of seconds in (0, 86400]",
        ("fetch", "--year", "2023", "--offline", "--cache-dir", "{dir}", "--deadline", "0"),
    ),
    Case(
        "fetch-year-negative",
        "options",
        2,
        "year -5 is outside",
        ("fetch", "--year", "-5", "--offline", "--cache-dir", "{dir}"),
    ),
    Case(
        "report-workers-10^6",
        "options",
        2,
        "argument --workers: workers must be <= 64",
        ("report", "--params", "params/default.yaml", "--workers", "1000000", "--output", "{out}"),
    ),
    Case(
        "calibrate-threshold-nan",
        "options",
        2,
        "threshold nan",
        ("calibrate", "--dataset", "be-2023", "--thresholds", "nan", "--out", OUT),
    ),
    Case(
        "calibrate-ptable-D-100000",
        "limits",
        2,
        "above the limit 10^4",
        ("calibrate", "--dataset", "be-2023", "--ptable-D", "100000", "--out", OUT),
    ),
    Case(
        "compute-bad-extension",
        "options",
        2,
        "use a .parquet, .csv or .csv.gz extension",
        ("compute", "--dataset", "be-2023", "--V", "1", "--out", "{out}/r.xlsx"),
    ),
    # ---- output locations: checked before any work, one line, nothing written
    Case(
        "out-symlink-to-device",
        "outputs",
        2,
        "(a symlink to /dev/full) is a character device",
        ("compute", "--dataset", "be-2023", "--V", "1", "--out", "{dir}/x.csv"),
        fixture=symlink("x.csv", "/dev/full"),
        fast=True,
    ),
    Case(
        "out-device-path",
        "outputs",
        2,
        "is a device or process file under /dev",
        ("ptable", "build", "--D", "2", "--V", "1", "--out", "/dev/full"),
    ),
    Case(
        "out-file-in-place-of-dir",
        "outputs",
        2,
        "f/r.csv: Not a directory",
        ("compute", "--dataset", "be-2023", "--V", "1", "--out", "{dir}/f/r.csv"),
        fixture=text_file("f", ""),
    ),
    Case(
        "out-is-a-directory",
        "outputs",
        2,
        "d.csv is a directory",
        ("compute", "--dataset", "be-2023", "--V", "1", "--out", "{dir}/d.csv"),
        fixture=directory("d.csv"),
    ),
    Case(
        "out-dir-is-a-file-overview",
        "outputs",
        2,
        "exists and is not a directory",
        ("overview", "--out-dir", "{dir}/f", "--no-pdf"),
        fixture=text_file("f", ""),
    ),
    Case(
        "out-dir-is-a-file-report-former-spelling",
        "outputs",
        2,
        "exists and is not a directory",
        ("report", "--params", "params/default.yaml", "--output", "{dir}/f"),
        fixture=text_file("f", ""),
    ),
    Case(
        "out-dir-is-a-file-notebook",
        "outputs",
        2,
        "exists and is not a directory",
        ("notebook", "whatif", "--out-dir", "{dir}/f", "--no-pdf"),
        fixture=text_file("f", ""),
    ),
    Case(
        "compare-note-unwritable",
        "outputs",
        2,
        "f/n.md: Not a directory",
        ("compare", "--dataset", "be-2023", "--ptable", "v01", "--out", OUT, "--note", "{dir}/f/n.md"),
        fixture=text_file("f", ""),
    ),
    Case(
        "control-out-symlink-written-through",
        "outputs",
        0,
        "rows",
        ("compute", "--dataset", "be-2023", "--V", "1", "--out", "{dir}/link.csv"),
        fixture=chain(directory("shared"), symlink("link.csv", "{dir}/shared/r.csv")),
    ),
    # ---- the notebook contract
    Case(
        "notebook-unknown-parameter",
        "contract",
        2,
        "unknown parameter 'regoin' for notebook whatif",
        ("notebook", "whatif", "-p", "regoin", "BE10", "--out-dir", "{out}", "--no-pdf"),
        fast=True,
    ),
    Case(
        "report-notebook-without-parameters-tag",
        "contract",
        2,
        "summary.ipynb has no code cell tagged 'parameters'",
        python=PLAN,
        fixture=report_notebooks(_untag),
    ),
    Case(
        "report-notebook-lacking-a-parameter",
        "contract",
        2,
        "does not define country",
        python=PLAN,
        fixture=report_notebooks(_drop_country),
    ),
    # ---- bounded work
    Case(
        "report-1000-settings-without-yes",
        "limits",
        2,
        "the batch is large: 1 reports, 4001 notebook executions",
        ("report", "--params", "{dir}/p.yaml", "--out-dir", "{out}"),
        fixture=many_settings(1000),
        fast=True,
    ),
    Case(
        "mc-beyond-address-space-limit",
        "limits",
        2,
        "N = 500000000 replicates over 12 regions",
        python="import resource\nresource.setrlimit(resource.RLIMIT_AS, (3 * 10**9, 3 * 10**9))\n"
        "from demonoise.cli import main\n"
        "raise SystemExit(main(['compute', '--dataset', 'be-2023', '--V', '1', '--mc', '500000000', "
        "'--out', '{out}/r.csv']))",
    ),
    Case(
        "ptable-build-D-101",
        "limits",
        2,
        "above the limit 100 for building a p-table",
        ("ptable", "build", "--D", "101", "--V", "1", "--out", "{out}/p.csv"),
    ),
    Case(
        "calibrate-ptable-D-500",
        "limits",
        2,
        "above the limit 100 for building a p-table",
        ("calibrate", "--dataset", "be-2023", "--ptable-D", "500", "--out", OUT),
    ),
    Case(
        "control-V-1e12",
        "control",
        0,
        "rows",
        ("compute", "--dataset", "be-2023", "--V", "1e12", "--out", OUT),
        outputs=("r.csv",),
        timeout=60.0,
    ),
    Case(
        "compute-mc-10^7-without-yes",
        "limits",
        2,
        "pass --yes to run it",
        ("compute", "--dataset", "ess-2023", "--V", "1", "--mc", "10000000", "--out", OUT),
        timeout=60.0,
    ),
    Case(
        "compute-V-1e9-mc-10",
        "limits",
        0,
        "rows",
        ("compute", "--counts", T, "--V", "1e9", "--mc", "10", "--workers", "1", "--out", OUT),
        fixture=copy_template(),
        outputs=("r.csv",),
        timeout=30.0,
        fast=True,
    ),
    Case(
        "compute-V-1e12-mc-10",
        "limits",
        0,
        "rows",
        ("compute", "--counts", T, "--V", "1e12", "--mc", "10", "--workers", "1", "--out", OUT),
        fixture=copy_template(),
        outputs=("r.csv",),
        timeout=30.0,
    ),
    Case(
        "compute-V-1e12-D-mc-10",
        "limits",
        0,
        "rows",
        ("compute", "--counts", T, "--V", "1e12", "--D", "2000000", "--mc", "10", "--workers", "1", "--out", OUT),
        fixture=copy_template(),
        outputs=("r.csv",),
        timeout=30.0,
    ),
    # ---- controls: valid uses still succeed and leave exactly their output
    Case("control-compute", "control", 0, "rows", COMPUTE, fixture=copy_template(), outputs=("r.csv",), fast=True),
    Case(
        "control-count-10^9",
        "control",
        0,
        "rows",
        COMPUTE,
        fixture=template_cell("BE34", "M", "Y30", "population", "1000000000"),
        outputs=("r.csv",),
    ),
    Case(
        "control-ptable-build",
        "control",
        0,
        "eurostat format",
        ("ptable", "build", "--D", "2", "--V", "1", "--format", "eurostat", "--K", "1000", "--out", "{out}/p.csv"),
        outputs=("p.csv",),
    ),
]


# -------------------------------------------------------------------------------- runner
HARNESS = """
import sys
from demonoise.core.errors import DemonoiseError
try:
    exec(compile(sys.argv[1], "<case>", "exec"), {"__name__": "__case__"})
except DemonoiseError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
"""


@dataclass
class Outcome:
    case: Case
    code: int | None
    seconds: float
    problems: list[str] = field(default_factory=list)
    stderr: str = ""
    stdout: str = ""
    token: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def _fill(text: str, d: Path, out: Path) -> str:
    return text.replace("{dir}", str(d)).replace("{out}", str(out))


def _tagged_processes(token: str) -> list[int]:
    """Live processes whose environment carries ``token`` (Linux /proc): every process a
    case started inherits it, even one that left the case's session (a daemon, a kernel)."""
    tag = f"{TOKEN_VAR}={token}".encode()
    left = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
            env = (p / "environ").read_bytes()
        except OSError:
            continue
        if state != "Z" and tag in env.split(b"\0"):
            left.append(int(p.name))
    return left


def _end(pids: Sequence[int], sid: int | None = None) -> None:
    """End the processes this runner started: the case's session, then any tagged stragglers."""
    if sid is not None:
        try:
            os.killpg(sid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _wait_gone(token: str, grace: float) -> list[int]:
    """The tagged processes still alive after ``grace`` seconds (children may take a moment to exit)."""
    deadline = time.monotonic() + grace
    while True:
        left = _tagged_processes(token)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def run_case(case: Case, workdir: Path) -> Outcome:
    d = workdir / case.id
    out = d / "out"
    out.mkdir(parents=True)
    if case.fixture is not None:
        case.fixture(d)
    if case.argv is not None:
        cmd = [sys.executable, "-m", "demonoise.cli", *(_fill(a, d, out) for a in case.argv)]
    else:
        cmd = [sys.executable, "-c", HARNESS, _fill(case.python, d, out)]
    token = f"{os.getpid()}-{case.id}-{time.time_ns()}"
    env = dict(os.environ, PYTHONWARNINGS="default", OPENBLAS_NUM_THREADS="1", **{TOKEN_VAR: token})
    t0 = time.perf_counter()
    problems = []
    # output to files, not pipes: a leftover child holding a pipe must not look like a hang
    with open(d / "stdout.txt", "w+") as fo, open(d / "stderr.txt", "w+") as fe:
        proc = subprocess.Popen(
            cmd, cwd=ROOT if case.argv is not None else d, env=env, stdout=fo, stderr=fe, start_new_session=True
        )
        try:
            proc.wait(timeout=case.timeout)
        except subprocess.TimeoutExpired:
            _end(_tagged_processes(token), proc.pid)
            proc.wait()
            problems.append(f"hang (over {case.timeout:g} s)")
    seconds = time.perf_counter() - t0
    left = _wait_gone(token, GRACE)
    if left:
        problems.append(f"{len(left)} process(es) left behind {GRACE:g} s after the command ended: {left}")
        _end(left, proc.pid)
    code = proc.returncode
    stdout = (d / "stdout.txt").read_text(errors="replace")
    stderr = (d / "stderr.txt").read_text(errors="replace")
    problems += _check_output(case, code, stdout, stderr)
    problems += _check_files(case, d, out, code)
    return Outcome(case, code, seconds, problems, stderr, stdout, token)


def _check_output(case: Case, code: int | None, stdout: str, stderr: str) -> list[str]:
    problems = []
    if "Traceback (most recent call last)" in stderr + stdout:
        problems.append("traceback")
    if "RuntimeWarning" in stderr:
        problems.append("numpy/pandas RuntimeWarning leaked")
    if code not in ALLOWED_EXITS:
        problems.append(f"exit {code} (allowed: 0, 2, 130)")
    elif code != case.exit:
        problems.append(f"exit {code}, expected {case.exit}")
    where = stdout if case.exit == 0 else stderr
    if case.message not in where:
        problems.append(f"message {case.message!r} not in {'stdout' if case.exit == 0 else 'stderr'}")
    return problems


def _check_files(case: Case, d: Path, out: Path, code: int | None) -> list[str]:
    problems = []
    tmp = [str(p.relative_to(d)) for p in d.rglob(f"*{TMP_MARK}*")]
    if tmp:
        problems.append(f"temporary file(s) left: {tmp}")
    present = sorted(p.name for p in out.iterdir())
    if code == 0:
        missing = [f for f in case.outputs if f not in present or (out / f).stat().st_size == 0]
        extra = [f for f in present if f not in case.outputs]
        if missing:
            problems.append(f"expected output(s) missing or empty: {missing}")
        if extra:
            problems.append(f"unexpected file(s) in the output directory: {extra}")
    elif present:
        problems.append(f"output left after a failure: {present}")
    return problems


def select(only: Sequence[str] | None = None, fast: bool = False) -> list[Case]:
    ids = [c.id for c in CASES]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ValueError(f"duplicated case ids: {sorted(dup)}")
    cases = [c for c in CASES if (not fast or c.fast) and (not only or c.id in only)]
    unknown = set(only or ()) - set(ids)
    if unknown:
        raise SystemExit(f"unknown case id(s): {', '.join(sorted(unknown))}")
    return cases


def run_all(cases: Sequence[Case], jobs: int = 2) -> list[Outcome]:
    with tempfile.TemporaryDirectory(prefix="demonoise-hostile-") as tmp:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(lambda c: run_case(c, Path(tmp)), cases))


def totals(outcomes: Sequence[Outcome]) -> str:
    by_cls: dict[str, list[int]] = {}
    for o in outcomes:
        n = by_cls.setdefault(o.case.cls, [0, 0])
        n[0] += 1
        n[1] += o.ok
    bad = sum(not o.ok for o in outcomes)
    per = ", ".join(f"{k} {v[1]}/{v[0]}" for k, v in by_cls.items())
    wall = sum(o.seconds for o in outcomes)
    return (
        f"hostile cases: {len(outcomes)} run, {len(outcomes) - bad} clean, {bad} failed "
        f"({per}); {wall:.0f} s of case time"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="only the fast subset (the one the test suite runs)")
    ap.add_argument("--only", nargs="+", metavar="ID", help="only these cases")
    ap.add_argument("--jobs", type=int, default=2, help="cases run at once (default 2)")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--verbose", action="store_true", help="show the last line of stderr of every case")
    args = ap.parse_args(argv)
    cases = select(args.only, args.fast)
    if args.list:
        for c in cases:
            print(f"{c.id:<38} {c.cls:<12} exit {c.exit}  {'fast' if c.fast else ''}")
        print(f"{len(cases)} cases")
        return 0
    outcomes = run_all(cases, max(1, args.jobs))
    for o in outcomes:
        mark = "ok  " if o.ok else "FAIL"
        print(f"{mark} {o.case.id:<38} {o.case.cls:<12} exit {o.code}  {o.seconds:5.1f} s  {'; '.join(o.problems)}")
        if args.verbose or not o.ok:
            last = (o.stderr.strip().splitlines() or [""])[-1]
            print(f"       {last[:200]}")
    print(totals(outcomes))
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
