"""Shared test fixtures. Fixture files live in tests/data/ (filtered copies of real
Eurostat extracts, provenance in tests/data/README.md); tests never read ../shared."""

import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

# Every chart shown in a notebook the tests execute (in this process, a kernel or a Dask
# worker: they inherit the environment) is validated against the Vega-Lite schema; the
# report batch skips the check (demonoise.report.content.notebook._chart_display).
os.environ.setdefault("DEMONOISE_VALIDATE_CHARTS", "1")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
