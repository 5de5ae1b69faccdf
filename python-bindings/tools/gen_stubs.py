"""Writes the parts of ember's type stubs that follow from the op schemas (`nox -s stubs`), or with
--check says where they differ from what is written (tests/test_stubs.py runs that).

From core-runtime's include/ember/ops/unary.def and binary.def (one line per plain unary or binary
op: its name, its api column and its docstring) come, in src/ember/_core.pyi, each schema's block
of module functions (`name(input)`, `name(input, other)`) and block of Tensor methods
(`name(self)`, `name(self, other)`) between its markers (see Schema.begin; ops marked Own keep
their hand-written stubs, which take more arguments); and all of src/ember/_ops.pyi, whose names
are _ops.py's _NAMES list followed by the schemas'. The rest of _core.pyi is written by hand: its
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "core-runtime/include/ember/ops"
PACKAGE = ROOT / "python-bindings/src/ember"


@dataclass(frozen=True)
class Schema:
    """One op schema: its file, its macro's columns before `api`, and how its ops are called."""

    file: str  # in core-runtime/include/ember/ops
    macro: str
    columns: int  # the columns before api (name included)
    function: str  # the module function's parameters
    method: str  # the Tensor method's parameters
    names: str  # the compiled module's tuple of the schema's names

    def begin(self) -> str:
        how = "by `nox -s stubs`: edit that file, not this block"
        return f"# BEGIN generated from {self.file} {how}"

    def end(self) -> str:
        return f"# END generated from {self.file}"

    def ops(self) -> list[tuple[str, str, str]]:
        """(name, api, doc) of every line of the schema, in its order; a line may span two lines
        with a comment."""
        line = re.compile(
            rf"^{self.macro}\(\s*" + r"(\w+),\s*" * (self.columns + 1)
            + r'(?://[^\n]*)?\s*"((?:[^"\\]|\\.)*)"\s*\)',
            re.MULTILINE,
        )
        path = SCHEMAS / self.file
        text = path.read_text()
        ops = [(m[1], m[self.columns + 1], m[self.columns + 2]) for m in line.finditer(text)]
        if not ops:
            sys.exit(f"{path}: no {self.macro} lines found")
        return ops


UNARY = Schema("unary.def", "EMBER_UNARY_OP", 4, "input: Tensor", "self", "_unary_ops")
BINARY = Schema("binary.def", "EMBER_BINARY_OP", 4, "input: typing.Any, other: typing.Any",
                "self, other: typing.Any", "_binary_ops")
ALL = (UNARY, BINARY)


def stub(signature: str, doc: str, indent: str) -> str:
    """One function's stub as pybind11-stubgen writes it: the docstring on a line of its own."""
    quotes = f'{indent}    """\n'
    return f"{indent}def {signature} -> Tensor:\n{quotes}{indent}    {doc}\n{quotes}"


def core_blocks(schema: Schema) -> tuple[str, str]:
    """The Tensor methods' block and the module functions' block of _core.pyi for one schema."""
    plain = sorted((name, doc) for name, api, doc in schema.ops() if api == "Plain")
    methods = "".join(stub(f"{name}({schema.method})", doc, "    ") for name, doc in plain)
    functions = "".join(stub(f"{name}({schema.function})", doc, "") for name, doc in plain)
    functions += f"{schema.names}: tuple[str, ...]\n"
    begin, end = schema.begin(), schema.end()
    return (f"    {begin}\n{methods}    {end}\n", f"{begin}\n{functions}{end}\n")


def replace_block(text: str, schema: Schema, block: str, indent: str) -> str:
    """text with the schema's block marked at this indent (the Tensor class's, or the module's)
    replaced."""
    begin, end = indent + schema.begin(), indent + schema.end()
    marked = re.search(f"^{re.escape(begin)}\n.*?^{re.escape(end)}\n", text,
                       re.DOTALL | re.MULTILINE)
    if not marked:
        sys.exit(f"_core.pyi: no block between the lines '{begin}' and '{end}'")
    return text[:marked.start()] + block + text[marked.end():]


def core_pyi() -> str:
    text = (PACKAGE / "_core.pyi").read_text()
    for schema in ALL:
        methods, functions = core_blocks(schema)
        text = replace_block(replace_block(text, schema, methods, "    "), schema, functions, "")
    return text


def ops_names() -> list[str]:
    """ember._ops's names: _NAMES as _ops.py spells it, then the schemas' (as _ops.py adds them)."""
    source = (PACKAGE / "_ops.py").read_text()
    listed = re.search(r'_NAMES = """(.*?)"""', source, re.DOTALL)
    if not listed:
        sys.exit("_ops.py: no _NAMES = \"\"\"...\"\"\" list found")
    return listed[1].split() + [name for schema in ALL for name, _, _ in schema.ops()]


def ops_pyi() -> str:
    names = ops_names()
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
    stale = []
    wanted = {PACKAGE / "_core.pyi": core_pyi(), PACKAGE / "_ops.pyi": ops_pyi()}
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
