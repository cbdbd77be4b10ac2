"""Notebooks passed between the batch's stages are read and written as nbformat reads and
writes them -- the same node, the same text -- without its schema validation (which only
logs; papermill validated each notebook when it wrote it)."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from demonoise.report.document.assemble import read_notebook_text, write_notebook


def _executed():
    nb = new_notebook(metadata={"title": "Tëst", "papermill": {"parameters": {"V": 1.0}}})
    code = new_code_cell("x = 1\nx", execution_count=1)
    code.outputs = [
        new_output("execute_result", {"text/plain": "1", "image/svg+xml": "<svg>\n</svg>"}, execution_count=1)
    ]
    nb.cells = [new_markdown_cell("# Title\n\nWords, é and ∑."), code]
    return nb


def _text(nb, tmp_path) -> str:
    return write_notebook(nb, tmp_path / "nb.ipynb").read_text(encoding="utf-8")


def test_same_text_and_node_as_nbformat(tmp_path):
    nb = _executed()
    text = nbformat.writes(nb)
    assert _text(nb, tmp_path) == text + "\n"  # nbformat.write adds the final newline
    back = read_notebook_text(_text(nb, tmp_path))
    assert back == nbformat.reads(text, as_version=4)
    assert back.cells[1].outputs[0]["data"]["image/svg+xml"] == "<svg>\n</svg>"  # joined as nbformat joins it
    assert isinstance(back, nbformat.NotebookNode) and back.metadata.papermill.parameters.V == 1.0


def test_no_schema_validation(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("validated")

    nb = _executed()  # nbformat's constructors validate what they build
    monkeypatch.setattr(nbformat, "validate", refuse)
    read_notebook_text(_text(nb, tmp_path))
    with pytest.raises(AssertionError, match="validated"):
        nbformat.writes(nb)  # what the batch's stages no longer call


def test_an_older_minor_version_is_read_as_nbformat_reads_it():
    nb = _executed()
    nb.nbformat_minor = 4
    for cell in nb.cells:
        cell.pop("id", None)
    text = nbformat.writes(nb)
    assert read_notebook_text(text) == nbformat.reads(text, as_version=4)
