"""Executes every tutorial notebook and renders it to HTML with its outputs and pictures: the
read-only copy a teacher hands out (``nox -s tutorials_html``).

    python examples-and-tutorials/tutorials_html.py OUT_DIR [NN_name ...]

Writes OUT_DIR/NN_name.html per notebook and OUT_DIR/index.html (the course in order, each
with the seconds it took to run here). The notebooks run in a scratch folder of OUT_DIR, so the
files they write stay out of the source tree."""

import argparse
import html
import os
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbconvert import HTMLExporter

TUTORIALS = pathlib.Path(__file__).resolve().parent / "tutorials"


def title(notebook):
    """The notebook's first heading ('# 2 · Backprop ...' -> '2 · Backprop ...')."""
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    return ""


def render(path, out_dir, scratch):
    """Runs the notebook at path (in scratch, with check.py importable) and writes its HTML;
    returns (title, seconds)."""
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(scratch)}}).execute()
    seconds = time.perf_counter() - start
    body, _ = HTMLExporter().from_notebook_node(notebook)
    (out_dir / f"{path.stem}.html").write_text(body, encoding="utf-8")
    return title(notebook), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=pathlib.Path, help="the folder to write the HTML into")
    parser.add_argument("names", nargs="*", help="notebooks to render (default: all), e.g. 01")
    args = parser.parse_args()
    paths = sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))
    if args.names:
        paths = [p for p in paths if any(p.stem.startswith(n) for n in args.names)]
        if not paths:
            sys.exit(f"tutorials_html: no notebook matches {args.names} in {TUTORIALS}")
    scratch = args.out / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    # The kernel inherits the environment: the exercises import check.py from the tutorials.
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(TUTORIALS), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    rows = []
    for path in paths:
        name, seconds = render(path, args.out, scratch)
        print(f"{path.stem:28s} {seconds:6.1f} s  -> {args.out / (path.stem + '.html')}")
        rows.append(f'<li><a href="{path.stem}.html">{html.escape(name)}</a> '
                    f"({seconds:.0f} s to run)</li>")
    (args.out / "index.html").write_text(
        "<!doctype html><meta charset='utf-8'><title>Ember tutorials</title>"
        "<h1>Ember tutorials</h1><ul>\n" + "\n".join(rows) + "\n</ul>\n", encoding="utf-8")


if __name__ == "__main__":
    main()
