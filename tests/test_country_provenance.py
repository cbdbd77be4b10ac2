"""A country's report names the fallbacks of its own regions, not the whole dataset's."""

from __future__ import annotations

import re

import pytest

from demonoise.io import datasets as reg
from demonoise.io.datasets import provenance_dict

CODE = re.compile(r"\b[A-Z]{2}[0-9A-Z]{0,2}\b")


def _codes(fallbacks: dict) -> set[str]:
    """Every code the build's fallbacks block names (keys and list items)."""
    out: set[str] = set()
    for v in fallbacks.values():
        if isinstance(v, dict):
            out |= set(v)
        elif isinstance(v, list):
            out |= {str(x) for x in v}
    return out


@pytest.mark.parametrize("country", ["LU", "FR", "PT", "TR", "NL", "HR"])
def test_notes_name_only_the_countrys_fallbacks(country):
    prov = provenance_dict("ess-2023")
    fallbacks = reg.metadata("ess-2023")["fallbacks"]
    everyone = _codes(fallbacks)
    mine = {c for c in everyone if c.startswith(country)}
    notes = " ".join(p["note"] for p in reg.country_provenance(prov, "ess-2023", country).values())
    named = {c for c in CODE.findall(notes) if c in everyone}
    assert named == mine, (named, mine)
    assert (reg.FALLBACKS_SEP in notes) == bool(mine)


def test_rules_kept_and_dataset_wide_notes_unchanged():
    prov = provenance_dict("ess-2023")
    lu = reg.country_provenance(prov, "ess-2023", "LU")
    for table, p in prov.items():
        assert lu[table]["note"] == p["note"].split(reg.FALLBACKS_SEP)[0]
        assert {k: v for k, v in lu[table].items() if k != "note"} == {k: v for k, v in p.items() if k != "note"}
    # the build wrote the dataset-wide sentences the same function gives
    full = reg.fallback_notes(reg.metadata("ess-2023")["fallbacks"])
    assert all(prov[t]["note"].endswith(s) for t, s in full.items() if s)
    # a dataset without a build's fallbacks block is left as it is
    assert reg.country_provenance(prov, "my-own.csv", "LU") == prov
