"""The build of the embedded datasets: byte-identical rebuild (the CI hash check), the
modelled mortality against the published e0/e65 it is calibrated to, the Poisson draw
against the analytic Poisson sd, and the random streams.

The rebuild runs once per session (module fixture, about 10 s); the figures are printed
by ``benchmarks/datasets_figures.py``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

import _fixtures_datasets as fx
from demonoise.core.layout import Layout
from demonoise.demography.indicators import life_expectancy
from demonoise.io.packed import read_packed, write_packed
from demonoise.uncertainty.propagation import linearise, poisson_cell_variance
from demonoise_build import build as bd
from demonoise_build import make

COMMITTED = bd.default_out_dir()


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def raw():
    return bd.read_raw(fx.RAW)


@pytest.fixture(scope="module")
def parts(raw):
    return {n: bd.build_parts(n, raw) for n in bd.NAMES}


@pytest.fixture(scope="module")
def rebuilt(parts, tmp_path_factory):
    out = tmp_path_factory.mktemp("datasets")
    return {n: bd.write_dataset(p, out) for n, p in parts.items()}


# ------------------------------------------------------------------ reproducibility (CI hash check)
@pytest.mark.slow
@pytest.mark.parametrize("name", bd.NAMES)
def test_rebuild_is_byte_identical(name, rebuilt):
    meta = json.loads((COMMITTED / f"{name}.json").read_text(encoding="utf-8"))
    rec = meta["versions"]
    now = bd._versions()
    differ = [f"{k} {rec[k]} recorded, {now[k]} running" for k in bd.PINNED if rec[k] != now[k]]
    if differ:
        pytest.skip(
            f"{name}: the committed files were built with other versions ({'; '.join(differ)}); "
            "install constraints.txt to compare hashes"
        )
    new_csv, old_csv = rebuilt[name]["csv"], COMMITTED / f"{name}.csv.gz"
    # the content (what the numbers are) must match whatever zlib compresses it
    content = hashlib.sha256(gzip.decompress(new_csv.read_bytes())).hexdigest()
    assert content == meta["files"][old_csv.name]["content_sha256"], (
        f"{name}: rebuilt content differs from the committed file"
    )
    assert hashlib.sha256(gzip.decompress(old_csv.read_bytes())).hexdigest() == content
    if zlib.ZLIB_RUNTIME_VERSION != rec["zlib"]:
        pytest.skip(
            f"content identical; gzip bytes not compared: zlib {zlib.ZLIB_RUNTIME_VERSION} here, {rec['zlib']} recorded"
        )
    assert _sha(new_csv) == _sha(old_csv) == meta["files"][old_csv.name]["sha256"]
    assert rebuilt[name]["json"].read_bytes() == (COMMITTED / f"{name}.json").read_bytes()


@pytest.mark.parametrize("name", bd.NAMES)
def test_rebuilt_packed_form_is_identical_by_content(name, rebuilt):
    """The packed form is compared by content (its bytes also depend on the zip writer): the
    rebuilt one, the committed one and the committed JSON's record agree, and so do the CSVs
    they were derived from."""
    meta = json.loads((COMMITTED / f"{name}.json").read_text(encoding="utf-8"))
    if any(meta["versions"][k] != bd._versions()[k] for k in bd.PINNED):
        pytest.skip("other numpy / scipy / pandas than recorded")
    prov = bd.Provenance(bd.TableProvenance("real"))
    new, h_new = read_packed(rebuilt[name]["npz"], provenance=prov)
    old, h_old = read_packed(COMMITTED / f"{name}.npz", provenance=prov)
    assert h_new["content_sha256"] == h_old["content_sha256"] == meta["files"][f"{name}.npz"]["content_sha256"]
    assert h_new["source_sha256"] == h_old["source_sha256"] == meta["files"][f"{name}.csv.gz"]["sha256"]
    assert np.array_equal(new.births, old.births) and np.array_equal(new.pop_start, old.pop_start)


def test_check_reports_every_file(tmp_path):
    """``--check`` on a copy of the committed files: identical; a changed packed form (other
    content) is reported."""
    import shutil

    for n in bd.NAMES:
        for ext in (".csv.gz", ".npz", ".json"):
            shutil.copy(COMMITTED / f"{n}{ext}", tmp_path / f"{n}{ext}")
    status, msgs = make.check(["be-2023"], out_dir=tmp_path, raw_dir=fx.RAW)
    if status == 3:
        pytest.skip(msgs[0])
    assert status == 0 and len(msgs) == 3 and all("identical" in m for m in msgs), msgs
    c, _ = read_packed(tmp_path / "be-2023.npz", provenance=bd.Provenance(bd.TableProvenance("real")))
    births = c.births.copy()
    births[2, 20] += 1
    write_packed(c.replace(births=births), tmp_path / "be-2023.npz", source_sha256="x")
    status, msgs = make.check(["be-2023"], out_dir=tmp_path, raw_dir=fx.RAW)
    assert status == 1 and "be-2023: be-2023.npz differs from the committed file" in msgs


def test_recorded_input_hashes_match_data_raw():
    for name in bd.NAMES:
        meta = json.loads((COMMITTED / f"{name}.json").read_text(encoding="utf-8"))
        for fname, sha in meta["inputs"].items():
            assert _sha(fx.RAW / fname) == sha, f"{fname} changed since {name} was built; rebuild"


def test_gzip_header_has_no_timestamp_or_name():
    for name in bd.NAMES:
        head = (COMMITTED / f"{name}.csv.gz").read_bytes()[:10]
        assert head[:3] == b"\x1f\x8b\x08" and head[3] & 0x08 == 0  # no FNAME
        assert head[4:8] == b"\x00\x00\x00\x00"  # mtime 0


def test_embedded_files_stay_small():
    total = sum((COMMITTED / f"{n}{e}").stat().st_size for n in bd.NAMES for e in (".csv.gz", ".json", ".npz"))
    assert total < 5_000_000, total


# ------------------------------------------------------------------ modelled mortality
def test_expected_schedule_reproduces_calibration_targets(parts):
    """e0 and e65 of the pre-draw deaths (project life table, 0..84, 85+, over the dataset's own
    exposure) equal the published targets (demo_r_mlifexp 2019, or the stated fallback) within
    0.05 y, for every modelled region, F and M."""
    ess = parts["ess-2023"]
    c = ess.counts.select(ess.codes)
    mi = np.flatnonzero(ess.modelled)
    assert mi.size == 292 - 11
    lt = life_expectancy(Layout.of(c), ess.expected_deaths[mi], c.pop_start[mi, :2], c.pop_end[mi, :2])
    e = np.stack([lt.e[..., 0], lt.e[..., 65]], axis=-1)
    targets, how = fx.calibration_targets([ess.codes[i] for i in mi])
    err = np.abs(e - targets)
    worst = np.unravel_index(err.argmax(), err.shape)
    assert err.max() < 0.05, f"{ess.codes[mi[worst[0]]]} sex {'FM'[worst[1]]}: {err.max():.3f} y"
    # the fallback regions are the ones the issue names
    assert how == {
        "FRY3": "nearest 2017",
        **{c: "2021 shifted" for c in ("HR02", "HR05", "HR06", "NO08", "NO09", "NO0A")},
    }
    fb = ess.meta["fallbacks"]
    assert set(fb["mortality_target_shifted"]) == {"HR02", "HR05", "HR06", "NO08", "NO09", "NO0A"}
    assert set(fb["mortality_target_nearest_year"]) == {"FRY3"}


def test_drawn_deaths_e0_within_three_poisson_sd(parts):
    """e0 of the drawn deaths lies within 3 analytic Poisson sd (closed-form gradients) of the
    expected schedule's e0 in at least 99 % of modelled regions (F and M), and the standardised
    differences look standard normal."""
    ess = parts["ess-2023"]
    mcodes = [ess.codes[i] for i in np.flatnonzero(ess.modelled)]
    c = ess.counts.select(mcodes)
    lz = linearise(c, indicators=("e",), e_ages=[0])
    blk = lz.blocks["e"]
    sd = np.sqrt(blk.lin.variance(poisson_cell_variance(lz, False)))[:, :2, 0]
    e_exp = life_expectancy(Layout.of(c), ess.expected_deaths[ess.modelled], c.pop_start[:, :2], c.pop_end[:, :2]).e[
        ..., 0
    ]
    z = (blk.lin.value[:, :2, 0] - e_exp) / sd
    assert np.mean(np.abs(z) < 3) >= 0.99
    assert abs(z.mean()) < 4 / np.sqrt(z.size)  # mean 0 within 4 standard errors
    assert 0.85 < z.std() < 1.15


def test_belgian_regions_keep_real_deaths(parts):
    ess = parts["ess-2023"]
    be = [c for c in ess.codes if c.startswith("BE")]
    real = fx.long_be(fx.MAGEC, 2023, be)
    got = ess.counts.select(be).deaths
    assert np.array_equal(got, real)


# ------------------------------------------------------------------ random streams
def test_streams_are_per_step_and_country(parts):
    """Births of BE in ess-2023 equal those of be-2023 (same stream, same exposure): each
    country's draws do not depend on the other countries."""
    e = parts["ess-2023"].counts.select(country="BE")
    b = parts["be-2023"].counts
    assert e.codes == b.codes
    assert np.array_equal(e.births, b.births)
    g1, g2 = bd._stream("births", "BE"), bd._stream("deaths", "BE")
    assert g1.integers(0, 2**62) != g2.integers(0, 2**62)


def test_calibration_year_is_a_parameter(raw):
    """Calibrating to 2018 moves e0 of the modelled deaths toward the 2018 targets (checked
    on the expected schedule of a few regions)."""
    p = bd.build_parts("ess-2023", raw, calibration_year=2018)
    assert p.meta["calibration_year"] == 2018 and "2018" in p.meta["label"]
    c = p.counts.select(p.codes)
    mi = np.flatnonzero(p.modelled)
    lt = life_expectancy(Layout.of(c), p.expected_deaths[mi], c.pop_start[mi, :2], c.pop_end[mi, :2])
    targets, _ = fx.calibration_targets([p.codes[i] for i in mi], 2018)
    assert np.abs(lt.e[..., 0] - targets[..., 0]).max() < 0.05


# ------------------------------------------------------------------ regional fertility rule
def test_round_births_keeps_totals_and_is_unbiased():
    """Randomised rounding: every column sums to its national total, every cell is the floor or
    the ceiling of its expected value, and over many seeds the mean is the expected value
    (z-scores of the cells' means against their Bernoulli sd)."""
    rng = np.random.default_rng(5)
    e = rng.gamma(2.0, 30.0, size=(7, 38))
    nat = np.round(e.sum(axis=0)).astype(np.int64)
    e *= nat / e.sum(axis=0)
    draws = np.stack([bd.round_births(e, nat, np.random.default_rng(k)) for k in range(2000)])
    assert (draws.sum(axis=1) == nat).all()
    assert ((draws == np.floor(e)) | (draws == np.ceil(e))).all()
    f = e - np.floor(e)
    sd = np.sqrt(f * (1 - f) / len(draws))
    ok = sd > 0
    z = (draws.mean(axis=0) - e)[ok] / sd[ok]
    assert np.abs(z).max() < 5 and abs(z.mean()) < 4 / np.sqrt(z.size)


def test_expected_births_scale_and_rake():
    """With s = 1 the rule is the exposure share (the rule for regions without a published
    TFR); with s it is the exposure share tilted by s, the national cell kept exactly."""
    rng = np.random.default_rng(2)
    W = rng.uniform(500, 5000, size=(4, 101))
    nat = rng.integers(0, 400, size=38).astype(float)
    e1 = bd.expected_births(nat, W, np.ones(4))
    assert np.allclose(e1[:, 16], nat[16] * W[:, 30] / W[:, 30].sum())  # cell 16 = Y30
    assert np.allclose(e1[:, 0], nat[0] * W[:, 15] / W[:, 15].sum())  # Y_LT15 at 15
    s = np.array([0.8, 1.0, 1.2, 2.5])
    e = bd.expected_births(nat, W, s)
    assert np.allclose(e.sum(axis=0), nat)
    j = 20  # Y34
    assert np.allclose(e[:, j], nat[j] * s * W[:, 34] / (s * W[:, 34]).sum())
    known = e[:, :-1].sum(axis=1)
    assert np.allclose(e[:, -1], nat[-1] * known / known.sum())  # UNK with the known births
    assert np.isclose(bd.national_tfr(nat, W.sum(axis=0)), bd.national_tfr(e.sum(axis=0), W.sum(axis=0)))


def test_region_without_published_tfr_keeps_the_national_fertility(raw):
    """Drop BE22's 2022 value: BE22 gets scale 1 (national fertility), is named in the JSON and the
    table note, and the national births by age are still exact."""
    import dataclasses

    find3 = raw.tables["find3"]
    cut = dataclasses.replace(
        raw, tables={**raw.tables, "find3": find3[~((find3["geo"] == "BE22") & (find3["time"] == 2022))]}
    )
    p = bd.build_parts("be-2023", cut)
    assert p.meta["fallbacks"]["births_regional_tfr_missing"] == ["BE22"]
    assert "BE22" in p.meta["provenance"]["births"]["note"] or "BE22" in p.meta["fallbacks"]["note"]
    i = p.fertility.codes.index("BE22")
    assert p.fertility.scale[i] == 1.0 and p.fertility.target[i] == pytest.approx(p.fertility.tfr_national[0])
    assert np.array_equal(p.counts.births[1:].sum(axis=0), p.national_births[0])


def test_tfr_check_fails_on_an_unexplained_country():
    cross = {"XX": {"2022": {"computed": 1.6, "published": 1.5, "diff": 0.1}}}
    with pytest.raises(bd.DataError, match="state the reason"):
        bd.check_tfr_file(cross)
    cross = {"BG": {"2022": {"computed": 1.5, "published": 1.5, "diff": 0.0}}}
    with pytest.raises(bd.DataError, match="remove it"):
        bd.check_tfr_file(cross)
    cross = {"BG": {"2022": {"computed": 1.77, "published": 1.65, "diff": 0.12}}}
    assert bd.check_tfr_file(cross) == {"BG": bd.TFR_CHECK_EXCEPTIONS["BG"]}
