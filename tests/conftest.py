"""Shared test fixtures. Fixture files live in tests/data/ (filtered copies of real
Eurostat extracts, provenance in tests/data/README.md); tests never read ../shared."""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
