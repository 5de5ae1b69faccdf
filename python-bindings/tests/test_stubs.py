"""The type stubs of the compiled module (src/ember/_core.pyi, with _ops.pyi for ember.<op>) match
it, checked by mypy's stubtest against the installed package, and type a program that uses
ember: a correct one passes mypy, one with type errors fails where it should. Their parts that
follow from the op schemas are what `nox -s stubs` (tools/gen_stubs.py) writes."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ember

pytest.importorskip("mypy", reason="mypy is not installed (it is in the test extra: ember[test])")

ALLOWLIST = Path(__file__).with_name("stubtest-allowlist.txt")
GENERATOR = Path(__file__).parents[1] / "tools" / "gen_stubs.py"
PACKAGE = Path(ember.__file__).parent


def run_mypy(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """python -m mypy... in cwd (away from the source tree: the installed package is checked)."""
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True)


def test_the_package_ships_its_stubs():
    for name in ("_core.pyi", "_ops.pyi", "py.typed"):
        assert (PACKAGE / name).is_file(), name


def test_the_stubs_are_what_the_schemas_give():
    """A line added to a schema (core-runtime's ember/ops/unary.def) without `nox -s stubs`."""
    run = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_stubs_match_the_compiled_module(tmp_path):
    run = run_mypy(tmp_path, "mypy.stubtest", "ember._core", "ember._ops", "--concise",
                   "--allowlist", str(ALLOWLIST))
    assert run.returncode == 0, run.stdout + run.stderr


GOOD = """
    import ember

    x: ember.Tensor = ember.randn(4, 3, requires_grad=True)
    w = ember.zeros(3, 2, dtype="float32", device="cpu")
    loss = (x @ w).relu().sum() * 2.0
    loss.backward()
    grad: ember.Tensor | None = x.grad
    rows: list[ember.Tensor] = [row for row in x]
    count: int = x.numel() + len(x)
    kind: ember.dtype = x.dtype
    text: str = str(loss.graph())
    with ember.no_grad():
        y = ember.tensor([1.0, 2.0], dtype=ember.float64).exp()
    y.add_(1.0).mul_(y)
"""

BAD = """
    import ember

    x = ember.ones(2, 2)
    count: str = x.numel()
    x.no_such_method()
    ember.zeros(2, device=3.5)
"""


def test_a_typed_program_checks_against_the_stubs(tmp_path):
    (tmp_path / "good.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD))
    good = run_mypy(tmp_path, "mypy", "--no-incremental", "good.py")
    assert good.returncode == 0, good.stdout + good.stderr
    bad = run_mypy(tmp_path, "mypy", "--no-incremental", "bad.py")
    errors = [line for line in bad.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["5", "6", "7"], bad.stdout
