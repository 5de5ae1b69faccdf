"""The `ember` package loads its compiled module and reports what it was built from."""

from pathlib import Path

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
