"""DistributedDataParallel inside ember.compile, across real processes on 127.0.0.1
(distributed_worker.py's ddp_compiled scenario, test_distributed.py's launcher): the compiled
step traces once and replays, its all-reduces are graph nodes (explain() lists the buckets), and
it trains as eager DDP does, bit for bit, and as one process with the whole batch does."""

import numpy as np
import pytest
from test_distributed import launch, single_process_reference

import ember
import ember.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_gloo_available(),
                                reason="this build has no gloo backend (libgloo-dev missing)")


def run(tmp_path, name, env):
    folder = tmp_path / name
    folder.mkdir()
    got = launch("ddp_compiled", folder, 2, env=env)
    for r in range(2):
        assert "error" not in got[r], got[r]
    return got


@pytest.mark.parametrize("accumulate", [False, True], ids=["plain", "no_sync"])
def test_compiled_ddp_equals_eager_ddp_and_one_process(tmp_path, accumulate):
    want, unused_none = single_process_reference(accumulate)
    env = {"EMBER_TEST_ACCUMULATE": str(int(accumulate))}
    compiled = run(tmp_path, "compiled", env)
    eager = run(tmp_path, "eager", dict(env, EMBER_TEST_EAGER="1"))
    for r in range(2):
        got = compiled[r]
        # 10 steps: the first traces, the momentum buffers it made trace once more, then
        # replays (no trace per step).
        assert (int(got["traces"]), int(got["replays"])) == (2, 8)
        text = str(got["explain"])
        buckets = int(got["buckets"])
        assert buckets >= 3  # small caps: several buckets, each a start/wait pair
        assert "== data parallel ==" in text, text
        assert text.count("all_reduce_start at node") == buckets, text
        assert text.count("all_reduce_wait at node") == buckets, text
        for name, value in want.items():
            np.testing.assert_array_equal(got[name], eager[r][name], err_msg=name)
            np.testing.assert_allclose(got[name], value, rtol=0, atol=1e-6, err_msg=name)
        # The unused head gets no gradient on any rank: .grad stays none, as in one process.
        assert bool(got["unused_grad_is_none"]) and unused_none
    for name in want:  # the two ranks agree exactly
        np.testing.assert_array_equal(compiled[0][name], compiled[1][name])


def test_a_parameter_with_a_gradient_on_one_rank_only_is_averaged_on_both(tmp_path):
    # The unused head joins the loss on rank 1 alone: rank 0 sends zeros for it, and both ranks
    # get the average (half rank 1's gradient), as eager DDP gives.
    env = {"EMBER_TEST_PARTIAL": "1"}
    compiled = run(tmp_path, "compiled", env)
    eager = run(tmp_path, "eager", dict(env, EMBER_TEST_EAGER="1"))
    for r in range(2):
        assert not bool(compiled[r]["unused_grad_is_none"])
        assert (int(compiled[r]["traces"]), int(compiled[r]["replays"])) == (2, 8)
        for name in eager[r]:  # every parameter and buffer, and unused_grad_is_none
            np.testing.assert_array_equal(compiled[r][name], eager[r][name], err_msg=name)
    np.testing.assert_array_equal(compiled[0]["unused.weight"], compiled[1]["unused.weight"])
    # The head did train: SGD moved it away from where both ranks started.
    start = __import__("distributed_worker").make_model(ember.float64).unused.weight
    start = start.detach().numpy()
    assert np.abs(compiled[0]["unused.weight"] - start).max() > 1e-4
