"""Eurostat readers on real fixtures (values checked against the files by hand) and on
bad inputs written to tmp_path."""

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from demonoise.core.errors import FormatError, ParameterError
from demonoise.io.eurostat import (
    read_eurostat,
    read_jsonstat,
    read_long_csv,
    read_sdmx_csv,
    read_tsv,
    sniff_format,
)

E = "eurostat"


def cell(df, **kw):
    """The one row matching every key=value; fails if not exactly one."""
    m = np.ones(len(df), bool)
    for k, v in kw.items():
        m &= (df[k] == v).to_numpy()
    sub = df[m]
    assert len(sub) == 1, (kw, len(sub))
    return sub.iloc[0], int(sub.index[0])


# ------------------------------------------------------------------ real fixtures
def test_long_csv_values_first_layout(data_dir):
    df = read_eurostat(data_dir / E / "demo_r_d2jan_BE10_2023_2024.csv.gz")
    assert list(df.columns[:6]) == ["geo", "sex", "age", "time", "value", "flag"]
    assert set(df.columns[6:]) == {"freq", "unit"}
    assert df["time"].dtype == np.int64 and df["value"].dtype == float
    assert len(df) == 618 and df.attrs["dataset"] == "demo_r_d2jan" and df.attrs["extracted"] == "unknown"
    # zcat demo_r_d2jan_BE10_2023_2024.csv.gz | grep -n ...: line 416 "7262.0,A,NR,F,Y_LT1,BE10,2023",
    # line 205 "347.0,A,NR,T,Y_OPEN,BE10,2024", line 206 "0.0,A,NR,T,UNK,BE10,2023"
    row, line = cell(df, geo="BE10", sex="F", age="Y_LT1", time=2023)
    assert (row["value"], row["flag"], line) == (7262.0, "", 416)
    assert cell(df, sex="T", age="Y_OPEN", time=2024)[0]["value"] == 347.0
    assert cell(df, sex="T", age="UNK", time=2023)[0]["value"] == 0.0


def test_long_csv_values_in_the_middle_layout(data_dir):
    path = data_dir / E / "demo_r_pjangroup_sample.csv.gz"
    assert sniff_format(path) == "long"
    df = read_long_csv(path)
    assert df.attrs["dataset"] == "demo_r_pjangroup"
    # zcat ... | grep -n: line 389 "A,NR,F,Y_GE85,BE34,4990.0,2023", line 1174 "A,NR,T,Y80-84,EL30,108778.0,2023"
    row, line = cell(df, geo="BE34", sex="F", age="Y_GE85", time=2023)
    assert (row["value"], line) == (4990.0, 389)
    assert cell(df, geo="EL30", sex="T", age="Y80-84", time=2023)[0]["value"] == 108778.0
    # NL35 (a NUTS 2024 code) has 2024 values only
    assert sorted(df.loc[df["geo"] == "NL35", "time"].unique()) == [2024]


def test_sdmx_csv_with_labels(data_dir):
    path = data_dir / E / "demo_fordagec_sdmx_sample.csv.gz"
    assert sniff_format(path) == "sdmx"
    df = read_sdmx_csv(path)
    # label columns (Time frequency, Age class, Geopolitical entity ..., Time) are dropped
    assert list(df.columns) == ["geo", "age", "time", "value", "flag", "freq", "unit", "ord_brth"]
    assert df.attrs["dataset"] == "demo_fordagec" and df.attrs["extracted"] == "unknown"
    # zcat ... | grep -n: line 155 BE Y30 2018 -> 10198; line 161 EU27_2020 Y30 2018 -> 305341 flag "be";
    # line 11 BE UNK 2018 -> 870
    row, line = cell(df, geo="BE", age="Y30", time=2018)
    assert (row["value"], row["flag"], line) == (10198.0, "", 155)
    row, line = cell(df, geo="EU27_2020", age="Y30", time=2018)
    assert (row["value"], row["flag"], line) == (305341.0, "be", 161)
    assert cell(df, geo="BE", age="UNK", time=2018)[0]["value"] == 870.0


def test_sdmx_csv_plain_layout_with_last_update(data_dir):
    path = data_dir / E / "demo_r_fagec_sdmx_constructed.csv"
    df = read_eurostat(path)
    assert df.attrs["format"] == "sdmx" and df.attrs["dataset"] == "demo_r_fagec"
    # LAST UPDATE "14/10/25 23:00:00" (dd/mm/yy) -> ISO
    assert df.attrs["extracted"] == "2025-10-14T23:00:00"
    assert list(df.columns) == ["geo", "age", "time", "value", "flag", "freq", "unit"]
    # line 3 of the file: "ESTAT:DEMO_R_FAGEC(1.0),14/10/25 23:00:00,A,NR,Y_LT15,BE10,2023,4,,"
    row, line = cell(df, geo="BE10", age="Y_LT15")
    assert (row["value"], row["flag"], line) == (4.0, "", 3)
    assert set(df.loc[df["geo"] == "BE34", "flag"]) == {"p"}


def test_jsonstat_sparse_values_and_status(data_dir):
    path = data_dir / E / "demo_pjan_jsonstat_sample.json"
    assert sniff_format(path) == "json"
    df = read_jsonstat(path)
    assert df.attrs["dataset"] == "demo_pjan"
    assert df.attrs["extracted"] == "2025-10-14T23:00:00+0200"
    assert len(df) == 1 * 1 * 103 * 3 * 3 * 3  # the whole cube, absent cells NaN
    # values looked up in the original JSON with the row-major position formula:
    # DE T TOTAL 2023 = 83118501 status b; FR F Y_LT1 2024 = 309963 status p;
    # EU27_2020 M Y_OPEN 2020 = 22848 status e; EU27_2020 M Y90 2020 absent; DE F UNK 2023 = 0, no status
    assert tuple(cell(df, geo="DE", sex="T", age="TOTAL", time=2023)[0][["value", "flag"]]) == (83118501.0, "b")
    assert tuple(cell(df, geo="FR", sex="F", age="Y_LT1", time=2024)[0][["value", "flag"]]) == (309963.0, "p")
    assert tuple(cell(df, geo="EU27_2020", sex="M", age="Y_OPEN", time=2020)[0][["value", "flag"]]) == (22848.0, "e")
    assert np.isnan(cell(df, geo="EU27_2020", sex="M", age="Y90", time=2020)[0]["value"])
    assert tuple(cell(df, geo="DE", sex="F", age="UNK", time=2023)[0][["value", "flag"]]) == (0.0, "")
    original = json.loads(path.read_text(encoding="utf-8"))
    assert df["value"].notna().sum() == len(original["value"])


def test_jsonstat_dense_list_equals_sparse(data_dir, tmp_path):
    d = json.loads((data_dir / E / "demo_pjan_jsonstat_sample.json").read_text(encoding="utf-8"))
    n = int(np.prod(d["size"]))
    dense = dict(d)
    dense["value"] = [d["value"].get(str(i)) for i in range(n)]
    dense["status"] = [d["status"].get(str(i)) for i in range(n)]
    # category index as a list instead of an object
    dense["dimension"] = json.loads(json.dumps(d["dimension"]))
    geo = dense["dimension"]["geo"]["category"]
    geo["index"] = sorted(geo["index"], key=geo["index"].get)
    p = tmp_path / "dense.json"
    p.write_text(json.dumps(dense), encoding="utf-8")
    a = read_jsonstat(data_dir / E / "demo_pjan_jsonstat_sample.json")
    b = read_jsonstat(p)
    pd.testing.assert_frame_equal(a, b, check_like=False)


def test_tsv_newer_api_layout(data_dir):
    path = data_dir / E / "demo_mlexpec_sample.tsv.gz"
    assert sniff_format(path) == "tsv"
    df = read_tsv(path)
    assert list(df.columns) == ["geo", "sex", "age", "time", "value", "flag", "freq", "unit"]
    assert df.attrs["dataset"] == "demo_mlexpec" and df["time"].max() == 2022
    # zcat | grep -n: line 344 "A,YR,F,Y_LT1,FR ... 85.3 p\t85.5 p\t85.1 p" (2020, 2021, 2022);
    # line 1031 "A,YR,T,Y_LT1,EU27_2020 ... 80.4 bep ..." (2020); line 345 LI "86.4 e" (2021)
    row, line = cell(df, geo="FR", sex="F", age="Y_LT1", time=2022)
    assert (row["value"], row["flag"], line) == (85.1, "p", 344)
    assert tuple(cell(df, geo="EU27_2020", sex="T", age="Y_LT1", time=2020)[0][["value", "flag"]]) == (80.4, "bep")
    assert tuple(cell(df, geo="LI", sex="F", age="Y_LT1", time=2021)[0][["value", "flag"]]) == (86.4, "e")


def test_tsv_older_bulk_layout_with_flagged_missing(data_dir):
    df = read_eurostat(data_dir / E / "demo_r_mlifexp_sample.tsv.gz")
    assert list(df.columns) == ["geo", "sex", "age", "time", "value", "flag", "unit"]
    assert (df["time"].min(), df["time"].max()) == (1990, 2021)
    # zcat | grep -n: line 1289 "YR,T,Y_LT1,BE10\t81.4 \t79.4 ..." (2021, 2020);
    # line 427 "YR,F,Y_LT1,AL\t77.7 ... 79.7 e\t80.2 e\t: ..." (2015 = 79.7 e); DE11 carries "r"
    row, line = cell(df, geo="BE10", sex="T", age="Y_LT1", time=2021)
    assert (row["value"], row["flag"], line) == (81.4, "", 1289)
    assert tuple(cell(df, geo="AL", sex="F", age="Y_LT1", time=2015)[0][["value", "flag"]]) == (79.7, "e")
    assert "r" in set(df.loc[df["geo"] == "DE11", "flag"])
    # ": e" (missing but flagged) in the AL rows: value NaN, flag kept
    al = df[(df["geo"] == "AL") & df["value"].isna() & (df["flag"] == "e")]
    assert len(al) > 0


def test_tsv_plain_text_and_explicit_format(data_dir, tmp_path):
    raw = gzip.decompress((data_dir / E / "demo_r_mlifexp_sample.tsv.gz").read_bytes())
    p = tmp_path / "demo_r_mlifexp.tsv"
    p.write_bytes(raw)
    a = read_eurostat(p, format="tsv")
    b = read_eurostat(data_dir / E / "demo_r_mlifexp_sample.tsv.gz")
    assert a.attrs["dataset"] == "demo_r_mlifexp"
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())
    with pytest.raises(ParameterError):
        read_eurostat(p, format="xlsx")


def test_dataset_override(data_dir):
    df = read_eurostat(data_dir / E / "demo_r_magec_BE10_2023.csv.gz", dataset="demo_r_magec_custom")
    assert df.attrs["dataset"] == "demo_r_magec_custom"


# -------------------------------------------------------------------- bad inputs
def _lines(data_dir, name):
    return gzip.decompress((data_dir / E / name).read_bytes()).decode("utf-8").splitlines(keepends=True)


def _write(tmp_path, name, lines, gz=False):
    p = tmp_path / name
    data = "".join(lines).encode("utf-8")
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


def test_truncated_gzip(data_dir, tmp_path):
    raw = (data_dir / E / "demo_r_d2jan_BE10_2023_2024.csv.gz").read_bytes()
    p = tmp_path / "demo_r_d2jan_cut.csv.gz"
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(FormatError, match="truncated or corrupt gzip") as e:
        read_eurostat(p)
    assert e.value.file == str(p)


def test_truncated_json(data_dir, tmp_path):
    text = (data_dir / E / "demo_pjan_jsonstat_sample.json").read_text(encoding="utf-8")
    p = tmp_path / "cut.json"
    p.write_text(text[: len(text) - 500], encoding="utf-8")
    with pytest.raises(FormatError, match="invalid or truncated JSON") as e:
        read_eurostat(p)
    assert e.value.file == str(p) and e.value.line == 1


@pytest.mark.parametrize(
    "name, header, fmt",
    [
        ("demo_r_d2jan_BE10_2023_2024.csv.gz", "vals,freq,unit,sex,age,geo,time\n", "long"),
        ("demo_fordagec_sdmx_sample.csv.gz", "STRUCTURE,STRUCTURE_ID,freq,unit,age,geo,OBS_VALUE\n", "sdmx"),
        ("demo_mlexpec_sample.tsv.gz", "freq,unit,sex,age,geo\\YEAR\t2020 \n", "tsv"),
    ],
)
def test_wrong_header(data_dir, tmp_path, name, header, fmt):
    lines = _lines(data_dir, name)
    p = _write(tmp_path, "bad_" + name, [header] + lines[1:], gz=True)
    with pytest.raises(FormatError) as e:
        read_eurostat(p, format=fmt)
    assert e.value.file == str(p) and e.value.line == 1


def test_unrecognised_format(tmp_path):
    p = _write(tmp_path, "x.csv", ["a,b,c\n", "1,2,3\n"])
    with pytest.raises(FormatError, match="unrecognised Eurostat format") as e:
        read_eurostat(p)
    assert e.value.file == str(p)


def test_non_numeric_value_long_csv(data_dir, tmp_path):
    lines = _lines(data_dir, "demo_r_d2jan_BE10_2023_2024.csv.gz")
    assert lines[415] == "7262.0,A,NR,F,Y_LT1,BE10,2023\n"
    lines[415] = "72x2.0,A,NR,F,Y_LT1,BE10,2023\n"
    p = _write(tmp_path, "d2jan.csv.gz", lines, gz=True)
    with pytest.raises(FormatError, match="non-numeric value '72x2.0'") as e:
        read_eurostat(p)
    err = e.value
    assert (err.file, err.line, err.region, err.sex, err.age, err.year) == (str(p), 416, "BE10", "F", "Y_LT1", "2023")
    assert "geo=BE10" in err.key


def test_non_numeric_value_tsv(data_dir, tmp_path):
    lines = _lines(data_dir, "demo_mlexpec_sample.tsv.gz")
    i = next(i for i, line in enumerate(lines) if line.startswith("A,YR,F,Y_LT1,FR\t"))
    lines[i] = lines[i].replace("85.1 p", "85,1 p")
    p = _write(tmp_path, "mlexpec.tsv.gz", lines, gz=True)
    with pytest.raises(FormatError, match="non-numeric value") as e:
        read_tsv(p)
    err = e.value
    assert (err.line, err.region, err.sex, err.age, err.year) == (i + 1, "FR", "F", "Y_LT1", "2022")


def test_non_numeric_value_jsonstat(data_dir, tmp_path):
    d = json.loads((data_dir / E / "demo_pjan_jsonstat_sample.json").read_text(encoding="utf-8"))
    k = next(iter(d["value"]))
    d["value"][k] = "n/a"
    p = tmp_path / "j.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(FormatError, match="non-numeric value 'n/a'") as e:
        read_jsonstat(p)
    assert e.value.file == str(p) and e.value.region in ("EU27_2020", "DE", "FR")


def test_unknown_flag(data_dir, tmp_path):
    lines = _lines(data_dir, "demo_r_mlifexp_sample.tsv.gz")
    i = next(i for i, line in enumerate(lines) if line.startswith("YR,F,Y_LT1,AL\t"))
    lines[i] = lines[i].replace("79.7 e", "79.7 q", 1)
    p = _write(tmp_path, "mlifexp.tsv.gz", lines, gz=True)
    with pytest.raises(FormatError, match="unknown flag '79.7 q'") as e:
        read_eurostat(p)
    assert (e.value.line, e.value.region, e.value.age, e.value.year) == (i + 1, "AL", "Y_LT1", "2015")


@pytest.mark.parametrize(
    "name, pick",
    [
        ("demo_r_magec_BE10_2023.csv.gz", lambda line: line.startswith("36.0,A,NR,T,Y_LT1,BE10,2023")),
        ("demo_fordagec_sdmx_sample.csv.gz", lambda line: ",Y30,30 years,TOTAL,Total,BE,Belgium,2018," in line),
        ("demo_r_mlifexp_sample.tsv.gz", lambda line: line.startswith("YR,T,Y_LT1,BE10\t")),
    ],
)
def test_duplicated_key(data_dir, tmp_path, name, pick):
    lines = _lines(data_dir, name)
    i = next(i for i, line in enumerate(lines) if pick(line))
    lines.append(lines[i])
    p = _write(tmp_path, name, lines, gz=True)
    with pytest.raises(FormatError, match="duplicated key") as e:
        read_eurostat(p)
    err = e.value
    assert err.file == str(p) and err.line == len(lines)
    assert err.region in ("BE10", "BE") and err.age in ("Y_LT1", "Y30")
    assert f"lines {i + 1}, {len(lines)}" in str(err) or f"lines {i + 1}," in str(err)


def test_duplicated_category_in_jsonstat(data_dir, tmp_path):
    d = json.loads((data_dir / E / "demo_pjan_jsonstat_sample.json").read_text(encoding="utf-8"))
    geo = d["dimension"]["geo"]["category"]
    geo["index"] = ["DE", "DE", "FR"]
    p = tmp_path / "dup.json"
    p.write_text(json.dumps(d), encoding="utf-8")
    with pytest.raises(FormatError, match="duplicated key") as e:
        read_jsonstat(p)
    assert e.value.region == "DE"


def test_truncated_line_and_non_annual_time(data_dir, tmp_path):
    lines = _lines(data_dir, "demo_r_magec_BE10_2023.csv.gz")
    cut = lines[:10] + [lines[10][:12] + "\n"]
    p = _write(tmp_path, "cut.csv", cut)
    with pytest.raises(FormatError, match="expected 7 fields, found 5") as e:
        read_long_csv(p)
    assert e.value.line == 11
    lines[5] = lines[5].replace(",2023", ",2023-Q1")
    p = _write(tmp_path, "q.csv", lines)
    with pytest.raises(FormatError, match="not a year") as e:
        read_long_csv(p)
    assert e.value.line == 6


def test_jsonstat_structure_errors(data_dir, tmp_path):
    d = json.loads((data_dir / E / "demo_pjan_jsonstat_sample.json").read_text(encoding="utf-8"))
    bad = dict(d, size=d["size"][:-1])
    p = tmp_path / "s.json"
    p.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(FormatError, match="'size' has 5"):
        read_jsonstat(p)
    bad = dict(d, value={"999999": 1})
    p.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(FormatError, match="outside the cube"):
        read_jsonstat(p)


def test_sdmx_confidential_and_missing(data_dir, tmp_path):
    lines = (data_dir / E / "demo_r_fagec_sdmx_constructed.csv").read_text().splitlines(keepends=True)
    assert lines[4] == "ESTAT:DEMO_R_FAGEC(1.0),14/10/25 23:00:00,A,NR,Y16,BE10,2023,12,,\n"
    lines[4] = "ESTAT:DEMO_R_FAGEC(1.0),14/10/25 23:00:00,A,NR,Y16,BE10,2023,,,C\n"
    lines[5] = lines[5].replace(",2023,25,,", ",2023,:,e,")
    p = tmp_path / "conf.csv"
    p.write_text("".join(lines))
    df = read_sdmx_csv(p)
    row, line = cell(df, geo="BE10", age="Y16")
    assert np.isnan(row["value"]) and row["flag"] == "C" and line == 5
    row, line = cell(df, geo="BE10", age="Y17")
    assert np.isnan(row["value"]) and row["flag"] == "e" and line == 6
