"""Every notebook under notebooks/ runs from top to bottom on the committed results
(nbclient, a fresh kernel, the Agg backend) and draws at least one figure; a failing cell
fails the test with that cell's error."""

from __future__ import annotations

import glob
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def test_the_promised_notebooks_exist() -> None:
    names = {os.path.basename(p) for p in NOTEBOOKS}
    assert {"throughput.ipynb", "engine.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs_and_draws(path: str, monkeypatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": os.path.dirname(path)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    images = [
        out
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert images, f"{os.path.basename(path)} drew no figure"
    errors = [
        out
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert not errors
