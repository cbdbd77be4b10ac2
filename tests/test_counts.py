import numpy as np
import pytest

from demonoise.core.counts import AgeAxis, Counts, Provenance, Region, TableProvenance, spread_unknown
from demonoise.core.errors import DataError, ParameterError


def _prov():
    return Provenance(population=TableProvenance("real", ("demo_r_d2jan",)), deaths=TableProvenance("modelled"))


def _counts(**kw):
    ages = AgeAxis.five_year()
    R, S, A = 2, 3, ages.size
    rng = np.random.default_rng(1)
    base = dict(
        name="t",
        year=2023,
        regions=(Region("BE10", "Bruxelles"), Region("BE21")),
        ages=ages,
        pop_start=rng.integers(100, 1000, (R, S, A)),
        pop_end=rng.integers(100, 1000, (R, S, A)),
        deaths=rng.integers(0, 10, (R, S, A)),
        provenance=_prov(),
    )
    base.update(kw)
    return Counts(**base)


def test_axis_labels_roundtrip_eurostat_nuts2_layout():
    labels = ["Y_LT1"] + [f"Y{i}" for i in range(1, 100)] + ["Y_OPEN", "UNK"]
    ax = AgeAxis.from_labels(labels[::-1])
    assert ax == AgeAxis.single(99)
    assert ax.labels[-2] == "Y_GE100" and ax.index("Y_OPEN") == 100
    assert AgeAxis.from_labels(AgeAxis.five_year(infant=True).labels) == AgeAxis.five_year(infant=True)


@pytest.mark.parametrize(
    "labels, age",
    [(["Y_LT1", "Y2"], "Y1"), (["Y_LT5", "Y5-9", "Y15-19"], "Y10-14"), (["Y1", "Y1"], "Y1"), (["Y_LT1", "Y9x"], "Y9x")],
)
def test_axis_errors_name_the_age(labels, age):
    with pytest.raises(DataError) as e:
        AgeAxis.from_labels(labels, source="x.csv")
    assert e.value.age == age and "x.csv" in str(e.value)


def test_regroup_single_to_five_year_keeps_totals():
    c = _counts(
        ages=AgeAxis.single(99), pop_start=np.ones((2, 3, 102), int), pop_end=np.ones((2, 3, 102), int), deaths=None
    )
    g = c.regroup(AgeAxis.five_year())
    assert g.pop_start[0, 0].tolist() == [5] * 17 + [16, 1]
    assert g.pop_start.sum() == c.pop_start.sum()
    with pytest.raises(ParameterError):
        AgeAxis.five_year().regroup_matrix(AgeAxis.single(99))


@pytest.mark.parametrize(
    "field, value, msg",
    [("deaths", -1, "negative count -1"), ("deaths", 0.5, "non-integer"), ("pop_end", np.nan, "missing value")],
)
def test_bad_cells_are_named(field, value, msg):
    c = _counts()
    arr = getattr(c, field).astype(float)
    arr[1, 2, 3] = value
    with pytest.raises(DataError) as e:
        _counts(**{field: arr})
    err = e.value
    assert msg in str(err)
    assert (err.region, err.sex, err.age, err.measure) == ("BE21", "T", "Y15-19", field)


def test_counts_are_immutable_and_selectable():
    c = _counts()
    with pytest.raises(ValueError):
        c.deaths[0, 0, 0] = 5
    s = c.select(["BE21"])
    assert s.codes == ("BE21",) and np.array_equal(s.deaths[0], c.deaths[1])
    with pytest.raises(DataError, match="unknown region code"):
        c.select(["XX99"])
    with pytest.raises(DataError, match="duplicated region"):
        _counts(regions=(Region("BE10"), Region("BE10")))


def test_to_frame_layout():
    df = _counts().to_frame()
    assert list(df.columns) == ["region", "sex", "age", "year", "measure", "value"]
    assert set(df.year) == {2023, 2024}
    assert len(df) == 3 * 2 * 3 * 19


def test_spread_unknown_proportional():
    ax = AgeAxis.five_year()
    x = np.zeros(ax.size)
    x[:3] = [10, 30, 60]
    x[-1] = 10
    out = spread_unknown(x, ax)
    assert out.shape == (ax.n_known,)
    np.testing.assert_allclose(out[:3], [11, 33, 66])
    assert out.sum() == pytest.approx(110)
    # all-zero known cells: uniform spread
    z = np.zeros(ax.size)
    z[-1] = 18
    np.testing.assert_allclose(spread_unknown(z, ax), np.full(ax.n_known, 1.0))
