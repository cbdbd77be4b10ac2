"""One noise setting, named the same way everywhere (demonoise.analysis.settings).

Truth: the forms are written out by hand; the rows a setting selects are counted on a
hand-made table; the results table of a real computation carries the key column.
"""

from __future__ import annotations

import pandas as pd
import pytest

from demonoise.analysis.settings import (
    NoiseSetting,
    in_report_order,
    setting_column,
    setting_labels,
    setting_of_label,
    settings_in,
)
from demonoise.core.errors import ParameterError


@pytest.mark.parametrize(
    ("spec", "forms"),
    [
        ({"V": 1}, ("V=1", "V = 1", "V1", "V1", "at V = 1", "", {"V": 1.0})),
        (2.5, ("V=2.5", "V = 2.5", "V2.5", "V2.5", "at V = 2.5", "", {"V": 2.5})),
        ("V=5", ("V=5", "V = 5", "V5", "V5", "at V = 5", "", {"V": 5.0})),
        ({"ptable": "V01"}, ("v01", "p-table v01", "ptable-v01", "v01", "with p-table v01", "ptable v01", None)),
    ],
)
def test_every_form_of_a_setting(spec, forms):
    s = NoiseSetting.of(spec)
    key, label, slug, short, phrase, ptable, param = forms
    assert (s.key, s.label, s.slug, s.short, s.phrase, s.ptable) == (key, label, slug, short, phrase, ptable)
    assert s.as_parameter() == (param if param is not None else {"ptable": "V01"})
    assert NoiseSetting.of(s.as_parameter()) == s  # the notebook parameter gives the setting back
    assert NoiseSetting.of(s.key) == s  # and so does its key


def test_a_ptable_file_is_named_by_its_file_name(tmp_path):
    f = tmp_path / "my_table.csv"
    f.write_text("x")
    s = NoiseSetting.of({"ptable": str(f)})
    assert (s.key, s.label, s.slug) == ("my_table.csv", "p-table my_table.csv", "ptable-my_table")
    assert s.as_parameter() == {"ptable": str(f)} and s.table_source == str(f)


def test_the_report_parameters_hold_the_settings_themselves():
    from demonoise.report.batch.params import parse_params

    p = parse_params({"datasets": {"ess-2023": ["LU"]}, "noise": [{"V": 1}, {"ptable": "V01"}]})
    assert [(s.label, s.slug) for s in p.settings] == [("V = 1", "V1"), ("p-table v01", "ptable-v01")]
    assert all(NoiseSetting.of(s.as_parameter()) == s for s in p.settings)


@pytest.mark.parametrize("bad", [{"sigma": 1}, {"V": 1, "ptable": "v01"}, {"V": "abc"}, None, ""])
def test_a_setting_of_a_wrong_form_is_refused(bad):
    with pytest.raises(ParameterError, match="noise setting"):
        NoiseSetting.of(bad)


def _table(with_key: bool) -> pd.DataFrame:
    rows = [("generic", 1.0, ""), ("generic", 1.0, ""), ("generic", 5.0, ""), ("ptable", 1.0, "ptable v01")]
    df = pd.DataFrame(rows, columns=["noise_model", "V", "ptable"])
    if with_key:
        df.insert(0, "setting", ["V=1", "V=1", "V=5", "v01"])
    return df


@pytest.mark.parametrize("with_key", [True, False])
def test_rows_are_selected_by_the_key(with_key):
    df = _table(with_key)
    assert setting_column(df).tolist() == ["V=1", "V=1", "V=5", "v01"]
    # the p-table's nominal V = 1 is not the generic V = 1
    assert NoiseSetting.of({"V": 1}).mask(df).tolist() == [True, True, False, False]
    assert NoiseSetting.of({"ptable": "v01"}).mask(df).tolist() == [False, False, False, True]
    assert [s.label for s in settings_in(df)] == ["V = 1", "V = 5", "p-table v01"]
    assert setting_labels(df).tolist() == ["V = 1", "V = 1", "V = 5", "p-table v01"]
    # a what-if table: the scale and the granularity named where they vary
    what_if = df.assign(scale=[1.0, 0.5, 1.0, 1.0], granularity="single")
    assert setting_labels(what_if, detailed=True).tolist() == [
        "V = 1, x1",
        "V = 1, x0.5",
        "V = 5, x1",
        "p-table v01, x1",
    ]
    # the reports' order: the V's ascending, then the p-tables in the order given
    mixed = [NoiseSetting.of("v01"), NoiseSetting.of(5), NoiseSetting.of(1)]
    assert [s.label for s in in_report_order(mixed)] == ["V = 1", "V = 5", "p-table v01"]
    assert [setting_of_label(s.label).key for s in mixed] == [s.key for s in mixed]


def test_the_results_table_carries_the_key():
    from demonoise.analysis.compute import compute, noise_settings
    from demonoise.io.datasets import load

    counts = load("be-2023").select(["BE34"])
    df = compute(counts, noise_settings([1, 5], ptables=["v01"]), indicators=("tfr",))
    assert df["setting"].tolist() == ["V=1", "V=5", "v01"]
    assert df.loc[df["setting"] == "v01", "ptable"].tolist() == ["ptable v01"]
