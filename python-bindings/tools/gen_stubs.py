"""Writes the parts of ember's type stubs that follow from the op schemas (`nox -s stubs`), or with
--check says where they differ from what is written (tests/test_stubs.py runs that).

From core-runtime's include/ember/ops/unary.def (one line per plain unary op: its name, its api
column and its docstring) come, in src/ember/_core.pyi, the block of module functions `name(input)`
and the block of Tensor methods `name(self)` between the markers below (ops marked Own keep their
hand-written stubs, which take more arguments); and all of src/ember/_ops.pyi, whose names are
_ops.py's _NAMES list followed by the schema's. The rest of _core.pyi is written by hand: its
type aliases, overloads and comments are more than a generator from the compiled module could
keep. Reads the sources only: no build is needed.

  python python-bindings/tools/gen_stubs.py          rewrite the stubs
  python python-bindings/tools/gen_stubs.py --check  exit 1, naming the files, if they are stale
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNARY_DEF = ROOT / "core-runtime/include/ember/ops/unary.def"
PACKAGE = ROOT / "python-bindings/src/ember"
BEGIN = "# BEGIN generated from unary.def by `nox -s stubs`: edit that file, not this block"
END = "# END generated from unary.def"

# EMBER_UNARY_OP(name, Formula, dtypes, cost, api, "doc"), possibly over two lines with a comment.
OP_LINE = re.compile(
    r"^EMBER_UNARY_OP\(\s*(\w+),\s*(\w+),\s*(\w+),\s*(\w+),\s*(\w+),\s*(?://[^\n]*)?\s*"
    r'"((?:[^"\\]|\\.)*)"\s*\)',
    re.MULTILINE,
)


def unary_ops() -> list[tuple[str, str, str]]:
    """(name, api, doc) of every line of unary.def, in its order."""
    ops = [(m[1], m[5], m[6]) for m in OP_LINE.finditer(UNARY_DEF.read_text())]
    if not ops:
        sys.exit(f"{UNARY_DEF}: no EMBER_UNARY_OP lines found")
    return ops


def stub(signature: str, doc: str, indent: str) -> str:
    """One function's stub as pybind11-stubgen writes it: the docstring on a line of its own."""
    quotes = f'{indent}    """\n'
    return f"{indent}def {signature} -> Tensor:\n{quotes}{indent}    {doc}\n{quotes}"


def core_blocks(ops: list[tuple[str, str, str]]) -> tuple[str, str]:
    """The Tensor methods' block and the module functions' block of _core.pyi."""
    plain = sorted((name, doc) for name, api, doc in ops if api == "Plain")
    methods = "".join(stub(f"{name}(self)", doc, "    ") for name, doc in plain)
    functions = "".join(stub(f"{name}(input: Tensor)", doc, "") for name, doc in plain)
    functions += "_unary_ops: tuple[str, ...]\n"
    return (f"    {BEGIN}\n{methods}    {END}\n", f"{BEGIN}\n{functions}{END}\n")


def replace_block(text: str, block: str, indent: str) -> str:
    """text with its block marked at this indent (the Tensor class's, or the module's) replaced."""
    marked = re.search(f"^{re.escape(indent + BEGIN)}\n.*?^{re.escape(indent + END)}\n", text,
                       re.DOTALL | re.MULTILINE)
    if not marked:
        sys.exit(f"_core.pyi: no block between the lines '{indent + BEGIN}' and '{indent + END}'")
    return text[:marked.start()] + block + text[marked.end():]


def core_pyi(ops: list[tuple[str, str, str]]) -> str:
    text = (PACKAGE / "_core.pyi").read_text()
    methods, functions = core_blocks(ops)
    return replace_block(replace_block(text, methods, "    "), functions, "")


def ops_names(ops: list[tuple[str, str, str]]) -> list[str]:
    """ember._ops's names: _NAMES as _ops.py spells it, then the schema's."""
    source = (PACKAGE / "_ops.py").read_text()
    listed = re.search(r'_NAMES = """(.*?)"""', source, re.DOTALL)
    if not listed:
        sys.exit("_ops.py: no _NAMES = \"\"\"...\"\"\" list found")
    return listed[1].split() + [name for name, _, _ in ops]


def ops_pyi(ops: list[tuple[str, str, str]]) -> str:
    names = ops_names(ops)
    imports = "".join(f"    {name} as {name},\n" for name in names)
    quoted = ", ".join(f'"{name}"' for name in names)
    wrapped = textwrap.fill(quoted, width=100, initial_indent="    ", subsequent_indent="    ",
                            break_on_hyphens=False)
    return (
        '"""Every op of ember._core as ember.<name>. _ops.py fills its namespace from a list of '
        "names,\nwhich a type checker cannot follow: this stub names the same ops (written by\n"
        '`nox -s stubs`, tools/gen_stubs.py)."""\n\n'
        "# One import, in _NAMES's order, of every name re-exported by `as`.\n"
        "# ruff: noqa: I001\n\n"
        f"from ember._core import (\n{imports})\n\n__all__ = [\n{wrapped},\n]\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when stale")
    args = parser.parse_args()
    ops = unary_ops()
    stale = []
    wanted = {PACKAGE / "_core.pyi": core_pyi(ops), PACKAGE / "_ops.pyi": ops_pyi(ops)}
    for path, text in wanted.items():
        if path.read_text() == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        print(f"stale stubs: {names}; run `nox -s stubs` to write them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
