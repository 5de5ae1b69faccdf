"""Every ```python block of the READMEs runs: the repository's, examples-and-tutorials' and
python-bindings'. Each block runs on its own in a subprocess from the repository root, on the CPU
(CUDA_VISIBLE_DEVICES hides any GPU). A block written as an interactive session (its first line
starts with >>>) runs as a doctest, so the output it shows must be what Ember prints (ELLIPSIS
and NORMALIZE_WHITESPACE on); any other block runs as a script. Shell blocks (```bash) are not
Python and are left alone.

A block that cannot run here for a good reason, such as one that needs a data set that is not
downloaded or a GPU, opens with ```python no-run followed by the reason; it is reported as
skipped with that reason."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
READMES = ["README.md", "examples-and-tutorials/README.md", "python-bindings/README.md"]
OPEN = re.compile(r"^(\s*)```python(?:\s+(.*))?$")
CLOSE = re.compile(r"^\s*```\s*$")


def blocks(readme):
    """(first line number, info after 'python', code) of each ```python block of readme."""
    found, lines = [], (REPO / readme).read_text().splitlines()
    i = 0
    while i < len(lines):
        start = OPEN.match(lines[i])
        i += 1
        if not start:
            continue
        body = []
        while i < len(lines) and not CLOSE.match(lines[i]):
            body.append(lines[i])
            i += 1
        found.append((i - len(body), (start.group(2) or "").strip(),
                      textwrap.dedent("\n".join(body)) + "\n"))
    return found


CASES = [pytest.param(code, info, id=f"{readme}:{line}")
         for readme in READMES for line, info, code in blocks(readme)]


@pytest.mark.parametrize("code, info", CASES)
def test_block_runs(code, info, tmp_path):
    if info.startswith("no-run"):
        pytest.skip(info.removeprefix("no-run").strip(" :-") or "marked no-run")
    session = code.lstrip().startswith(">>>")
    path = tmp_path / ("block.txt" if session else "block.py")
    path.write_text(code)
    command = [sys.executable, str(path)]
    if session:
        command[1:1] = ["-m", "doctest", "-o", "ELLIPSIS", "-o", "NORMALIZE_WHITESPACE"]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", MPLBACKEND="Agg")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, f"the block failed:\n{code}\n{done.stdout}\n{done.stderr}"


def test_blocks_are_found():
    """The extraction itself: the python-bindings README's session is among the cases."""
    assert any(c.id.startswith("python-bindings/README.md:") for c in CASES)
