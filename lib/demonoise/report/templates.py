"""Where the nbconvert template lives: ``templates/demonoise/`` at the top of the repository.

Found like the notebooks (:mod:`.locate`): an explicit directory (only that one), then
``$DEMONOISE_TEMPLATES``, the repository checkout, ``<sys.prefix>/share/demonoise/templates``.
Each candidate is a *base directory* that must contain ``demonoise/`` with ``conf.json``,
``index.html.j2`` and the two stylesheets (screen, print). Its ``fonts/`` hold the
typeface of the PDF (DejaVu Sans, :func:`font_css`), so that a report is the same
document on every machine: laid out with the fonts a machine happens to have, a country's
report was up to 5 pages shorter where ``fonts-liberation`` is installed (Liberation Sans
for the stylesheet's Arial) than on a bare Debian.
"""

from __future__ import annotations

import os
from pathlib import Path

from demonoise.report.locate import ENV_VARS, find_dir

__all__ = ["TEMPLATE_NAME", "ENV_VAR", "REQUIRED_FILES", "FONT_FAMILY", "FONT_FACES", "find_template_dir", "font_css"]

TEMPLATE_NAME = "demonoise"
ENV_VAR = ENV_VARS["templates"]
#: Files (relative to ``<base>/demonoise``) that make a template directory usable.
REQUIRED_FILES = ("conf.json", "index.html.j2", "static/demonoise.css", "static/print.css")
#: The typeface of the PDF and of the charts' text (the reports' stylesheets name it).
FONT_FAMILY = "DejaVu Sans"
#: Its faces and those of its monospaced companion (inline code), (family, style, weight)
#: -> file in ``<base>/demonoise/fonts``.
FONT_FACES = {
    (FONT_FAMILY, "normal", 400): "DejaVuSans.ttf",
    (FONT_FAMILY, "normal", 700): "DejaVuSans-Bold.ttf",
    (FONT_FAMILY, "italic", 400): "DejaVuSans-Oblique.ttf",
    (FONT_FAMILY, "italic", 700): "DejaVuSans-BoldOblique.ttf",
    ("DejaVu Sans Mono", "normal", 400): "DejaVuSansMono.ttf",
    ("DejaVu Sans Mono", "normal", 700): "DejaVuSansMono-Bold.ttf",
}


def find_template_dir(template_dir: str | os.PathLike | None = None) -> Path:
    """The base directory holding the ``demonoise`` nbconvert template (pass it to nbconvert
    as ``extra_template_basedirs`` with ``template_name="demonoise"``).

    Raises
    ------
    ReportError
        No complete template directory; the message lists each place tried.
    """
    return find_dir("templates", tuple(f"{TEMPLATE_NAME}/{f}" for f in REQUIRED_FILES), template_dir)


def fonts_dir(template_dir: str | os.PathLike | None = None) -> Path | None:
    """The template's ``fonts/`` directory, or ``None`` if it lacks a face of :data:`FONT_FACES`
    (a template of one's own need not ship them: the PDF then uses the machine's fonts)."""
    d = find_template_dir(template_dir) / TEMPLATE_NAME / "fonts"
    return d if all((d / f).is_file() for f in FONT_FACES.values()) else None


def font_css(template_dir: str | os.PathLike | None = None) -> str:
    """The stylesheet that makes the PDF use the template's own typeface: an ``@font-face``
    rule per face of :data:`FONT_FACES` (the template's files), and the stylesheets' two
    font stacks (``--dn-font``, ``--dn-mono``) set to them, ``!important`` because the
    document's own ``:root`` names Arial first and would otherwise win (Liberation Sans
    answers for Arial where ``fonts-liberation`` is installed); ``""`` when the template
    has no fonts (:func:`fonts_dir`)."""
    d = fonts_dir(template_dir)
    if d is None:
        return ""
    faces = "".join(
        f'@font-face {{ font-family: "{family}"; font-style: {style}; font-weight: {weight}; '
        f'src: url("{(d / name).resolve().as_uri()}"); }}\n'
        for (family, style, weight), name in FONT_FACES.items()
    )
    stacks = f'--dn-font: "{FONT_FAMILY}", sans-serif !important; --dn-mono: "DejaVu Sans Mono", monospace !important;'
    return faces + ":root { " + stacks + " }\n"
