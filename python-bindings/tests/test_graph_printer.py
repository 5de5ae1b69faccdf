"""The printed graph of a model as a student reads it: parameters and buffers under their module
names, one comment per gradient a rule returns, the final gradients marked, empty attributes
left out (checked against golden files); the DOT export parsed back; rendering by extension;
the graph after backward.

Golden files: tests/golden/*.txt. After a deliberate change to the printer, rewrite them with
EMBER_UPDATE_GOLDEN=1 pytest tests/test_graph_printer.py and read the diff."""

import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

import ember
from ember import nn

GOLDEN = Path(__file__).with_name("golden")


def small_cnn_loss():
    """conv -> batch norm -> ReLU -> linear -> cross-entropy, on a fixed batch."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                          nn.Linear(8, 3))
    x = ember.randn(2, 1, 4, 4)
    y = ember.tensor([0, 2])
    return model, nn.functional.cross_entropy(model(x), y)


def assert_golden(name, text):
    path = GOLDEN / name
    if os.environ.get("EMBER_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"the printed graph differs from {path}"


def test_a_models_graph_matches_its_golden_file():
    _, loss = small_cnn_loss()
    assert_golden("small_cnn_graph.txt", str(loss.graph()))


def test_an_mlp_graph_matches_its_golden_file():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    loss = model(ember.randn(5, 3)).square().mean()
    assert_golden("mlp_graph.txt", str(loss.graph()))


def test_parameters_and_buffers_are_listed_by_name():
    model, loss = small_cnn_loss()
    text = str(loss.graph())
    header = [line for line in text.splitlines() if not line.startswith(("%", "return"))]
    names = [line.split("  ")[1] for line in header if "  " in line]
    # Every parameter, and the buffers batch norm reads (not its num_batches_tracked).
    want = [n for n, _ in model.named_parameters()] + ["1.running_mean", "1.running_var"]
    assert sorted(names) == sorted(want), text
    assert "param %1:f32[2,1,3,3]  0.weight" in text
    assert re.search(r"^buffer %\d+:f32\[2\]  1\.running_mean$", text, re.MULTILINE), text
    assert "padding_mode" not in text and "=," not in text and "=}" not in text


def test_each_gradient_is_marked_once():
    model, loss = small_cnn_loss()
    text = str(loss.graph())
    comments = re.findall(r"    # (.*)$", text, re.MULTILINE)
    assert len(comments) == len(set(comments)), text  # no comment repeated on two lines
    parts = [part for c in comments for part in re.split(r"; | via \w+", c)]
    for name, _ in model.named_parameters():
        assert parts.count(f"grad of {name}") == 1, (name, text)
    assert "grad of 4.weight via linear" in comments, text
    # batch norm's fused backward makes three gradients on one line, said once each
    assert "d/d %10; grad of 1.weight; grad of 1.bias via batch_norm" in comments, text


def test_names_follow_nesting_moves_and_reassignment():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
            self.head = nn.Linear(8, 1)

        def forward(self, x):
            return self.head(self.features(x).flatten(1))

    net = Net().double()  # to() makes new parameters: they are named too
    assert net.features[0].weight._name == "features.0.weight"
    assert net.features[1].running_var._name == "features.1.running_var"
    net.head.bias = nn.Parameter(ember.zeros(1, dtype=ember.float64))
    assert net.head.bias._name == "bias"  # named where it was registered
    net.head = nn.Linear(8, 1).double()
    assert net.head.weight._name == "head.weight"
    assert ember.ones(2)._name == ""  # a tensor no module registered has no name


def dot_statements(dot):
    """A small parser for the DOT the printer writes: (node id -> attributes) and edges
    (from, to, attributes), attribute values unescaped."""
    assert dot.startswith("digraph ember {\n") and dot.endswith("}\n"), dot[:80]
    value = r'"((?:[^"\\]|\\.)*)"|([\w.#-]+)'
    nodes, edges = {}, []
    for line in dot.splitlines()[1:-1]:
        if re.fullmatch(r"\s+\w+=\w+;", line):  # a graph attribute (rankdir=TB)
            continue
        m = re.fullmatch(r"\s+(\w+)(?: -> (\w+))?(?: \[(.*)\])?;", line)
        assert m, f"not a statement: {line!r}"
        attrs = {k: (q if q or not b else b).replace('\\"', '"').replace("\\\\", "\\")
                 for k, q, b in re.findall(rf"(\w+)=(?:{value})", m[3] or "")}
        if m[2]:
            edges.append((m[1], m[2], attrs))
        elif m[1] != "node":  # node [...]: the defaults
            assert m[1] not in nodes, f"{m[1]} declared twice"
            nodes[m[1]] = attrs
    return nodes, edges


def test_dot_reads_back_to_the_printed_graph():
    _, loss = small_cnn_loss()
    text, dot = str(loss.graph()), loss.graph().to_dot()
    nodes, edges = dot_statements(dot)
    for a, b, _ in edges:
        assert a in nodes and b in nodes, (a, b)
    # The ellipses are the header lines; the boxes, in order, the node lines.
    lines = text.splitlines()
    headers = [line for line in lines if not line.startswith(("%", "return"))]
    node_lines = [line for line in lines if line.startswith("%")]
    assert sorted(a["label"] for k, a in nodes.items() if k.startswith("v")) == sorted(headers)
    boxes = [nodes[f"n{k}"] for k in range(len(node_lines))]
    into = {}
    for a, b, attrs in edges:
        into.setdefault(b, Counter())[attrs.get("label", "")] += 1
    for k, (line, box) in enumerate(zip(node_lines, boxes)):
        m = re.fullmatch(r"(.+?) = (\w+)\(([^)]*)\)( \{.*?\})?(?:    # (.*))?", line)
        outputs, op, inputs, attrs, comment = m.groups()
        label = box["label"].split("\\n")
        assert label[0] == op, (line, label)
        assert (attrs or "").strip() in ("", label[1]), (line, label)
        assert [part for part in label if part.startswith("%")] == outputs.split(", ")
        assert (label[-1] == f"# {comment}") if comment else not label[-1].startswith("#")
        want = Counter(i.strip() for i in inputs.split(",") if i.strip())
        assert into.get(f"n{k}", Counter()) == want, (line, into.get(f"n{k}"))


def test_the_graph_prints_after_backward():
    _, loss = small_cnn_loss()
    before, dot = str(loss.graph()), loss.graph().to_dot()
    loss.backward()
    assert str(loss.graph()) == before
    assert loss.graph().to_dot() == dot
    with pytest.raises(ember.ValueError, match="retain_graph"):
        loss.backward()  # a second backward is still an error, and says why


MAGIC = {"svg": b"<svg", "png": b"\x89PNG", "pdf": b"%PDF"}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed "
                    "(ci/install-system-deps.sh installs it)")
@pytest.mark.parametrize("suffix", sorted(MAGIC))
def test_render_writes_the_format_of_the_extension(tmp_path, suffix):
    _, loss = small_cnn_loss()
    path = tmp_path / f"graph.{suffix}"
    assert loss.graph().render(path) == str(path)
    assert MAGIC[suffix] in path.read_bytes()[:400]
    upper = tmp_path / f"graph.{suffix.upper()}"
    loss.graph().render(upper, format=suffix)
    assert MAGIC[suffix] in upper.read_bytes()[:400]


def test_render_refuses_what_it_cannot_write(tmp_path, monkeypatch):
    _, loss = small_cnn_loss()
    graph = loss.graph()
    with pytest.raises(ember.ValueError, match=r"format='svg' but the file name .*png"):
        graph.render(tmp_path / "g.png", format="svg")
    for name in ("g.jpg", "g", "g.svg.txt"):
        with pytest.raises(ember.ValueError, match=r"\.svg, \.png, \.pdf"):
            graph.render(tmp_path / name)
    monkeypatch.setattr(shutil, "which", lambda _: None)
    with pytest.raises(ember.NotSupportedError, match="graphviz"):
        graph.render(tmp_path / "g.svg")
    assert list(tmp_path.iterdir()) == []
