"""NUTS 2021 region metadata from the embedded name list."""

import pytest

from demonoise.core.errors import DataError
from demonoise.io.nuts import is_nuts_code, nuts_codes, nuts_region, nuts_regions


def test_names_levels_countries():
    # rows of nuts_names.csv: "BE34;;;Prov. Luxembourg (BE);;2;1;..." and "EL30;;;Aττική;;2;8;639;;EL30;;Attiki;..."
    be34 = nuts_region("BE34")
    assert (be34.name, be34.level, be34.country) == ("Prov. Luxembourg (BE)", 2, "BE")
    el30 = nuts_region("EL30")
    assert (el30.name, el30.level, el30.country) == ("Attiki", 2, "EL")
    assert nuts_region("EL30", script="national").name == "Aττική"
    assert nuts_region("DE").level == 0 and nuts_region("DE").name == "Deutschland"
    assert [r.code for r in nuts_regions(["BE10", "LU00"])] == ["BE10", "LU00"]


def test_code_lists():
    # 11 Belgian NUTS 2 regions (BE10, BE21-25, BE31-35), extra-regio BEZZ excluded by default
    assert nuts_codes(2, "BE") == (
        "BE10",
        "BE21",
        "BE22",
        "BE23",
        "BE24",
        "BE25",
        "BE31",
        "BE32",
        "BE33",
        "BE34",
        "BE35",
    )
    assert "BEZZ" in nuts_codes(2, "BE", extra_regio=True)
    assert nuts_codes(0)[:3] == ("BE", "BG", "CZ")
    assert len(nuts_codes(0)) == 37
    assert not any(len(c) != 4 for c in nuts_codes(2))
    assert all(not is_nuts_code(c) for c in ("BE100", "EU27_2020", "GR30"))


@pytest.mark.parametrize("code, hint", [("GR30", "Eurostat writes GR as EL"), ("XX11", "")])
def test_unknown_code(code, hint):
    with pytest.raises(DataError, match="unknown NUTS 2021 code") as e:
        nuts_region(code)
    assert e.value.region == code and hint in str(e.value)
