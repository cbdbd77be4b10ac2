"""Hostile and careless input: every bad value is a one-line typed error naming where it is.

Counts beyond 10^9, beyond 2^53, beyond 64 bits or infinite; events with zero exposure;
absurd life expectancies; implausible age codes; control characters in codes; empty or
deeply nested files; out-of-range command-line numbers. Each test corrupts a real
fixture (the counts template, Eurostat extracts) at a known place and checks that the
error names that place -- the file line is found by reading the file, not assumed.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import resource
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from demonoise.core.counts import AgeAxis, Region
from demonoise.core.errors import DataError, FormatError, ParameterError
from demonoise.io.eurostat import read_eurostat
from demonoise.io.template import read_counts_csv
from demonoise.uncertainty.propagation import linearise

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "templates" / "counts_template.csv"
EUROSTAT = Path(__file__).parent / "data" / "eurostat"


def corrupt(tmp_path: Path, name: str, match, col: int, value: str, src: Path = TEMPLATE) -> tuple[Path, list[int]]:
    """The template (or ``src``) with field ``col`` of every row matching ``match(fields)``
    set to ``value``; returns the file and the 1-based lines changed."""
    out, changed = [], []
    for n, line in enumerate(src.read_text(encoding="utf-8").splitlines(), start=1):
        f = line.split(",")
        if len(f) > 5 and not line.startswith("#") and f[0] != "region" and match(f):
            f[col] = value
            changed.append(n)
        out.append(",".join(f))
    path = tmp_path / name
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    assert changed
    return path, changed


def cell(region, sex, age, measure, year=None):
    return lambda f: f[:3] == [region, sex, age] and f[4] == measure and (year is None or f[3] == str(year))


def read_strict(path, **kw):
    """Read with every warning an error: a numpy cast warning must not come first."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_counts_csv(path, **kw)


# ----------------------------------------------------------------- counts out of range
@pytest.mark.parametrize(
    "value,exc,needle",
    [
        ("99999999999999999999999", FormatError, "above 2^53"),  # beyond 64 bits
        ("18446744073709551621", FormatError, "above 2^53"),  # 2^64 + 5
        ("9007199254740993", DataError, "above 10^9"),  # 2^53 + 1, read as 2^53: refused all the same
        ("inf", FormatError, "infinite count"),
        ("-inf", FormatError, "infinite count"),
        ("1" + "0" * 400, FormatError, "infinite count"),  # beyond the float range
        ("1000000000000000", DataError, "above 10^9"),  # 10^15 people gave e0 = 4e12 years
        ("1000000001", DataError, "above 10^9"),
    ],
)
def test_counts_out_of_range_name_file_line_and_cell_before_any_cast(tmp_path, value, exc, needle):
    path, lines = corrupt(tmp_path, "c.csv", cell("BE34", "M", "Y30", "deaths"), 5, value)
    with pytest.raises(exc, match=re.escape(needle)) as e:
        read_strict(path)
    err = e.value
    assert (err.file, err.line, err.region, err.sex, err.age, err.measure) == (
        str(path),
        lines[0],
        "BE34",
        "M",
        "Y30",
        "deaths",
    )
    assert "-9223372036854775808" not in str(err) and "\n" not in str(err)


def test_largest_plausible_count_is_accepted(tmp_path):
    path, _ = corrupt(tmp_path, "c.csv", cell("BE34", "M", "Y30", "population"), 5, "1000000000")
    c = read_strict(path)
    assert c.pop_start[c.codes.index("BE34"), c.sexes.index("M"), c.ages.index("Y30")] == 10**9


def test_counts_out_of_range_in_a_eurostat_file_name_the_line(tmp_path):
    src = gzip.decompress((EUROSTAT / "demo_r_magec_BE10_2023.csv.gz").read_bytes()).decode("utf-8").splitlines()
    col = src[0].split(",").index("values")
    n = next(i for i, line in enumerate(src) if ",Y30," in line and ",M," in line)
    f = src[n].split(",")
    f[col] = "1e400"
    src[n] = ",".join(f)
    path = tmp_path / "demo_r_magec_BE10_2023.csv"
    path.write_text("\n".join(src) + "\n", encoding="utf-8")
    from demonoise.io.tidy import counts_from_eurostat

    pop = read_eurostat(EUROSTAT / "demo_r_d2jan_BE10_2023_2024.csv.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FormatError, match="infinite count") as e:
            counts_from_eurostat(pop, read_eurostat(path), year=2023, name="x", check_totals="ignore")
    assert (e.value.line, e.value.region, e.value.sex, e.value.age) == (n + 1, "BE10", "M", "Y30")


@pytest.mark.parametrize(
    "arr,needle",
    [
        (np.float64(1e30), "above 2^53"),
        (np.float64(np.inf), "infinite count"),
        (np.uint64(2**63 + 5), "above 10^9"),
        (np.int64(10**12), "above 10^9"),
        (np.int64(-4), "negative count -4"),
    ],
)
def test_counts_api_checks_range_before_the_int64_cast(arr, needle):
    c = read_counts_csv(TEMPLATE)
    deaths = c.deaths.astype(np.asarray(arr).dtype)
    deaths[1, 2, 7] = arr
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataError, match=re.escape(needle)) as e:
            c.replace(deaths=deaths)
    assert (e.value.region, e.value.sex, e.value.age) == (c.codes[1], "T", c.ages.labels[7])


def test_year_beyond_range_is_a_format_error_not_a_wrapped_integer(tmp_path):
    path, lines = corrupt(tmp_path, "c.csv", cell("BE10", "F", "Y5", "deaths"), 3, "1e300")
    with pytest.raises(FormatError, match="four-digit year") as e:
        read_strict(path)
    assert e.value.line == lines[0]


# ------------------------------------------------------------ events with zero exposure
def test_births_with_zero_female_exposure_name_region_sex_age(tmp_path):
    path, _ = corrupt(tmp_path, "c.csv", cell("BE10", "F", "Y30", "population"), 5, "0")
    c = read_counts_csv(path)
    for ind in (("tfr",), ("asfr",)):
        with pytest.raises(DataError, match="births with zero female exposure") as e:
            linearise(c, indicators=ind)
        assert (e.value.region, e.value.sex, e.value.age) == ("BE10", "F", "Y30")


def test_zero_female_exposure_without_births_is_refused_too(tmp_path):
    """Both years' female population and the births at 30 set to 0: ASFR is 0/0, TFR undefined."""
    path, _ = corrupt(tmp_path, "c.csv", cell("BE34", "F", "Y30", "population"), 5, "0")
    path, _ = corrupt(tmp_path, "c.csv", cell("BE34", "T", "Y30", "births"), 5, "0", src=path)
    c = read_counts_csv(path)
    assert c.births[1, c.birth_ages.index("Y30")] == 0
    with pytest.raises(DataError, match="no births and zero female exposure") as e:
        linearise(c, indicators=("tfr",))
    assert (e.value.region, e.value.age) == ("BE34", "Y30")


def test_deaths_with_zero_population_above_85_refuse_asmr_not_e(tmp_path):
    """Age 90 has 127 deaths and no population: its ASMR is undefined (refused), while the
    life table pools 85+ and stays defined."""
    path, _ = corrupt(tmp_path, "c.csv", cell("BE10", "M", "Y90", "population"), 5, "0")
    c = read_counts_csv(path)
    assert c.deaths[0, 1, c.ages.index("Y90")] > 0
    with pytest.raises(DataError, match="deaths with zero exposure") as e:
        linearise(c, indicators=("asmr",))
    assert (e.value.region, e.value.sex, e.value.age) == ("BE10", "M", "Y90")
    e0 = linearise(c, indicators=("e",)).blocks["e"].lin.value[0, 1, 0]
    assert 60 < e0 < 90


def test_life_expectancy_beyond_130_years_names_region_and_sex():
    c = read_counts_csv(TEMPLATE)
    d = c.deaths.copy()
    d[1] = 0
    d[1, :, c.ages.index("Y_GE100")] = 1  # one death in the open group, 10^8 people at every age
    p = c.pop_start.copy()
    p[1] = 10**8
    with pytest.raises(DataError, match=r"life expectancy at age 0 of .* outside 0-130") as e:
        linearise(c.replace(deaths=d, pop_start=p, pop_end=p), indicators=("e",))
    assert (e.value.region, e.value.sex) == ("BE34", "F")


def test_life_table_errors_name_region_and_sex_not_indices(tmp_path):
    path, _ = corrupt(tmp_path, "c.csv", cell("BE34", "M", "Y30", "deaths"), 5, "100000")
    with pytest.raises(DataError, match="q >= 1") as e:
        linearise(read_counts_csv(path), indicators=("e",))
    assert (e.value.region, e.value.sex, e.value.age) == ("BE34", "M", "Y30")
    assert e.value.key is None and "key" not in str(e.value)


# ------------------------------------------------------------------- age and region codes
@pytest.mark.parametrize(
    "code,needle", [("Y400", "implausible age code"), ("Y131", "implausible age code"), ("Y_LT0", "empty age interval")]
)
def test_implausible_or_empty_age_codes_are_named_not_reported_as_gaps(tmp_path, code, needle):
    path, lines = corrupt(tmp_path, "c.csv", cell("BE34", "M", "Y30", "population", 2023), 2, code)
    with pytest.raises(DataError, match=needle) as e:
        read_counts_csv(path)
    assert (e.value.age, e.value.line) == (code, lines[0]) and "missing ages" not in str(e.value)


def test_oldest_plausible_single_age_is_accepted():
    assert AgeAxis.from_labels(["Y_LT1", *(f"Y{a}" for a in range(1, 130)), "Y_GE130"]).n_known == 131


@pytest.mark.parametrize("bad", ["\x00", "\t", "\u200b", "\ufeff", "\x7f"])
def test_control_characters_in_a_region_code_make_no_phantom_region(tmp_path, bad):
    path, lines = corrupt(tmp_path, "c.csv", cell("BE34", "M", "Y30", "population", 2023), 0, "BE3" + bad + "4")
    with pytest.raises(FormatError, match=f"control character U\\+{ord(bad):04X} in region code") as e:
        read_counts_csv(path)
    assert e.value.line == lines[0]


def test_control_characters_in_eurostat_codes_name_the_line(tmp_path):
    src = gzip.decompress((EUROSTAT / "demo_r_magec_BE10_2023.csv.gz").read_bytes()).decode("utf-8").splitlines()
    src[5] = src[5].replace("BE10", "BE1\x000", 1)
    path = tmp_path / "x.csv"
    path.write_text("\n".join(src) + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"control character U\+0000 in geo code") as e:
        read_eurostat(path)
    assert e.value.line == 6
    with pytest.raises(DataError, match="control character"):
        Region("BE\x0010")


# ------------------------------------------------------------------------ file structure
def test_tsv_with_a_header_and_no_rows(tmp_path):
    path = tmp_path / "demo_r_d2jan.tsv"
    path.write_text("freq,unit,sex,age,geo\\TIME_PERIOD\t2023 \t2024 \n", encoding="utf-8")
    with pytest.raises(FormatError, match="header but no data rows") as e:
        read_eurostat(path)
    assert (e.value.file, e.value.line) == (str(path), 1)


def test_json_nested_100000_deep_is_one_line_everywhere_json_is_read(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / "deep.json"
    path.write_text(deep, encoding="utf-8")
    with pytest.raises(FormatError, match="nested too deeply") as e:
        read_eurostat(path)
    assert e.value.file == str(path)
    from demonoise.io import geo

    with pytest.raises(FormatError, match="nested too deeply") as e:
        geo.load_nuts2_geojson(deep, file="mine.geojson")
    assert e.value.file == "mine.geojson"
    from demonoise.cli import _parameter_value

    assert _parameter_value(deep) == deep  # not JSON after all: the text itself, no RecursionError


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda d: d["value"].update({"0": int("1" + "0" * 400)}), None),  # read as inf, refused as a count
        (lambda d: d.update(size=[10**5] * 3, id=["geo", "age", "time"]), "larger than"),
        (lambda d: d.update(size=[0] * len(d["size"])), "no cells"),
        (lambda d: d.update(size="3"), "'size' must be a list"),
        (lambda d: d.update(id=5), "'id' must be a list"),
        (lambda d: d.update(dimension=[]), "'dimension' must be an object"),
        (lambda d: d["value"].update({"99999999999999999999999": 1}), "non-integer position"),
    ],
)
def test_hostile_jsonstat_structures(tmp_path, mutate, needle):
    d = json.loads((EUROSTAT / "demo_pjan_jsonstat_sample.json").read_text(encoding="utf-8"))
    mutate(d)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    if needle is None:
        assert np.isinf(read_eurostat(path)["value"]).any()
        return
    with pytest.raises(FormatError, match=needle) as e:
        read_eurostat(path)
    assert e.value.file == str(path)


@pytest.mark.parametrize(
    "text,needle", [('{"value": NaN}', "NaN is not a JSON number"), ("[" + "1" * 5000 + "]", "digits")]
)
def test_json_values_python_would_accept_or_crash_on(tmp_path, text, needle):
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatError, match=needle):
        read_eurostat(path)


def test_ptable_file_integers_beyond_2_53_are_refused_before_the_cast(tmp_path):
    from demonoise.analysis.ptables import read_ptable

    path = tmp_path / "p.csv"
    path.write_text('"pcv";"ckey";"pvalue"\n1;99999999999999999999;0\n', encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FormatError, match="column ckey: 1e\\+20 is beyond 2\\^53") as e:
            read_ptable(path)
    assert e.value.line == 2


# ------------------------------------------------------------------ parameter limits
def test_variance_and_deviation_limits_in_the_library():
    from demonoise.noise.models import GenericNoise
    from demonoise.noise.ptable import build_ptable, check_variance_limit
    from demonoise.uncertainty.calibration import PTableFamily

    for V in (1e13, 1e300):
        with pytest.raises(ParameterError, match="above the limit 10\\^12"):
            GenericNoise(V)
        with pytest.raises(ParameterError, match="above the limit 10\\^12"):
            build_ptable(3, V)
    check_variance_limit(1e12)  # the limit itself is allowed
    assert GenericNoise(1e6).exact_variance() == pytest.approx(1e6, rel=1e-9)
    with pytest.raises(ParameterError, match="above the limit 10\\^4"):
        build_ptable(10_001, 1.0)
    with pytest.raises(ParameterError, match="above the limit 10\\^4"):
        PTableFamily(10_001)


def test_cell_keys_zero_is_refused_not_replaced_by_the_default(tmp_path):
    from demonoise.analysis.ptables import load_ptable, write_ptable
    from demonoise.noise.ptable import build_ptable

    t = build_ptable(2, 1.0)
    with pytest.raises(ParameterError, match="K must be >= 1"):
        write_ptable(t, tmp_path / "p.csv", "eurostat", K=0)
    with pytest.raises(ParameterError, match="more than 10\\^8 entries"):
        t.to_key_table(10**8)
    assert not (tmp_path / "p.csv").exists()
    assert load_ptable("v01").n_keys == 100_000


def _cli(*argv, limit_mb: int | None = None, timeout: float = 60):
    """Run the command in its own process, optionally under an address-space limit."""

    def limit():
        if limit_mb:
            resource.setrlimit(resource.RLIMIT_AS, (limit_mb * 2**20, limit_mb * 2**20))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "demonoise.cli", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            ["compute", "--counts", TEMPLATE, "--V", "1e15", "--out", "{out}"],
            "argument --V: V = 1e+15 is above the limit 10^12",
        ),
        (["compute", "--counts", TEMPLATE, "--V", "1e300", "--out", "{out}"], "above the limit 10^12"),
        (
            ["ptable", "build", "--D", "100000", "--V", "1", "--out", "{out}"],
            "D (maximum deviation) = 100000 is above the limit",
        ),
        (
            ["compute", "--counts", TEMPLATE, "--V", "1", "--mc", "1" + "0" * 30, "--out", "{out}"],
            "argument --mc: must be at most 10^9",
        ),
    ],
)
def test_refusals_come_before_any_work_under_a_memory_limit(tmp_path, argv, needle):
    """Under a 2 GB address-space limit: these once asked for 17.5 GB, 74.5 GiB or an
    unbounded array; now exit 2 at once with the limit and why, nothing written."""
    out = tmp_path / "out.csv"
    r = _cli(*[str(a).replace("{out}", str(out)) for a in argv], limit_mb=2000)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            ["ptable", "build", "--D", "3", "--V", "1", "--format", "eurostat", "--K", "0", "--out", "{out}"],
            "--K: must be >= 1",
        ),
        (
            ["compare", "--counts", TEMPLATE, "--ptable", "v01", "--size-classes", "0", "--out", "{out}"],
            "--size-classes: a size-class edge is a population",
        ),
        (
            ["compare", "--counts", TEMPLATE, "--ptable", "v01", "--size-classes", "nan", "--out", "{out}"],
            "--size-classes: a size-class edge is a population",
        ),
        (
            ["compare", "--counts", TEMPLATE, "--ptable", "v01", "--level", "-1", "--out", "{out}"],
            "--level: invalid choice",
        ),
        (["fetch", "--year", "2023", "--offline", "--timeout", "1e300"], "--timeout: timeout must be a number"),
        (["report", "--params", "params/default.yaml", "--workers", "100000"], "--workers: workers must be <= 64"),
        (["ptable", "show", "v01", "--V", "inf"], "--V: V is a variance"),
        (["compute", "--counts", TEMPLATE, "--V", "1", "--mc", "-1", "--out", "{out}"], "--mc: must be >= 0"),
    ],
)
def test_cli_numeric_options_out_of_range_exit_2_naming_the_option(tmp_path, capsys, argv, needle):
    from demonoise.cli import main

    out = tmp_path / "out.csv"
    with pytest.raises(SystemExit) as e:
        main([str(a).replace("{out}", str(out)) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 2 and "argument " + needle.split(":")[0] in err and needle in err, err
    assert "variance" not in err or "--V" in needle
    assert not out.exists()
