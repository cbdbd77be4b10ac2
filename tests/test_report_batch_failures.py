"""A deliberately broken notebook is isolated and reported; Chromium missing gives HTML
only with the reason; the CLI exits non-zero on a failed batch and 2 on bad params."""

from __future__ import annotations

import json
import re
import shutil

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from demonoise.cli import main
from demonoise.report.batch import NOTEBOOKS_ENV, find_notebooks_dir, parse_params, run_reports

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def broken_notebooks(tmp_path_factory):
    """The real notebooks, with a cell in asmr.ipynb that fails at V = 5 only."""
    d = tmp_path_factory.mktemp("notebooks")
    for p in find_notebooks_dir().glob("*.ipynb"):
        shutil.copy(p, d / p.name)
    nb = nbformat.read(d / "asmr.ipynb", as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if "summary.load_results" in c.source) + 1
    nb.cells.insert(at, new_code_cell('if V == 5:\n    raise ValueError(f"deliberate failure at V = {V:g}")'))
    nb.cells[at]["id"] = "deliberate-failure"
    nbformat.write(nb, d / "asmr.ipynb")
    return d


@pytest.fixture(scope="module")
def batch(broken_notebooks, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    params = parse_params(
        {"datasets": {"ess-2023": ["MT"]}, "V": [1, 5], "indicators": ["asmr"], "mc": 0, "pdf": False}, source="test"
    )
    rep = run_reports(params, out, workers=2, progress=False, log=None, notebooks_dir=broken_notebooks)
    return {"out": out, "rep": rep, "params": params}


def test_a_broken_notebook_is_isolated_and_reported(batch):
    rep, out = batch["rep"], batch["out"]
    assert not rep.ok
    ok, failed = rep.outcomes
    assert (ok.spec.V, ok.status) == (1.0, "ok") and ok.html.is_file()
    assert (failed.spec.V, failed.status) == (5.0, "failed")
    assert "asmr.ipynb: ValueError: deliberate failure at V = 5" in failed.error
    assert failed.html is None and not failed.spec.html(out).exists()
    kept = failed.spec.build_dir(out) / "asmr.failed.ipynb"
    assert kept.is_file() and f"kept at {kept}" in failed.error
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "2 reports: 1 ok, 0 up to date, 1 failed" in index
    assert 'class="dn-row-failed"' in index and "deliberate failure at V = 5" in index
    assert 'href="reports/ess-2023/MT-V1.html"' in index and "MT-V5.html" not in index
    # HTML only, and the index says why there is no PDF
    assert "no PDF: not requested" in index


def test_missing_chromium_gives_html_and_says_why(batch, broken_notebooks):
    params = parse_params({"datasets": {"ess-2023": ["MT"]}, "V": [1], "indicators": ["asmr"], "mc": 0}, source="test")
    rep = run_reports(
        params,
        batch["out"],
        workers=1,
        progress=False,
        log=None,
        notebooks_dir=broken_notebooks,
        chromium="/nonexistent/chromium",
    )
    o = rep.outcomes[0]
    assert rep.ok and o.html.is_file() and o.pdf is None
    assert o.pdf_error.startswith("no PDF: chromium not found at /nonexistent/chromium")
    assert any("chromium not found" in n for n in rep.notes)
    index = (batch["out"] / "index.html").read_text(encoding="utf-8")
    assert "chromium not found at /nonexistent/chromium" in index


def test_cli_exit_status(batch, broken_notebooks, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(NOTEBOOKS_ENV, str(broken_notebooks))
    params = tmp_path / "p.yaml"
    params.write_text(json.dumps({"datasets": {"ess-2023": ["MT"]}, "V": [1, 5], "indicators": ["asmr"], "mc": 0}))
    code = main(["report", "--params", str(params), "--output", str(batch["out"]), "--no-pdf", "--workers", "1"])
    cap = capsys.readouterr()
    assert code == 1
    assert "FAILED MT, V = 5 (ess-2023): asmr.ipynb: ValueError: deliberate failure at V = 5" in cap.err
    assert f"index: {batch['out'] / 'index.html'}" in cap.out
    # V = 1 is fine: up to date, or rendered again (the previous test rendered it without Chromium)
    assert re.search(r"2 reports: (1 rendered, 0 up to date|0 rendered, 1 up to date), 1 failed; 0 PDFs", cap.out)

    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps({"datasets": {"ess-2023": ["XX"]}, "V": [1]}))
    assert main(["report", "--params", str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "unknown country XX for dataset 'ess-2023'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["report", "--params", str(bad), "--workers", "0"])
