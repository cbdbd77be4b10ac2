"""The public API at the top level: every name resolves to the object its layer module
defines and exports, ``import demonoise`` stays cheap (no numpy, pandas or scipy until a
name is used), and the modules of 0.1 are gone (CHANGELOG.md, "Upgrading from 0.1 to 0.2")."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import demonoise

PUBLIC = sorted(demonoise._PUBLIC)


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves_to_its_module_object(name):
    module = importlib.import_module(demonoise._PUBLIC[name])
    assert name in module.__all__, f"{name} is not exported by {module.__name__}"
    assert getattr(demonoise, name) is getattr(module, name)


def test_all_and_dir_list_the_public_names():
    assert set(PUBLIC) | {"__version__"} == set(demonoise.__all__)
    assert set(PUBLIC) <= set(dir(demonoise))
    assert len(demonoise.__all__) == len(set(demonoise.__all__))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'lifetable_of'"):
        demonoise.lifetable_of  # noqa: B018


def test_import_is_cheap_and_names_load_on_first_use():
    code = (
        "import json, sys\n"
        "import demonoise\n"
        "heavy = lambda: sorted(m for m in ('numpy', 'pandas', 'scipy') if m in sys.modules)\n"
        "before = heavy()\n"
        "demonoise.GenericNoise\n"
        "print(json.dumps({'before': before, 'after': heavy(), 'version': demonoise.__version__}))\n"
    )
    out = json.loads(_run(code))
    assert out["before"] == []
    assert "numpy" in out["after"]
    assert out["version"] == demonoise.__version__


@pytest.mark.parametrize(
    "old", ["demonoise.counts", "demonoise.lifetable", "demonoise.propagation", "demonoise.compute"]
)
def test_modules_of_0_1_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_the_readme_example_runs():
    dn = demonoise
    counts = dn.load("be-2023").select(["BE34"])
    lz = dn.linearise(counts, indicators=("e",), e_ages=[0])
    table = dn.results_table(lz, [dn.GenericNoise(1), dn.GenericNoise(5)])
    e0 = table[(table.sex == "T")].set_index("V")
    # noise variance is linear in V for the generic model
    assert e0.loc[5.0, "var_noise"] == pytest.approx(5 * e0.loc[1.0, "var_noise"], rel=1e-12)
