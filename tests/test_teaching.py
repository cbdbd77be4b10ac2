"""The step-by-step derivation (demonoise.analysis.teaching) and the teaching notebook.

Truths used: central finite differences of the life table itself (no closed form
involved), on the real Belgian NUTS 2 counts of be-2023 for the complete table and for
the abridged table of 5-year publication; the library's own variance
(:meth:`IndicatorLinearisation.variance`), an independent path through the published cells; the
closed form sqrt(2) - 1 of the admixture at equal variances; Monte Carlo judged by
z = (sd_MC / sd_analytic - 1) sqrt(2N).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from chromium_helpers import dump_dom, page_requests
from demonoise.analysis import teaching as tc
from demonoise.analysis.results import results_table
from demonoise.core.errors import ParameterError
from demonoise.core.layout import Layout, publish
from demonoise.demography.indicators import life_expectancy, lifetable_inputs, linearise_e
from demonoise.demography.lifetable import e_derivative, life_table_from_rates, lifetable_lower
from demonoise.io.datasets import load
from demonoise.noise.models import GenericNoise
from demonoise.report.document.assemble import read_metrics
from demonoise.uncertainty.propagation import linearise
from report_helpers import chromium, scan_html
from report_helpers import pdf_text as read_pdf_text


@pytest.fixture(scope="module")
def be():
    return load("be-2023")


def _table(counts, granularity="single"):
    pub = publish(counts, granularity)
    lay = Layout.of(pub)
    return pub, lay, life_expectancy(lay, pub.deaths, pub.pop_start, pub.pop_end)


@pytest.mark.parametrize("granularity", ["single", "5y", "5y-infant"])
def test_every_step_matches_finite_differences(be, granularity):
    _, _, lt = _table(be, granularity)
    ks = (0, lt.index(65))
    rows = tc.check_steps(lt, ages=ks)
    assert [r["step"] for r in rows] == ["dq", "dl", "dL", "dT", "de"]
    X = lt.lower.size
    assert rows[0]["values"] == 12 * 3 * X and rows[-1]["values"] == 12 * 3 * X * 2
    for r in rows:
        assert r["max_rel_error"] < 1e-6, r


def test_steps_on_a_schedule_with_zero_rates():
    """A rate of exactly 0 (no deaths at an age) keeps every step finite and exact."""
    lower = lifetable_lower(10)
    m = np.array([0.004, 0.0, 0.0003, 0.0, 0.001, 0.002, 0.004, 0.008, 0.02, 0.05, 0.2])
    lt = life_table_from_rates(m, lower)
    for r in tc.check_steps(lt, ages=(0, 3)):
        assert r["max_rel_error"] < 1e-6, r


def test_closed_forms_are_those_of_the_design_notes(be):
    """Step 6 assembled from steps 2-5 by hand equals lifetable.e_derivative (docs/design.md,
    First-order propagation)."""
    _, _, lt = _table(be)
    cf = tc.closed_form_steps(lt, ages=(0,))
    b = 1 - lt.a[..., :-1]
    # dT_k/dm_x = -l_x (b + e_{x+1}) / (1 + b m)^2, the closed form of docs/design.md times l_k
    want = -lt.l[..., :-1] * (b + lt.e[..., 1:]) / (1 + b * lt.m[..., :-1]) ** 2
    np.testing.assert_allclose(cf["dT"][..., :-1], want, rtol=1e-13)
    np.testing.assert_allclose(cf["dT"][..., -1], -lt.l[..., -1] / lt.m[..., -1] ** 2, rtol=1e-13)
    np.testing.assert_allclose(cf["de"][..., 0, :], e_derivative(lt, ages=0), rtol=1e-13)


def test_chain_rule_to_published_cells(be):
    pub, lay, _ = _table(be)
    ks = (0, 65)
    lin = linearise_e(lay, pub.deaths, pub.pop_start, pub.pop_end, ages=list(ks))
    fd = tc.count_gradients_fd(lay, pub.deaths, pub.pop_start, pub.pop_end, ages=ks)
    for m in ("deaths", "pop_start", "pop_end"):
        assert fd[m].shape == lin.grads[m].shape == (12, 3, 2, pub.ages.size)
        assert tc.max_relative_error(fd[m], lin.grads[m]) < 1e-6, m


def test_variance_sum_equals_the_library(be):
    pub, lay, lt = _table(be)
    assert pub.deaths[..., -1].sum() == 0 and pub.pop_start[..., -1].sum() == 0 and pub.pop_end[..., -1].sum() == 0
    D, E = lifetable_inputs(lay, pub.deaths, pub.pop_start, pub.pop_end)
    P0, P1 = lay.group_lifetable(pub.pop_start[..., :-1]), lay.group_lifetable(pub.pop_end[..., :-1])
    cells = tc.cells_per_group(lay)
    assert cells[:-1].tolist() == [1] * 85 and cells[-1] == 16  # Y85..Y99 and Y_OPEN
    ks = [0, lt.index(65)]
    dm = e_derivative(lt, ages=ks)
    lz = linearise(pub, indicators=("e",), e_ages=[0, 65])
    for V in (1.0, 5.0):
        pois, noise = tc.variance_terms(dm, D, E, cells, V)
        unk = tc.unknown_cell_variance(dm, D, E, P0, P1, V)
        df = results_table(lz, [GenericNoise(V)])
        vp = df["var_pois"].to_numpy().reshape(12, 3, 2)
        vn = df["var_noise"].to_numpy().reshape(12, 3, 2)
        np.testing.assert_allclose(pois.sum(-1), vp, rtol=1e-12)
        np.testing.assert_allclose(noise.sum(-1) + unk, vn, rtol=1e-12)
        assert np.all(unk > 0) and np.all(unk / vn < 0.05)  # the UNK cells are noised, even at 0, and matter little


def test_max_relative_error():
    assert tc.max_relative_error([1.0, 2.0 * (1 + 1e-7), 0.0], [1.0, 2.0, 0.0]) == pytest.approx(1e-7)
    # a spurious value where the exact derivative is 0 is measured against the largest |exact|
    assert tc.max_relative_error([1.0, 0.5], [1.0, 0.0]) == pytest.approx(0.5)
    with pytest.raises(ParameterError, match="non-finite"):
        tc.max_relative_error([np.nan], [1.0])


# ------------------------------------------------------------------ the notebook
@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from demonoise.report.batch.extras import extra_run, render_further

    out = tmp_path_factory.mktemp("teaching")
    res = render_further(extra_run("teaching", {"mc": 4000}, out), pdf=True)
    return res, out


@pytest.mark.slow
def test_notebook_checks_pass(rendered):
    _, out = rendered
    m = read_metrics(out / "teaching-mc4000.ipynb")
    print(
        {
            k: m[k]
            for k in (
                "fd_max_rel_error",
                "count_fd_max_rel_error",
                "mc_max_abs_z",
                "V_star",
                "sd_noise_ratio_single_5y",
            )
        }
    )
    assert m["region"] == "BE34" and m["sex"] == "F" and m["mc_n"] == 4000
    assert m["fd_max_rel_error"] < 1e-6 and set(m["fd_steps"]) == {"dq", "dl", "dL", "dT", "de"}
    assert m["count_fd_max_rel_error"] < 1e-6
    assert m["variance_formula_max_rel_diff"] < 1e-12
    assert m["mc_max_abs_z"] < 4  # 36 comparisons (2 V x 3 sexes x e0, e65 x 3 components)
    # exercise 1: at V* noise equals Poisson, so A = sqrt(2) - 1
    assert m["A_at_V_star"] == pytest.approx(np.sqrt(2) - 1, abs=1e-12)
    # docs/design.md (The problem): BE34 women, single ages, A = 26.2 % at V = 1 -> V* = 1 / ((1.262)^2 - 1) ~ 1.69
    assert 1.5 < m["V_star"] < 1.9
    # exercise 2: 5-year cells, noise variance of e0 about 5 times smaller
    assert 2.0 < m["sd_noise_ratio_single_5y"] < 2.5
    # exercise 4: the scale found gives A = 0.10 up to the rounding of the scaled counts
    assert m["A_at_scale"] == pytest.approx(0.10, abs=0.002)
    # section 12: the change's gradient through the shared stock against finite differences of the exact change
    assert m["change_fd_max_rel_error"] < 1e-5 and m["change_formula_max_rel_diff"] < 1e-12
    rows = m["change_rows"]
    assert len(rows) == 6 and all(r["Cov (shared stock)"] > 0 for r in rows)
    every = [r["sd too large by"] for r in rows if r["noise on"] == "every cell"]
    stocks = [r["sd too large by"] for r in rows if r["noise on"] == "stocks only"]
    assert max(every) < 1.01 and min(stocks) > 1.25  # docs/design.md: 1.25-1.41 with stock noise alone


@pytest.mark.slow
def test_rendered_html(rendered):
    res, _ = rendered
    text = res.html.read_text(encoding="utf-8")
    scan = scan_html(text)
    assert scan.violations == [] and scan.scripts_with_src == []
    assert "MathJax" not in text and "<script" not in text  # no script: formulas typeset as SVG
    assert text.count("dn-math-display") >= 10  # display equations
    assert "$" not in re.sub(r"<[^>]+>", "", re.sub(r"<(svg|style)\b.*?</\1>", "", text, flags=re.S))
    assert len(re.findall(r'<img [^>]*class="dn-chart"', text)) == 2  # derivatives chart, variance terms chart
    assert text.count('<details class="dn-solution">') == 4  # solutions collapsed
    assert "Data: population and deaths real (Eurostat)" in text
    assert "import numpy" not in text and "display_metrics" not in text


@pytest.mark.slow
@chromium
def test_maths_charts_and_solutions_in_chromium_and_pdf(rendered, tmp_path):
    res, _ = rendered
    net = tmp_path / "net.json"
    dom = dump_dom(res.html, net_log=net)
    assert page_requests(net) == []
    assert len(re.findall(r'<svg [^>]*class="dn-math', dom)) >= 80
    assert "$$" not in re.sub(r"<(svg|style)\b.*?</\1>", "", dom, flags=re.S)
    assert len(re.findall(r'<img [^>]*class="dn-chart"', dom)) == 2
    assert res.pdf_error is None and res.pdf.read_bytes()[:5] == b"%PDF-"
    pdf_text = read_pdf_text(res.pdf)
    assert "\\frac" not in pdf_text and "$$" not in pdf_text
    # the solutions are printed open: their content is in the PDF
    assert "Check with the library at" in pdf_text and "Measured: noise sd ratio single / 5-year" in pdf_text
