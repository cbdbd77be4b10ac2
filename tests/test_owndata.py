"""Own data everywhere, one way: a counts file written with ``write_counts_csv`` answers
wherever a dataset name does (``--dataset NAME|FILE`` in every command, a path in a
report's ``datasets:``, ``-p dataset FILE`` of the extra notebooks), and ``demonoise
datasets add NAME FILE`` registers one by name.

The country is Slovenia from ``ess-2023`` (the country and its two NUTS 2 regions): its
counts file must give the figures the embedded route gives, and every label of a report on
it must name the user's source, not the embedded extract's.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from demonoise.cli import main
from demonoise.io import datasets as reg
from demonoise.io.template import write_counts_csv

SOURCE = "Statistical Office of the Republic of Slovenia (test extract)"
#: The decision table's headline measures: the results' indicator, age and sexes.
HEADLINES = {"e0": ("e", 0, "FMT"), "e65": ("e", 65, "FMT"), "tfr": ("tfr", None, "F")}


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """A user cache of this test alone (registrations go there; kernels inherit it)."""
    monkeypatch.setenv("DEMONOISE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def slovenia():
    c = reg.load("ess-2023")
    return c.select([r.code for r in c.regions if r.country == "SI"])


@pytest.fixture
def si_file(tmp_path, slovenia):
    path = tmp_path / "data" / "si_counts.csv"
    path.parent.mkdir()
    return write_counts_csv(slovenia, path, comment=f"source: {SOURCE}\nextracted: 2026-11-30")


def _computed(args, out) -> pd.DataFrame:
    assert main([*args, "--V", "1", "--out", str(out)]) == 0
    return pd.read_csv(out)


def _key(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values(["region", "indicator", "age", "sex", "V"]).reset_index(drop=True)


FIGURES = ["value", "var_pois", "var_noise", "sd_pois", "sd_noise", "admixture"]


# ----------------------------------------------------------------------------- one flag, every command
def test_a_file_gives_the_embedded_figures_in_compute_and_both_spellings(tmp_path, si_file, capsys):
    embedded = _key(_computed(["compute", "--dataset", "ess-2023", "--countries", "SI"], tmp_path / "e.csv"))
    own = _key(_computed(["compute", "--dataset", str(si_file)], tmp_path / "f.csv"))
    alias = _key(_computed(["compute", "--counts", str(si_file)], tmp_path / "a.csv"))
    assert len(own) == len(embedded) > 0 and set(own.region) == {"SI", "SI03", "SI04"}
    np.testing.assert_allclose(own[FIGURES].to_numpy(float), embedded[FIGURES].to_numpy(float), rtol=1e-12)
    pd.testing.assert_frame_equal(own, alias)
    assert set(own.dataset) == {"si_counts"} and set(embedded.dataset) == {"ess-2023"}
    assert own.data_status.iloc[0].startswith(SOURCE + " (counts file si_counts.csv): population real")
    prov = reg.load(str(si_file)).provenance  # the file's own comment lines
    assert {t.source for t in prov.tables.values()} == {SOURCE} and prov.population.extracted == "2026-11-30"


def test_calibrate_and_compare_take_a_file_under_either_spelling(tmp_path, si_file):
    outs = {}
    for flag, ref in (("--dataset", "ess-2023"), ("--dataset", str(si_file)), ("--counts", str(si_file))):
        out = tmp_path / f"cal{len(outs)}.csv"
        extra = ["--countries", "SI"] if ref == "ess-2023" else []
        assert main(["calibrate", flag, ref, *extra, "--indicators", "e", "--out", str(out)]) == 0
        outs[(flag, ref)] = pd.read_csv(out)
    cal = list(outs.values())
    assert "V_max" in cal[0].columns and len(cal[0]) > 0
    for other in cal[1:]:
        np.testing.assert_allclose(other["V_max"].to_numpy(float), cal[0]["V_max"].to_numpy(float), rtol=1e-12)
    out = tmp_path / "cmp.csv"
    assert main(["compare", "--dataset", str(si_file), "--ptable", "v01", "--out", str(out)]) == 0
    assert set(pd.read_csv(out)["region"]) == {"SI", "SI03", "SI04"}


def test_both_spellings_at_once_and_a_missing_file_are_refused(tmp_path, si_file, capsys):
    with pytest.raises(SystemExit) as e:
        main(["compute", "--dataset", "ess-2023", "--counts", str(si_file), "--V", "1", "--out", "x.csv"])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert main(["compute", "--dataset", str(tmp_path / "nope.csv"), "--V", "1", "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "counts file not found" in err and "nope.csv" in err
    assert main(["compute", "--dataset", "nope-2023", "--V", "1", "--out", str(tmp_path / "o.csv")]) == 2
    assert "unknown dataset 'nope-2023'; available: " in capsys.readouterr().err


# ----------------------------------------------------------------------------- datasets add
def test_datasets_add_registers_packed_and_lists_the_users_provenance(tmp_path, si_file, own_cache, capsys):
    assert main(["datasets", "add", "si", str(si_file), "--source", "SURS, own extract"]) == 0
    said = capsys.readouterr().out
    assert "si: 3 regions, 2023; SURS, own extract (counts file si_counts.csv)" in said
    meta = json.loads((own_cache / "user" / "si.json").read_text())
    assert meta["file"] == str(si_file.resolve()) and meta["countries"] == ["SI"] and meta["years"] == [2023]
    assert (own_cache / "user" / "si.npz").is_file()
    assert main(["datasets", "-v"]) == 0
    listing = capsys.readouterr().out
    line = next(x for x in listing.splitlines() if x.startswith("si "))
    assert re.match(
        r"si\s+user\s+2023\s+3 regions\s+SURS, own extract \(counts file si_counts.csv\): population real", line
    )
    assert (
        f"from {si_file.resolve()}" in listing
        and "deaths: modelled (SURS, own extract; extracted 2026-11-30)" in listing
    )
    # the registered name gives the figures of the file itself
    by_name = _key(_computed(["compute", "--dataset", "si"], tmp_path / "n.csv"))
    by_file = _key(_computed(["compute", "--dataset", str(si_file)], tmp_path / "f.csv"))
    np.testing.assert_array_equal(by_name[FIGURES].to_numpy(float), by_file[FIGURES].to_numpy(float))
    assert set(by_name.dataset) == {"si"} and by_name.data_status.iloc[0].startswith("SURS, own extract")
    assert main(["datasets", "remove", "si"]) == 0
    assert not (own_cache / "user" / "si.json").exists()


def test_datasets_add_is_loaded_from_its_packed_form(si_file, own_cache):
    reg.add("si", si_file)
    si_file.unlink()  # the registration no longer needs the file: it was validated once and packed
    reg.clear_cache()
    assert reg.load("si").codes == ("SI", "SI03", "SI04") and reg.fingerprint("si")
    npz = own_cache / "user" / "si.npz"
    npz.write_bytes(npz.read_bytes()[:-40])  # damaged: never used
    reg.clear_cache()
    from demonoise.core.errors import DataError

    with pytest.raises(DataError, match="si.npz"):
        reg.load("si")


@pytest.mark.parametrize(
    "args, message",
    [
        (["datasets", "add", "ess-2023", "{file}"], "dataset name 'ess-2023' is taken by a dataset shipped"),
        (["datasets", "add", "eurostat-2023", "{file}"], "is taken"),
        (["datasets", "add", "../x", "{file}"], "dataset name '../x' is not allowed"),
        (["datasets", "add", "si", "{bad}"], "year '20x3' is not a whole number [file {bad}, line 4"),
        (["datasets", "add", "si", "{missing}"], "counts file not found"),
        (["datasets", "remove", "si"], "no registered dataset 'si'; registered: none"),
        (["datasets", "remove", "be-2023"], "shipped with demonoise and cannot be removed"),
    ],
)
def test_datasets_add_errors_in_one_line(tmp_path, si_file, own_cache, capsys, args, message):
    bad = tmp_path / "si_bad.csv"
    lines = si_file.read_text().splitlines()
    lines[3] = lines[3].replace(",2023,", ",20x3,", 1)  # file line 4 (a comment, the header, then the rows)
    bad.write_text("\n".join(lines) + "\n")
    subs = {"{file}": str(si_file), "{bad}": str(bad), "{missing}": str(tmp_path / "none.csv")}
    assert main([subs.get(a, a) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert message.replace("{bad}", str(bad)) in err and err.count("\n") == 0, err
    assert not (own_cache / "user" / "si.json").exists()


# ----------------------------------------------------------------------------- the report, end to end
def test_report_params_take_a_path_relative_to_the_params_file(tmp_path, si_file, monkeypatch):
    from demonoise.core.errors import ParameterError
    from demonoise.report.batch.params import load_params

    params = si_file.parent / "p.yaml"
    params.write_text("datasets:\n  si_counts.csv: [SI]\nnoise: [{V: 1}]\n")
    monkeypatch.chdir(tmp_path)  # not the folder of the file
    p = load_params(params)
    assert p.selections[0].dataset == "si_counts" and p.selections[0].countries == ("SI",)
    params.write_text("datasets:\n  si_counts.csv: [HR]\nnoise: [{V: 1}]\n")
    with pytest.raises(
        ParameterError, match=r"datasets\.si_counts: unknown country HR for dataset 'si_counts'; it has SI"
    ):
        load_params(params)
    params.write_text("datasets:\n  other/si_counts.csv: [SI]\nnoise: [{V: 1}]\n")
    with pytest.raises(ParameterError, match=r"p\.yaml: datasets: counts file not found .*other/si_counts\.csv"):
        load_params(params)
    clash = si_file.parent / "be-2023.csv"
    clash.write_bytes(si_file.read_bytes())
    params.write_text("datasets:\n  be-2023.csv: [SI]\nnoise: [{V: 1}]\n")
    with pytest.raises(ParameterError, match="dataset name 'be-2023' is taken"):
        load_params(params)


DECISION_FIGURES = [
    "population",
    "admixture",
    "admixture_F",
    "admixture_M",
    "admixture_T",
    "value",
    "sd_pois",
    "sd_noise",
]


@pytest.mark.slow
def test_report_on_a_counts_file_end_to_end(tmp_path, si_file, slovenia, monkeypatch):
    """One batch, two reports of SI: from the counts file (a path in the params) and from
    the embedded ess-2023. Their decision tables hold the same figures, which are those of
    ``compute`` on the file; the file's report names the user's source, never Eurostat's."""
    params = si_file.parent / "params.yaml"
    params.write_text(
        "title: Slovenia from its own counts\n"
        "datasets:\n  si_counts.csv: [SI]\n  ess-2023: [SI]\nnoise: [{V: 1}]\nmc: 0\npdf: false\n"
    )
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert main(["report", "--params", str(params), "--out-dir", str(out), "--no-pdf", "--workers", "1"]) == 0
    own = pd.read_csv(out / "reports" / "si_counts" / "SI-data" / "decision.csv")
    emb = pd.read_csv(out / "reports" / "ess-2023" / "SI-data" / "decision.csv")
    keys = ["region", "measure", "sex", "setting"]
    own, emb = own.sort_values(keys).reset_index(drop=True), emb.sort_values(keys).reset_index(drop=True)
    assert len(own) == len(emb) > 0 and set(own.region) == {"SI", "SI03", "SI04"}
    assert set(own.measure) >= set(HEADLINES)
    pd.testing.assert_frame_equal(own[keys + ["class"]], emb[keys + ["class"]])
    np.testing.assert_allclose(own[DECISION_FIGURES].to_numpy(float), emb[DECISION_FIGURES].to_numpy(float), rtol=1e-9)
    assert set(own.dataset) == {"si_counts"} and set(emb.dataset) == {"ess-2023"}

    # against compute on the same file, the admixture recomputed from its variances
    res = _computed(["compute", "--dataset", str(si_file)], tmp_path / "c.csv")
    checked = 0
    for name, (ind, age, sexes) in HEADLINES.items():
        for sex in sexes:
            for region in ("SI", "SI03", "SI04"):
                at = res.age.isna() if age is None else res.age == age
                r = res[(res.indicator == ind) & at & (res.sex == sex) & (res.region == region)]
                d = own[(own.measure == name) & (own.region == region)]
                assert len(r) == 1 and len(d) == 1, (name, sex, region)
                a = float(np.sqrt(1 + r.var_noise.iloc[0] / r.var_pois.iloc[0]) - 1)
                assert d[f"admixture_{sex}"].iloc[0] == pytest.approx(a, rel=1e-9)
                if d["sex"].iloc[0] == sex:
                    assert d["value"].iloc[0] == pytest.approx(r.value.iloc[0], rel=1e-9)
                    assert d["sd_noise"].iloc[0] == pytest.approx(r.sd_noise.iloc[0], rel=1e-9)
                checked += 1
    assert checked == 21

    # the labels: the user's source, not the embedded extract's
    html = (out / "reports" / "si_counts" / "SI.html").read_text(encoding="utf-8")
    label = f"{SOURCE} (counts file si_counts.csv): population real, deaths modelled, births modelled"
    assert label in html and f"Source: {SOURCE}" in html
    assert "Source: Eurostat" not in html and reg.load("ess-2023").provenance.label not in html
    assert "Source: Eurostat" in (out / "reports" / "ess-2023" / "SI.html").read_text(encoding="utf-8")
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "si_counts" in index and "reports/si_counts/SI.html" in index


@pytest.mark.slow
def test_whatif_takes_a_counts_file(tmp_path, si_file, slovenia, monkeypatch):
    from demonoise import headline, what_if
    from demonoise.report.document.assemble import read_metrics

    monkeypatch.chdir(si_file.parent)
    out = tmp_path / "nb"
    args = ["notebook", "whatif", "-p", "dataset", "si_counts.csv", "-p", "region", "SI03", "-p", "V", "[1]"]
    assert main([*args, "--out-dir", str(out), "--no-pdf"]) == 0
    html = out / "whatif-si_counts-SI03-V1.html"
    text = html.read_text(encoding="utf-8")
    assert f"{SOURCE} (counts file si_counts.csv)" in text and "Vzhodna Slovenija" in text
    m = read_metrics(out / "whatif-si_counts-SI03-V1.ipynb")
    direct = headline(what_if(slovenia, "SI03", V=[1.0], indicators=("e",), e_ages=(0,)))
    for _, r in direct.iterrows():
        assert m["e0"][f"{r['sex']} {r['noise']}"]["sd_noise"] == pytest.approx(r["sd_noise"], rel=1e-12)


# ----------------------------------------------------------------------------- several years
def test_a_file_of_several_years_gives_the_embedded_change_and_registers_as_a_panel(tmp_path, own_cache):
    from demonoise.io.template import write_panel_csv

    path = write_panel_csv(reg.load_panel("be-2015-2023").select(["BE10"]), tmp_path / "brussels.csv.gz")
    outs = []
    for ref in (["--dataset", "be-2015-2023", "--regions", "BE10"], ["--dataset", str(path)], ["--counts", str(path)]):
        out = tmp_path / f"chg{len(outs)}.csv"
        assert main(["change", *ref, "--from", "2022", "--to", "2023", "--V", "1", "--out", str(out)]) == 0
        outs.append(pd.read_csv(out))
    cols = ["change", "sd_noise", "sd_poisson", "mdc_total"]
    assert len(outs[0]) > 0 and set(outs[1].region) == {"BE10"}
    for other in outs[1:]:
        np.testing.assert_allclose(other[cols].to_numpy(float), outs[0][cols].to_numpy(float), rtol=1e-12)
    info = reg.add("brussels", path)
    assert info.year == 2023 and "years 2015-2023" in info.details
    assert reg.years("brussels") == tuple(range(2015, 2024)) and reg.load("brussels").year == 2023
    np.testing.assert_array_equal(reg.load_panel("brussels").stocks, reg.load_panel(str(path)).stocks)


def test_the_overview_block_of_the_params_takes_a_counts_file(si_file):
    from demonoise.report.batch.params import load_params

    params = si_file.parent / "p.yaml"
    params.write_text("datasets: {ess-2023: [LU]}\nnoise: [{V: 1}]\noverview: {dataset: si_counts.csv}\n")
    assert load_params(params).overview.dataset == "si_counts"
    assert "used by params" in next(d for d in reg.available() if d.name == "si_counts").details[0]


@pytest.mark.slow
def test_teaching_takes_a_counts_file_and_skips_the_change_it_has_no_years_for(tmp_path, si_file, monkeypatch):
    monkeypatch.chdir(si_file.parent)
    out = tmp_path / "nb"
    args = ["notebook", "teaching", "-p", "dataset", "si_counts.csv", "-p", "region", "SI03", "-p", "mc", "0"]
    assert main([*args, "--out-dir", str(out), "--no-pdf"]) == 0
    text = (out / "teaching-si_counts-SI03-mc0.html").read_text(encoding="utf-8")
    assert f"{SOURCE} (counts file si_counts.csv)" in text and "SI03 Vzhodna Slovenija" in text
    assert "No multi-year data for SI03 (parameter <code>change_dataset</code>): section skipped." in text
