"""The tutorials: each .ipynb holds the cells of its jupytext .py twin, and each notebook runs
top to bottom (nbclient, on the CPU unless a GPU is present)."""

import os
import pathlib

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

TUTORIAL_DIR = pathlib.Path(__file__).resolve().parents[1] / "tutorials"
# The notebooks' scripts, NN_name.py; check.py and solutions.py beside them are modules.
TUTORIALS = sorted(TUTORIAL_DIR.glob("[0-9][0-9]_*.py"))


def cells(notebook):
    return [(c.cell_type, c.source.strip()) for c in notebook.cells]


def test_there_are_tutorials():
    assert len(TUTORIALS) >= 7


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_notebook_matches_its_script(script):
    notebook = script.with_suffix(".ipynb")
    assert notebook.is_file(), f"run: jupytext --to ipynb {script.name}"
    assert cells(nbformat.read(notebook, as_version=4)) == cells(jupytext.read(script)), (
        f"{notebook.name} differs from {script.name}; regenerate it: "
        f"jupytext --to ipynb {script.name}"
    )


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_notebook_runs(script, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # The kernel runs in tmp_path; the exercises import check.py from the tutorials' folder.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(TUTORIAL_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]))
    notebook = nbformat.read(script.with_suffix(".ipynb"), as_version=4)
    NotebookClient(notebook, timeout=240, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
