"""plot.py's plots against the batch size: only a case measured at three or more batch sizes, only
its latest run, one PNG each."""

import plot


def row(timestamp, params, value, case="cnn_peak_memory"):
    return {"timestamp": timestamp, "device": "cpu", "benchmark": "training", "case": case,
            "params": params, "metric": "peak_bytes", "unit": "B", "better": "lower",
            "value": value, "reference": "torch", "reference_value": value * 2}


ROWS = ([row("2026-12-01T10:00:00+00:00", f"batch={b} via=python", 1.0 * b) for b in (8, 16, 32)]
        + [row("2026-12-02T10:00:00+00:00", f"batch={b} via=python", 2.0 * b) for b in (8, 16, 32)]
        + [row("2026-12-02T10:00:00+00:00", f"batch={b} via=python", 1.0, "cnn_eager_step")
           for b in (32, 256)])


def test_a_sweep_is_the_latest_run_of_a_case_at_three_batch_sizes_or_more():
    found = plot.sweeps(ROWS)
    assert list(found) == [("cpu", "training", "cnn_peak_memory", "peak_bytes")]
    assert sorted(r["value"] for r in next(iter(found.values()))) == [16.0, 32.0, 64.0]


def test_each_sweep_is_one_png(tmp_path):
    written = plot.plot_sweeps(ROWS, tmp_path)
    assert [p.name for p in written] == ["cpu_training_cnn_peak_memory_peak_bytes_by_batch.png"]
    assert written[0].stat().st_size > 0
