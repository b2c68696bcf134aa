"""The quickstart notebook runs top to bottom (with small step counts) and reports its errors."""

import os
import re
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"
SMALL = "ADAM_STEPS = 100\nLBFGS_STEPS = 50\nN_INTERIOR = 256\nN_BOUNDARY = 64\n"


def test_quickstart_executes_and_learns(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    parameters = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(parameters) == 1
    parameters[0].source = SMALL
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute(env={**os.environ, "OMP_NUM_THREADS": "1"})

    text = "".join(
        output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", [])
    )
    rel_l2 = float(re.search(r"rel_l2 ([0-9.e+-]+)", text).group(1))
    assert rel_l2 < 0.2  # 150 steps on 256 points: learning, far from converged
    images = [
        output
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "image/png" in output.get("data", {})
    ]
    assert len(images) == 1
