"""NUTS 2 boundaries (NUTS 2021) for maps: the embedded GeoJSON and its credit.

The file ``demonoise/data/geo/nuts2_2021.geojson.gz`` is a GeoJSON
``FeatureCollection`` of 334 NUTS 2 regions (EU, EFTA, candidate countries and the
United Kingdom; no XK, no BA) in longitude/latitude (EPSG:4326), one ``MultiPolygon``
per region, with the properties ``NUTS_ID``, ``CNTR_CODE``, ``NAME_LATN`` and
``NUTS_NAME``. Derived from GISCO's ``NUTS_RG_03M_2021_4326_LEVL_2`` (simplified to
0.02 degrees, 3 decimals); provenance in ``demonoise/data/README.md``.

Every map drawn from it must carry :data:`CREDIT`.

Exterior rings run clockwise, the order Vega / d3-geo expect for spherical polygons:
the winding is left as it is (reversing it would make every region cover the rest of
the globe).

I/O layer: imports only the data model's errors.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterable
from importlib import resources

from demonoise.core.errors import FormatError

__all__ = [
    "GEO_FILE",
    "CREDIT",
    "load_nuts2_geojson",
    "nuts2_features",
    "nuts2_codes",
    "feature_bounds",
    "iter_positions",
]

#: Path of the boundaries inside the package.
GEO_FILE = ("data", "geo", "nuts2_2021.geojson.gz")
#: Credit line required on every map using these boundaries (GISCO's licence terms).
CREDIT = "\u00a9 EuroGeographics for the administrative boundaries"

_GEOMETRIES = ("Polygon", "MultiPolygon")


@functools.lru_cache(maxsize=1)
def _text() -> str:
    path = resources.files("demonoise").joinpath(*GEO_FILE)
    try:
        return gzip.decompress(path.read_bytes()).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise FormatError(f"cannot read the embedded NUTS 2 boundaries: {e}", file="/".join(GEO_FILE)) from None


def _validate(gj, file: str) -> dict:
    if not isinstance(gj, dict) or gj.get("type") != "FeatureCollection" or not isinstance(gj.get("features"), list):
        raise FormatError("not a GeoJSON FeatureCollection", file=file)
    seen: set[str] = set()
    for i, f in enumerate(gj["features"]):
        if not isinstance(f, dict):
            raise FormatError(f"feature {i} is not a JSON object", file=file)
        props = f.get("properties") or {}
        code = props.get("NUTS_ID")
        if not isinstance(code, str) or not code:
            raise FormatError(f"feature {i} has no NUTS_ID property", file=file)
        if code in seen:
            raise FormatError("duplicate feature", file=file, region=code)
        seen.add(code)
        geom = f.get("geometry") or {}
        if geom.get("type") not in _GEOMETRIES or not geom.get("coordinates"):
            raise FormatError(
                f"geometry must be a non-empty Polygon or MultiPolygon, got {geom.get('type')!r}",
                file=file,
                region=code,
            )
    return gj


def load_nuts2_geojson(text: str | None = None, *, file: str | None = None) -> dict:
    """The NUTS 2 boundaries as a GeoJSON ``FeatureCollection`` (a fresh dict per call).

    Parameters
    ----------
    text : str, optional
        GeoJSON text to parse instead of the embedded file (e.g. a user's own
        boundaries with the same ``NUTS_ID`` property).
    file : str, optional
        Name used in error messages for ``text``.

    Returns
    -------
    dict
        ``{"type": "FeatureCollection", "features": [...]}``; every feature has a
        unique ``properties.NUTS_ID`` and a Polygon or MultiPolygon geometry.

    Raises
    ------
    FormatError
        Not a FeatureCollection, a feature without ``NUTS_ID``, a duplicate code, or a
        geometry that is not a non-empty (Multi)Polygon -- naming the file and region.
    """
    name = file or ("/".join(GEO_FILE) if text is None else "<text>")
    raw = _text() if text is None else text
    try:
        gj = json.loads(raw)
    except ValueError as e:
        raise FormatError(f"invalid JSON: {e}", file=name) from None
    except RecursionError:
        raise FormatError("invalid JSON: arrays or objects nested too deeply to read", file=name) from None
    return _validate(gj, name)


def nuts2_features(codes: Iterable[str] | None = None, geojson: dict | None = None) -> list[dict]:
    """The features of ``codes`` (all features if ``None``), in file order.

    Codes absent from the boundaries are ignored here; :func:`nuts2_codes` tells
    which codes exist.
    """
    gj = geojson if geojson is not None else load_nuts2_geojson()
    feats = gj["features"]
    if codes is None:
        return list(feats)
    want = set(codes)
    return [f for f in feats if f["properties"]["NUTS_ID"] in want]


def nuts2_codes(geojson: dict | None = None) -> list[str]:
    """Every ``NUTS_ID`` in the boundaries, in file order."""
    gj = geojson if geojson is not None else load_nuts2_geojson()
    return [f["properties"]["NUTS_ID"] for f in gj["features"]]


def iter_positions(coords):
    """Every ``[lon, lat]`` position of a GeoJSON ``coordinates`` array, at any depth."""
    if coords and isinstance(coords[0], (int, float)):
        yield coords
        return
    for c in coords:
        yield from iter_positions(c)


def feature_bounds(feature: dict) -> tuple[float, float, float, float]:
    """Bounding box ``(lon_min, lat_min, lon_max, lat_max)`` of a feature's geometry
    (plain longitude/latitude extremes; no region here crosses the antimeridian)."""
    pts = list(iter_positions(feature["geometry"]["coordinates"]))
    lons = [p[0] for p in pts]
    lats = [p[1] for p in pts]
    return min(lons), min(lats), max(lons), max(lats)
