"""The distributed family: its cases, and PyTorch's data-parallel epoch (ddp_epoch's reference)
run for real as one process on 127.0.0.1 (skipped without PyTorch or scikit-learn)."""

import json

import pytest

from families import distributed


def test_cases_on_the_cpu_only():
    ops = sorted({c.op for c in distributed.cases("cpu")})
    assert ops == ["all_reduce", "ddp_epoch"]
    assert {c.params["processes"] for c in distributed.cases("cpu") if c.op == "ddp_epoch"} == \
        {1, 2}
    compiled = [c for c in distributed.cases("cpu") if c.params.get("step") == "compiled"]
    assert {c.params["processes"] for c in compiled} == {1, 2}
    assert distributed.cases("cuda") == []


def test_the_torch_epoch_worker_trains_and_times_its_epochs():
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    out = distributed.launch([str(distributed.HERE), "torch-epoch", "2", "64"], 1, timeout=300)
    seconds = json.loads(out)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)
