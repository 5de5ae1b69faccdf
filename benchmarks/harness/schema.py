"""The one CSV schema every benchmark writes and compare.py / plot.py read (see README.md).

A row is one metric of one case on one device, with the run's description repeated on every row
so that any row can be read on its own. `ratio` is always Ember's value divided by the
reference's; `better` says which direction is good for the metric.
"""

import csv
import math
from pathlib import Path

# Column -> meaning. The order is the CSV's column order.
COLUMNS = {
    "timestamp": "UTC time the run started, ISO 8601",
    "commit": "git commit of the checkout, '-dirty' appended when tracked files were modified",
    "core_version": "core-runtime/VERSION",
    "numpy_version": "numpy.__version__, empty when not installed",
    "torch_version": "torch.__version__, empty when not installed",
    "cpu": "CPU model",
    "cores": "logical CPUs",
    "threads": "the thread count Ember and the references were held to (--threads), empty for "
               "the libraries' defaults",
    "settings": "the PyTorch settings the reference ran with, 'key=value' separated by spaces: on "
                "CUDA TF32 (matmul.tf32, cudnn.tf32) and cudnn.benchmark, on the CPU "
                "torch.threads; empty without torch",
    "gpu": "GPU name, empty without one",
    "driver": "NVIDIA driver version, empty without one",
    "device": "cpu or cuda: where Ember and the reference ran",
    "benchmark": "the family (elementwise, matmul, memory, ...)",
    "case": "the op or sequence measured",
    "params": "its sizes and options, 'key=value' separated by spaces; via=python: Ember called "
              "through its Python bindings",
    "metric": "time, bandwidth, throughput, peak_bytes, instructions, ...",
    "unit": "ms, GB/s, GFLOP/s, images/s, B, count",
    "better": "lower or higher: which direction is an improvement for this metric",
    "value": "Ember's figure (for timings the median over the repeats)",
    "spread": "Ember's interquartile range over the repeats divided by the median; 0 for counts",
    "reference": "what Ember is compared with (numpy, numpy-im2col, torch, limit), empty for "
                 "none",
    "reference_value": "the reference's figure, measured in the same run",
    "reference_spread": "the reference's spread, as spread",
    "ratio": "value / reference_value",
}
NUMERIC = ("value", "spread", "reference_value", "reference_spread", "ratio")
# Columns added after results were committed: files without them read them as empty.
ADDED_LATER = ("threads", "settings")
REQUIRED = ("device", "benchmark", "case", "metric", "better", "value")


class SchemaError(ValueError):
    """A CSV that does not follow the schema; the message names the file and line."""


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(COLUMNS), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: format_number(row.get(c)) for c in COLUMNS})


def format_number(v):
    """Counts exactly, measured figures to 6 significant digits, None as empty."""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else f"{v:.6g}"
    return "" if v is None else v


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return parse_csv(f, path)


def parse_csv(lines, path) -> list[dict]:
    """Rows with numeric columns as float (None where empty). Raises SchemaError naming `path`
    and the line of the first problem: a missing column, a wrong number of fields, a field that
    is not a number, an empty required field or a 'better' other than lower/higher."""
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        raise SchemaError(f"{path}:1: empty file, expected the header {','.join(COLUMNS)}")
    missing = [c for c in COLUMNS if c not in header and c not in ADDED_LATER]
    if missing:
        raise SchemaError(f"{path}:1: header lacks the column(s) {', '.join(missing)}")
    rows = []
    for fields in reader:
        line = reader.line_num
        if not fields:  # a blank line
            continue
        if len(fields) != len(header):
            raise SchemaError(f"{path}:{line}: {len(fields)} fields, the header has {len(header)}")
        row = dict.fromkeys(ADDED_LATER, "") | dict(zip(header, fields))
        for c in REQUIRED:
            if not row[c]:
                raise SchemaError(f"{path}:{line}: empty '{c}'")
        if row["better"] not in ("lower", "higher"):
            raise SchemaError(f"{path}:{line}: better is '{row['better']}', expected lower or "
                              "higher")
        for c in NUMERIC:
            row[c] = parse_number(row[c], path, line, c)
        rows.append(row)
    return rows


def parse_number(text: str, path, line: int, column: str):
    if text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise SchemaError(f"{path}:{line}: {column} is '{text}', not a number") from None
    if math.isnan(value):
        raise SchemaError(f"{path}:{line}: {column} is NaN")
    return value
