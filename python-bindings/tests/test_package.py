"""The `ember` package loads its compiled module and reports what it was built from, and carries
the shared C++ libraries that module links (a self-contained wheel)."""

import importlib
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import ember

REPO = Path(__file__).resolve().parents[2]


def read_version(package: str) -> str:
    return (REPO / package / "VERSION").read_text().strip()


def test_version_comes_from_the_version_file():
    assert ember.__version__ == read_version("python-bindings")


def test_versions_name_the_three_packages_of_this_tree():
    assert ember.versions() == {
        "bindings": read_version("python-bindings"),
        "autodiff": read_version("autodiff-engine"),
        "core": read_version("core-runtime"),
    }


def test_cuda_queries_agree_with_each_other():
    count = ember.cuda_device_count()
    assert isinstance(count, int) and count >= 0
    assert ember.cuda_is_available() == (count > 0)
    if not ember.cuda_compiled():
        assert count == 0


# ---------------------------------------------------------------- the self-contained wheel

PACKAGE = Path(ember.__file__).parent
MODULE = Path(importlib.import_module("ember._core").__file__)
DT_NEEDED, DT_SONAME, DT_RUNPATH = 1, 14, 29
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="ELF files and $ORIGIN are Linux's")


def dynamic_strings(path: Path) -> dict[int, list[str]]:
    """The string entries (DT_NEEDED, DT_SONAME, DT_RUNPATH) of an ELF64 little-endian file's
    dynamic section, found through its section headers: tag -> values."""
    data = path.read_bytes()
    assert data[:6] == b"\x7fELF\x02\x01", f"{path} is not a little-endian ELF64 file"
    (section_table,) = struct.unpack_from("<Q", data, 0x28)  # e_shoff
    entry_size, count = struct.unpack_from("<HH", data, 0x3A)  # e_shentsize, e_shnum
    # Each header: name, type, flags, addr, offset, size, link, info, addralign, entsize.
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, section_table + i * entry_size)
                for i in range(count)]
    strings: dict[int, list[str]] = {}
    for _, kind, _, _, offset, size, link, *_ in sections:
        if kind != 6:  # SHT_DYNAMIC; its link is the string table its values index
            continue
        table = sections[link][4]
        for at in range(offset, offset + size, 16):
            tag, value = struct.unpack_from("<qQ", data, at)
            if tag in (DT_NEEDED, DT_SONAME, DT_RUNPATH):
                start = table + value
                strings.setdefault(tag, []).append(data[start:data.index(b"\0", start)].decode())
    return strings


def runpath(path: Path) -> list[str]:
    entries = dynamic_strings(path).get(DT_RUNPATH, [])
    return entries[0].split(":") if entries else []


def ember_libraries(path: Path) -> list[str]:
    """The Ember shared libraries an ELF file needs (none when they were linked statically)."""
    return [n for n in dynamic_strings(path).get(DT_NEEDED, []) if n.startswith("libember_")]


def holds_ember_libraries(folder: str) -> bool:
    return not folder.startswith("$ORIGIN") and any(Path(folder).glob("libember_*"))


@linux_only
def test_the_module_finds_the_bundled_libraries_beside_it_through_origin():
    needed = ember_libraries(MODULE)
    bundled = sorted(p.name for p in PACKAGE.glob("libember_*"))
    assert bundled == sorted(needed)  # static C++ packages: nothing needed, nothing bundled
    if not needed:
        return
    folders = runpath(MODULE)
    assert "$ORIGIN" in folders, f"{MODULE.name} RUNPATH {folders}"
    # Nothing points back at the C++ prefix the wheel was built against, from the module or from
    # the bundled libraries (which keep only folders of other libraries, such as their BLAS).
    for binary in [MODULE, *(PACKAGE / name for name in bundled)]:
        assert not [f for f in runpath(binary) if holds_ember_libraries(f)], binary
    for name in bundled:
        library = PACKAGE / name
        assert library.is_file() and not library.is_symlink()
        assert dynamic_strings(library)[DT_SONAME] == [name]
        for dependency in ember_libraries(library):
            assert (PACKAGE / dependency).is_file() and "$ORIGIN" in runpath(library)


@linux_only
def test_a_copy_of_the_package_runs_with_only_its_own_libraries(tmp_path):
    """The package copied elsewhere, LD_LIBRARY_PATH cleared: the module loads the libraries
    beside it (read from the process's memory map), never the C++ prefix's."""
    copy = tmp_path / "ember"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    program = (
        "import ember\n"
        "print(ember.__file__)\n"
        "print((ember.tensor([1.0, 2.0]) * 3).sum().item())\n"
        "for line in open('/proc/self/maps'):\n"
        "    if 'libember_' in line:\n"
        "        print(line.split()[-1])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    env["PYTHONPATH"] = str(tmp_path)
    run = subprocess.run([sys.executable, "-c", program], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    module_file, total, *mapped = run.stdout.split()
    assert Path(module_file).parent == copy
    assert float(total) == 9.0
    assert {Path(m).parent for m in mapped} <= {copy}
    assert sorted({Path(m).name for m in mapped}) == sorted(ember_libraries(copy / MODULE.name))
