"""The Europe overview: its tables on small hand-made frames (expected values worked out
by hand), the embedded NUTS 2 boundaries, the map, and the whole report executed
headless on a subset of ess-2023 (offline HTML with the map)."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _fixtures_results import results_row
from demonoise.analysis import overview as aov
from demonoise.core.errors import FormatError, ParameterError
from demonoise.core.vocabulary import ADMIXTURE_CLASSES, NO_DATA_COLOUR
from demonoise.core.vocabulary import admixture_class as vocabulary_class
from demonoise.io import geo
from demonoise.report.content import overview as ov
from report_helpers import scan_html


def _chart_svgs(html: str) -> list[str]:
    """The charts of a rendered page (SVG images inlined as data URIs)."""
    import base64

    srcs = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    return [base64.b64decode(x).decode("utf-8") for x in srcs]


ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "overview.ipynb"


# --------------------------------------------------------------- hand-made frames
def _row(
    region,
    V,
    indicator="e",
    age=0.0,
    sex="T",
    *,
    value=80.0,
    events=100.0,
    exposure=1000.0,
    var_pois=1.0,
    var_noise=0.0,
    level=2,
    model="generic",
    name=None,
):
    return results_row(
        region, indicator, sex, age, value, events, exposure, var_pois, var_noise,
        dataset="toy", data_status="demonstration data: toy", noise_model=model, V=float(V),
        region_name=name or f"Region {region}", nuts_level=level, age_group="",
    )  # fmt: skip


def _e0_frame(ptable: bool = False):
    """Three NUTS 2 regions and a country row; e0 and TFR at V = 1 and 5 (and, with
    ``ptable``, e0 of one region under the p-table v01).

    var_pois = 1 everywhere, so A = sqrt(1 + var_noise) - 1:
    var_noise 0.2 -> A = 0.0954; 0.44 -> 0.2; 3 -> 1; 0.96 -> 0.4; 8 -> 2; 1.25 -> 0.5."""
    rows = []
    for region, pop, vn1, vn5 in (
        ("AA11", 5000.0, 0.2, 1.25),
        ("AA12", 2000.0, 0.44, 8.0),
        ("BB21", 9000.0, 0.96, 3.0),
    ):
        rows.append(_row(region, 1, exposure=pop, var_noise=vn1))
        rows.append(_row(region, 5, exposure=pop, var_noise=vn5))
        # TFR: female only, its own exposure (women 15-49) is not the population shown
        rows.append(_row(region, 1, "tfr", np.nan, "F", value=1.5, exposure=pop / 4, var_pois=0.01, var_noise=0.002))
        rows.append(_row(region, 5, "tfr", np.nan, "F", value=1.5, exposure=pop / 4, var_pois=0.01, var_noise=0.0105))
        rows.append(_row(region, 1, "e", 0.0, "F", exposure=pop / 2, var_noise=0.0))
        rows.append(_row(region, 5, "e", 0.0, "F", exposure=pop / 2, var_noise=0.0))
    rows.append(_row("AA", 5, exposure=7000.0, var_noise=100.0, level=0))  # country row: never in NUTS 2 tables
    if ptable:  # a p-table setting beside the V's (nominal V = 1, as v01's)
        rows.append(_row("AA11", 1, exposure=5000.0, var_noise=50.0, model="ptable") | {"ptable": "ptable v01"})
    return pd.DataFrame(rows)


def test_population_from_e0_exposure_and_asmr_fallback():
    df = _e0_frame()
    p = aov.population(aov.nuts2(df)).set_index(["region", "sex"])["population"]
    assert p[("AA11", "T")] == 5000.0 and p[("AA12", "F")] == 1000.0 and len(p) == 6
    # without e rows: the sum of the asmr exposures over ages (each age once, whatever the V)
    a = pd.DataFrame(
        [_row("AA11", v, "asmr", age, exposure=e) for v in (1, 5) for age, e in ((0.0, 10.0), (1.0, 30.0))]
    )
    assert aov.population(a).set_index("region").loc["AA11", "population"] == 40.0


def test_indicator_rows_nuts2_generic_and_population_of_the_sex():
    df = _e0_frame()
    r = aov.indicator_rows(df, "e0")
    assert sorted(r["region"].unique()) == ["AA11", "AA12", "BB21"]  # no country row
    assert len(r) == 6 and set(r["V"]) == {1.0, 5.0}
    # a p-table is a setting of its own beside the V's (its nominal V = 1 is not the generic V = 1)
    p = aov.indicator_rows(_e0_frame(ptable=True), "e0")
    assert aov.setting_order(p) == ["V = 1", "V = 5", "p-table v01"] and len(p) == 7
    pt = p[p["setting"] == "p-table v01"].iloc[0]
    assert pt["region"] == "AA11" and pt["admixture"] == pytest.approx(math.sqrt(51) - 1)
    gen = p[(p["setting"] == "V = 1") & (p["region"] == "AA11")].iloc[0]
    assert gen["admixture"] == pytest.approx(math.sqrt(1.2) - 1)
    w = aov.most_affected(_e0_frame(ptable=True), 3)
    assert "admixture_ptable_v01" in w and w.set_index("region").loc["AA11", "admixture_ptable_v01"] == pytest.approx(
        math.sqrt(51) - 1
    )
    t = aov.indicator_rows(df, "tfr", sex="T")  # fertility: always women, population of women
    assert set(t["sex"]) == {"F"}
    assert t.set_index(["region", "V"]).loc[("AA12", 1.0), "population"] == 1000.0
    with pytest.raises(ParameterError, match="unknown overview indicator"):
        aov.indicator_rows(df, "e30")
    with pytest.raises(ParameterError, match="sex"):
        aov.indicator_rows(df, "e0", sex="X")


def test_most_affected_ranks_by_admixture_at_the_largest_V():
    df = _e0_frame()
    m = aov.most_affected(df, 2)
    # A at V = 5: AA11 0.5, AA12 2, BB21 1 -> AA12, BB21
    assert m["region"].tolist() == ["AA12", "BB21"]
    assert m["admixture_V5"].tolist() == pytest.approx([2.0, 1.0])
    assert m["admixture_V1"].tolist() == pytest.approx([0.2, 0.4])
    assert m["rel_noise_V5"].tolist() == pytest.approx([math.sqrt(8.0) / 80, math.sqrt(3.0) / 80])
    assert m["population"].tolist() == [2000.0, 9000.0]
    assert m["rel_pois"].tolist() == pytest.approx([1 / 80, 1 / 80])
    # ranked at V = 1 instead: BB21 0.4, AA12 0.2, AA11 0.0954
    assert aov.most_affected(df, 3, by=1)["region"].tolist() == ["BB21", "AA12", "AA11"]
    with pytest.raises(ParameterError, match="V = 3"):
        aov.most_affected(df, 3, by=3)
    with pytest.raises(ParameterError, match="n must be"):
        aov.most_affected(df, 0)


def test_summary_table_counts_regions_over_10_and_41_percent():
    s = aov.summary_table(_e0_frame(), keys=("e0", "tfr")).set_index(["indicator", "V"])
    e1, e5 = s.loc[("e0", 1.0)], s.loc[("e0", 5.0)]
    assert e1["regions"] == 3
    assert e1["admixture_median"] == pytest.approx(0.2) and e1["admixture_max"] == pytest.approx(0.4)
    assert e1["over_10"] == 2 and e1["over_41"] == 0  # 0.0954 < 0.1; 0.4 < sqrt(2) - 1
    assert e5["over_10"] == 3 and e5["over_41"] == 3  # 0.5, 2, 1
    assert e5["rel_noise_max"] == pytest.approx(math.sqrt(8.0) / 80)
    t1 = s.loc[("tfr", 1.0)]  # var_noise / var_pois = 0.2 in every region
    assert t1["admixture_median"] == pytest.approx(math.sqrt(1.2) - 1) and t1["over_10"] == 0


def test_age_summary_median_over_ages_counts_empty_ages_as_infinite():
    rows = []
    # region AA11: three ages; the third has no events -> infinite relative noise sd
    for age, vp, vn in ((0.0, 4.0, 1.0), (1.0, 1.0, 9.0), (2.0, 0.0, 1.0)):
        r = _row("AA11", 1, "asmr", age, value=0.01, events=vp, var_pois=vp, var_noise=vn)
        if vp == 0:  # no deaths: the rate is 0, its relative uncertainties infinite
            r.update(value=0.0, rel_pois=np.nan, rel_noise=np.inf, rel_tot=np.inf, admixture=np.inf)
        rows.append(r)
    s = aov.age_summary(pd.DataFrame(rows), "asmr")
    assert len(s) == 1 and s["ages"].iloc[0] == 3 and s["events"].iloc[0] == 5.0
    # rel_noise: 100, 300, inf -> median 300 (as a fraction: 3.0)
    assert s["rel_noise"].iloc[0] == pytest.approx(300.0)
    # admixture: sqrt(1.25) - 1, sqrt(10) - 1, inf -> the middle one
    assert s["admixture"].iloc[0] == pytest.approx(math.sqrt(10.0) - 1)


def test_granularity_effect_ratio_of_noise_sd():
    single = _e0_frame()
    five = single.copy()
    five["granularity"] = "5y"
    five["var_noise"] = five["var_noise"] / 4.0  # noise sd halved in every region
    five["sd_noise"] = np.sqrt(five["var_noise"])
    five["admixture"] = np.sqrt(1 + five["var_noise"] / five["var_pois"]) - 1
    five = five[five["region"] != "BB21"]  # a region in one table only is left out
    eff = aov.granularity_effect(single, five, keys=("e0", "tfr"))
    assert sorted(eff["region"].unique()) == ["AA11", "AA12"]
    assert eff["ratio"].to_numpy() == pytest.approx(2.0)
    row = eff[(eff["indicator"] == "e0") & (eff["region"] == "AA12") & (eff["V"] == 5.0)].iloc[0]
    assert row["sd_noise_single"] == pytest.approx(math.sqrt(8.0)) and row["sd_noise_5y"] == pytest.approx(
        math.sqrt(2.0)
    )
    assert row["admixture_single"] == pytest.approx(2.0) and row["admixture_5y"] == pytest.approx(math.sqrt(3.0) - 1)
    summ = aov.granularity_summary(eff).set_index(["indicator", "V"])
    assert summ.loc[("e0", 5.0), "ratio_median"] == pytest.approx(2.0)
    assert (
        summ.loc[("e0", 5.0), "over_41_single"] == 2 and summ.loc[("e0", 5.0), "over_41_5y"] == 1
    )  # sqrt(3)-1 > .414, sqrt(1.3125)-1 < .414


def test_admixture_classes_at_the_breaks():
    A = [0.0, 9.99, 10.0, 41.42, 41.43, 99.9, 330.0, np.nan]
    got = aov.admixture_class(A).tolist()
    # the reports' three classes, closed on the left at 10 % and 100 (sqrt(2) - 1) = 41.421356... %
    small, notable, large = (c.label for c in ADMIXTURE_CLASSES)
    assert got == [small, small, notable, notable, large, large, large, "no data"]
    # the same class as the decision table's for every value
    for a, label in zip(A[:-1], got, strict=False):
        assert vocabulary_class(a / 100.0).label == label


# ------------------------------------------------------------------ calibration
def _calibration_frame():
    rows = []
    v = {  # (region, threshold) -> V_max for e0, sex T
        ("AA11", 0.1): 0.5,
        ("AA12", 0.1): 2.0,
        ("BB21", 0.1): np.nan,
        ("AA11", 0.5): 3.0,
        ("AA12", 0.5): 8.0,
        ("BB21", 0.5): np.inf,
    }
    for (region, thr), vmax in v.items():
        rows.append(
            {
                "region": region,
                "region_name": region,
                "nuts_level": 2,
                "country": region[:2],
                "sex": "T",
                "indicator": "e",
                "age": 0.0,
                "threshold": thr,
                "V_max": vmax,
                "status": "ok",
                "events": 100.0,
            }
        )
    rows.append(
        {
            "region": "AA",
            "region_name": "AA",
            "nuts_level": 0,
            "country": "AA",
            "sex": "T",
            "indicator": "e",
            "age": 0.0,
            "threshold": 0.1,
            "V_max": 0.01,
            "status": "ok",
            "events": 1000.0,
        }
    )  # country: left out
    rows.append(
        {
            "region": "AA11",
            "region_name": "AA11",
            "nuts_level": 2,
            "country": "AA",
            "sex": "T",
            "indicator": "e",
            "age": 65.0,
            "threshold": 0.1,
            "V_max": 0.001,
            "status": "ok",
            "events": 10.0,
        }
    )  # e65: another key
    return pd.DataFrame(rows)


def test_calibration_table_by_hand():
    t = aov.calibration_table(_calibration_frame(), keys=("e0",), V=(1, 5)).set_index("threshold")
    a = t.loc[0.1]
    assert a["regions"] == 3 and a["V_max_min"] == 0.5 and a["region_min"] == "AA11"
    assert a["V_max_median"] == pytest.approx(1.25)  # of 0.5 and 2 (nan left out)
    assert a["below_V1"] == 1 and a["below_V5"] == 2
    b = t.loc[0.5]
    assert b["V_max_min"] == 3.0 and b["V_max_median"] == 8.0  # 3, 8, inf
    assert b["below_V1"] == 0 and b["below_V5"] == 1
    with pytest.raises(ParameterError, match="not a calibration table"):
        aov.calibration_table(_calibration_frame().drop(columns="V_max"))


def test_a_wide_column_names_its_measure_and_setting():
    # the columns most_affected and calibration_table write: <measure>_<setting tag>
    cases = {
        "admixture_V5": ("admixture", "V = 5"),
        "rel_noise_V0.5": ("rel_noise", "V = 0.5"),
        "sex_ptable_v01": ("sex", "p-table v01"),
        "below_V1e+03": ("below", "V = 1000"),
    }
    for col, (measure, label) in cases.items():
        got, setting = aov.column_setting(col)
        assert (got, setting.label) == (measure, label)
    # columns of every setting, and a measure that is never per setting, keep their name
    for col in ("admixture", "rel_pois", "V_max_min", "value_V5", "region"):
        assert aov.column_setting(col) == (col, None)


def test_calibration_chart_draws_every_finite_V_max():
    from demonoise.report.content.notebook import chart_bundle

    pop = pd.DataFrame({"region": ["AA11", "AA12", "BB21"], "sex": "T", "population": [5000.0, 2000.0, 9000.0]})
    ch = ov.calibration_chart(_calibration_frame(), pop, keys=("e0",), V=(1, 5))
    spec = ch.to_dict()
    spec.setdefault("config", {})["aria"] = True  # reports turn ARIA off; the marks are counted through it here
    svg = chart_bundle(spec)["image/svg+xml"]
    # 4 finite positive V_max (0.5, 2, 3, 8); nan and inf are not drawn
    assert len(re.findall(r'aria-roledescription="point"', svg)) == 4
    assert "V = 5" in svg


# ------------------------------------------------------------------ geo
def _ess_nuts2_codes() -> set[str]:
    path = ROOT / "lib" / "demonoise" / "data" / "datasets" / "ess-2023.csv.gz"
    codes = pd.read_csv(path, comment="#", usecols=["region"])["region"].unique()
    return {c for c in codes if len(c) == 4}


def test_geojson_loads_and_covers_ess_2023():
    gj = geo.load_nuts2_geojson()
    codes = geo.nuts2_codes(gj)
    assert len(codes) == 334 == len(set(codes))
    ess = _ess_nuts2_codes()
    assert len(ess) == 292
    # every NUTS 2 region of ess-2023 has a boundary; the extra boundaries are the UK
    # (41 regions, no data) and NO0B (Jan Mayen and Svalbard, no population)
    assert ess <= set(codes)
    extra = set(codes) - ess
    assert {c for c in extra if not c.startswith("UK")} == {"NO0B"} and len(extra) == 42
    assert gj is not geo.load_nuts2_geojson()  # a fresh dict per call


def test_outside_frame_is_the_outermost_regions():
    assert aov.outside_frame(codes=_ess_nuts2_codes()) == list(aov.OUTERMOST)
    drawn = set(aov.drawn_codes())
    assert not drawn & set(aov.OUTERMOST) and len(drawn) == 334 - 8


def test_feature_bounds_and_shipped_file_matches_geometry():
    f = {
        "type": "Feature",
        "properties": {"NUTS_ID": "XX00"},
        "geometry": {
            "type": "MultiPolygon",
            "coordinates": [[[[1, 2], [3, 2], [3, 5], [1, 2]]], [[[-4, 0], [-3, 1], [-4, 0]]]],
        },
    }
    assert geo.feature_bounds(f) == (-4, 0, 3, 5)
    # the packaged file is gzip of a FeatureCollection; Canarias lie south of 30 N
    gj = json.loads(
        gzip.decompress((ROOT / "lib" / "demonoise" / "data" / "geo" / "nuts2_2021.geojson.gz").read_bytes())
    )
    es70 = next(x for x in gj["features"] if x["properties"]["NUTS_ID"] == "ES70")
    assert geo.feature_bounds(es70)[3] < 30


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"type": "Feature"}', "FeatureCollection"),
        ('{"type": "FeatureCollection", "features": [{"properties": {}, "geometry": null}]}', "NUTS_ID"),
        (
            '{"type": "FeatureCollection", "features": [{"properties": {"NUTS_ID": "BE10"}, '
            '"geometry": {"type": "Point", "coordinates": [1, 2]}}]}',
            "region BE10",
        ),
        (
            '{"type": "FeatureCollection", "features": ['
            + ",".join(
                [
                    '{"properties": {"NUTS_ID": "BE10"}, '
                    '"geometry": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[0,1],[0,0]]]}}'
                ]
                * 2
            )
            + "]}",
            "duplicate",
        ),
        ("{not json", "invalid JSON"),
    ],
)
def test_geojson_format_errors_name_file_and_region(text, match):
    with pytest.raises(FormatError, match=match) as e:
        geo.load_nuts2_geojson(text, file="mine.geojson")
    assert e.value.file == "mine.geojson"


def test_map_colours_regions_by_class_and_carries_the_credit():
    from demonoise.report.content.notebook import chart_bundle

    values = pd.DataFrame(
        {
            "region": ["BE10", "BE10", "FI20", "FI20"],
            "region_name": "x",
            "country": ["BE", "BE", "FI", "FI"],
            "V": [1.0, 5.0, 1.0, 5.0],
            "population": 1.0,
            "value": 80.0,
            "A": [2.0, 12.0, 60.0, 330.0],
        }
    )
    values["A_class"] = aov.admixture_class(values["A"])
    spec = ov.admixture_map(values).to_dict()
    spec.setdefault("config", {})["aria"] = True  # reports turn ARIA off; regions are identified through it here
    svg = chart_bundle(spec)["image/svg+xml"]
    assert geo.CREDIT.replace("\u00a9", "&#169;") in svg or geo.CREDIT in svg
    paths = re.findall(r'<path[^>]*aria-label="[^"]*; region: (\w+);[^"]*"[^>]*fill="(#[0-9a-f]+)"', svg)
    assert len(paths) == 2 * (334 - 8)  # every drawn region, in both panels
    fills: dict[str, list[str]] = {}
    for code, fill in paths:
        fills.setdefault(code, []).append(fill)
    colours = dict(zip(aov.MAP_CLASSES, (c.colour for c in ADMIXTURE_CLASSES), strict=True))
    small, notable, large = (c.label for c in ADMIXTURE_CLASSES)
    assert fills["BE10"] == [colours[small], colours[notable]]  # V = 1, V = 5
    assert fills["FI20"] == [colours[large], colours[large]]
    assert fills["DE30"] == [NO_DATA_COLOUR] * 2 and fills["UKI3"] == [NO_DATA_COLOUR] * 2


# ------------------------------------------------------------------ display, params, sections
def test_overview_table_groups_the_settings_and_colours_the_admixture_by_class():
    # AA12 then BB21 (A at V = 5: 2 and 1); at V = 1 their A is 0.2 and 0.4 (10 % to 41 %)
    t = ov.overview_table(aov.most_affected(_e0_frame(), 2), "The two regions.")
    html, typst = t.to_html(), t.to_typst()
    assert t.caption == "The two regions." and t.frame["region"].tolist() == ["AA12", "BB21"]  # the CSV's numbers
    assert [(label, span) for label, span, _ in t.groups] == [("", 7), ("V = 1", 2), ("V = 5", 2)]
    assert t.shown.columns.tolist()[-4:] == ["noise sd (%)", "A (%)"] * 2
    assert t.shown.iloc[:, 0].tolist() == ["AA12 Region AA12", "BB21 Region BB21"]
    assert t.shown["population (1 Jan.)"].tolist() == ["2\u202f000", "9\u202f000"]
    colour = {c.key: c.colour for c in ADMIXTURE_CLASSES}
    a1, a5 = t.shown.iloc[:, -3].tolist(), t.shown.iloc[:, -1].tolist()
    assert a1 == ["20", "40"] and a5 == ["200", "100"]  # per cent
    assert t.colours.iloc[:, -3].tolist() == [colour["notable"]] * 2
    assert t.colours.iloc[:, -1].tolist() == [colour["large"]] * 2
    for text in (html, typst):
        assert "V = 1" in text and "V = 5" in text and "200" in text


def test_overview_refuses_a_variance_that_is_not_positive(tmp_path):
    from demonoise.report.batch.extras import overview_run

    for bad in ([0], [float("nan")], [-1], [float("inf")]):
        with pytest.raises(ParameterError, match="V is a variance"):
            overview_run({"dataset": "be-2023", "V": bad}, tmp_path)
    assert not list(tmp_path.rglob("*.parquet"))


def test_split_sections_at_level_one_headings():
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    nb = new_notebook(
        cells=[
            new_code_cell("x = 1"),
            new_markdown_cell("# A\ntext"),
            new_code_cell("a"),
            new_markdown_cell("## sub"),
            new_markdown_cell("# B"),
            new_code_cell("b"),
        ],
        metadata={"papermill": {"exception": False}},
    )
    from demonoise.report.document.assemble import split_sections

    parts = split_sections(nb)
    assert [[c.source for c in p.cells] for p in parts] == [["x = 1", "# A\ntext", "a", "## sub"], ["# B", "b"]]
    assert all(p.metadata["papermill"] == {"exception": False} for p in parts)
    nbformat.validate(parts[0])


def test_notebook_committed_without_outputs():
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code)
    assert "parameters" in code[0].metadata.get("tags", [])
    # each section opens with its heading followed by the data label
    heads = [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.source.startswith("# ")]
    assert len(heads) == 9
    assert all(nb.cells[i + 1].source.strip() == "summary.status_box(single)" for i in heads)


# ------------------------------------------------------------------ the report, end to end
COUNTRIES = ["BE", "FR", "PT"]  # 11 + 27 + 7 NUTS 2 regions, incl. 7 of the 8 outermost


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("overview")
    # a hand-made calibration table (the calibration module is built elsewhere): the
    # section must show its minimum (BE21, 0.25) and count the regions below each V
    cal = pd.DataFrame(
        {
            "region": ["BE10", "BE21", "FRY1"],
            "nuts_level": 2,
            "sex": "T",
            "indicator": "e",
            "age": 0.0,
            "threshold": 0.1,
            "V_max": [12.0, 0.25, 3.5],
            "status": "ok",
        }
    )
    from demonoise.report.batch.extras import overview_run, render_further

    run = overview_run({"dataset": "ess-2023", "V": [1, 5], "countries": COUNTRIES}, out, calibration=cal)
    res = render_further(run, pdf=False)
    assert res.pdf is None and res.html == out / "overview.html"
    return run, res


def test_overview_renders_offline_with_the_map(rendered):
    html = rendered[1].html.read_text(encoding="utf-8")
    c = scan_html(html)
    assert c.violations == [] and c.scripts_with_src == []
    svgs = _chart_svgs(html)
    maps = [s for s in svgs if "EuroGeographics" in s]
    assert len(maps) == 1
    assert len(re.findall(r"<path\b", maps[0])) >= 2 * (334 - 8)  # every drawn region in both V panels
    # the nine sections, each with the modelled-data label
    titles = re.findall(r'<h1 class="dn-chapter-title"><span class="dn-section-number">(\d+)</span>([^<]+)</h1>', html)
    assert [t for _, t in titles] == [
        "About this overview",
        "Life expectancy at birth",
        "Life expectancy at 65",
        "Total fertility rate",
        "Age-specific rates",
        "Map of the e0 admixture",
        "Publishing 5-year instead of single-age cells",
        "Most affected regions",
        "Calibration of V",
    ]
    sections = re.split(r'<section class="dn-chapter"', html)[1:]
    assert all("dn-status-modelled" in s and "demonstration data" in s for s in sections)
    # the outermost regions of the three countries are in the table under the map
    map_section = sections[5]
    for code in ("FRY1", "FRY2", "FRY3", "FRY4", "FRY5", "PT20", "PT30"):
        assert re.search(rf">{code}\b", map_section)  # the region's code and name
    assert "ES70" not in map_section
    # no error output, and nothing written to stderr (warnings) in any cell
    body = re.sub(r"<style\b.*?</style>|<script\b.*?</script>", "", html, flags=re.S)
    assert "Traceback" not in body and "application/vnd.jupyter.stderr" not in body


def test_overview_numbers_come_from_the_results(rendered):
    import nbformat

    from demonoise.report.document.assemble import read_metrics

    run, _ = rendered
    nb = nbformat.read(run.job.output, as_version=4)
    m = read_metrics(nb)
    df = pd.read_parquet(run.job.parameters["results_single"])
    e0 = df[(df.nuts_level == 2) & (df.indicator == "e") & (df.age == 0) & (df.sex == "T")]
    assert m["regions"] == e0.region.nunique() == 45
    # every region's worst sex (the largest admixture of women, men and both sexes), as the reports
    e0 = df[(df.nuts_level == 2) & (df.indicator == "e") & (df.age == 0) & (df.V == 5)]
    worst = e0.groupby("region")["admixture"].max()
    assert m["e0_A_median_V5"] == pytest.approx(worst.median())
    assert m["e0_over41_V5"] == int((worst > math.sqrt(2) - 1).sum())


def test_overview_prints_to_pdf_with_the_map_and_credit(rendered, tmp_path):
    from pypdf import PdfReader

    from demonoise.report.document.assemble import render_document

    res = render_document(rendered[0].document(), tmp_path / "overview.html", tmp_path / "overview.pdf")
    assert res.pdf_error is None and res.pdf.read_bytes()[:5] == b"%PDF-"
    pages = [p.extract_text() for p in PdfReader(res.pdf).pages]
    # cover, contents, then one page (or more) per section; the map page carries the credit
    map_pages = [
        p for p in pages if "Map of the e0 admixture" in p and "EuroGeographics for the administrative boundaries" in p
    ]
    assert len(map_pages) == 1 and "FRY1" in map_pages[0]
    assert len([p for p in pages if "demonstration data" in p]) >= 9


def test_calibration_section_shows_the_table_passed(rendered):
    html = rendered[1].html.read_text(encoding="utf-8")
    cal = re.split(r'<section class="dn-chapter"', html)[9]
    assert "Calibration of V" in cal and "not available" not in cal
    row = re.search(r"<tr>(?:(?!</tr>).)*>e0<(?:(?!</tr>).)*</tr>", cal, flags=re.S).group(0)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
    # indicator, threshold (%), regions, V_max min, its region and sex, median, below V=1, below V=5
    assert cells == ["e0", "10", "3", "0.25", "BE21", "T", "3.5", "1", "2"]


def test_cli_overview_arguments():
    from demonoise.cli import build_parser

    a = build_parser().parse_args(["overview", "--V", "5", "1", "--countries", "BE", "--no-pdf"])
    assert a.func.__name__ == "cmd_overview" and a.dataset == "ess-2023" and a.V == [5.0, 1.0] and a.no_pdf
    assert str(a.out_dir) == "output"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["overview", "--V", "-1"])


def test_cli_overview_unknown_country(tmp_path, capsys):
    from demonoise.cli import main

    assert main(["overview", "--countries", "XX", "--out", str(tmp_path), "--no-pdf"]) == 2
    assert "XX" in capsys.readouterr().err


def test_overview_captions_every_figure_and_table(rendered):
    # every numbered figure and table carries a caption after its number, as in the reports
    html = rendered[1].html.read_text(encoding="utf-8")
    figs = re.findall(r'<figcaption><span class="dn-number">Figure ([\d.]+)\.</span>\s*([^<]*)', html)
    tabs = re.findall(r'<p class="dn-caption"><span class="dn-number">Table ([\d.]+)\.</span>\s*([^<]*)', html)
    assert len(figs) >= 6 and len(tabs) >= 4
    assert [n for n, text in figs + tabs if len(text.strip()) < 10] == []
    # the formulas are typeset (math in the text, not "sqrt(" in plain words)
    about = re.split(r'<section class="dn-chapter"', html)[1]
    assert "sqrt(" not in about
