"""The results store: computed once, re-read when nothing changed, recomputed otherwise."""

import pandas as pd
import pytest

from demonoise.analysis.stored import ResultsSpec, results, results_path
from demonoise.core.errors import ParameterError


def test_store_reuses_and_recomputes(tmp_path):
    spec = ResultsSpec("be-2023", V=(1,), countries=("BE",), indicators=("e", "tfr"), e_ages=(0,))
    df, path = results(spec, tmp_path)
    assert path.exists() and path.with_suffix(".json").exists()
    assert set(df.indicator) == {"e", "tfr"} and set(df.V) == {1.0}
    mtime = path.stat().st_mtime_ns
    again, same = results(spec, tmp_path)
    assert same == path and path.stat().st_mtime_ns == mtime
    pd.testing.assert_frame_equal(df, again)
    other = ResultsSpec("be-2023", V=(1, 5), countries=("BE",), indicators=("e", "tfr"), e_ages=(0,))
    assert results_path(other, tmp_path) != path
    df2, _ = results(other, tmp_path)
    assert set(df2.V) == {1.0, 5.0}
    assert not list(tmp_path.rglob("*.part")) and not list(tmp_path.rglob(".*dn-tmp*"))


def test_store_errors(tmp_path):
    with pytest.raises(ParameterError, match="XX not in dataset 'be-2023'"):
        results(ResultsSpec("be-2023", V=(1,), countries=("XX",)), tmp_path)
    with pytest.raises(ParameterError, match="unknown dataset"):
        results(ResultsSpec("nope-2023", V=(1,)), tmp_path)
    with pytest.raises(ParameterError, match="at least one V"):
        ResultsSpec("be-2023", V=())
    assert not any(p.is_file() for p in tmp_path.rglob("*"))
