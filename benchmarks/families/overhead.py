"""Per-call overhead of small ops from Python: Ember through its bindings against PyTorch.

Cases: `a + b` on 1-element tensors, `x.relu()` on one element, a Linear(16, 16) forward on
[1, 16]; each with and without tensors that require grad (so that recording is timed too). At
these sizes the time is the call path itself: argument parsing, dispatch, the output's
allocation, recording. Only through the bindings (via=python): ember_bench would time none of
that. The builders serve both libraries, whose APIs agree here. (The 2026-12-01 results of
`bindings_overhead.py`, benchmark `bindings` in microseconds, measured the same cases.)"""

from harness.case import KernelCase


def ones(r, *shape, grad=False):
    return r.xp.ones(*shape, device=r.device, requires_grad=grad)


def add(r, p):
    a, b = ones(r, p["n"], grad=bool(p["requires_grad"])), ones(r, p["n"])
    return lambda: a + b


def relu(r, p):
    x = ones(r, p["n"], grad=bool(p["requires_grad"]))
    return lambda: x.relu()


def linear_forward(r, p):
    grad = bool(p["requires_grad"])
    layer, x = r.xp.nn.Linear(p["in"], p["out"]).to(r.device), ones(r, p["batch"], p["in"],
                                                                    grad=grad)
    for weight in layer.parameters():
        weight.requires_grad_(grad)
    return lambda: layer(x)


def cases(device):
    out = []
    for grad in (0, 1):
        for op, fn, p in (("add", add, {"n": 1}), ("relu", relu, {"n": 1}),
                          ("linear_forward", linear_forward, {"in": 16, "out": 16, "batch": 1})):
            out.append(KernelCase(op, {**p, "requires_grad": grad}, torch=fn, ember=fn)
                       .on_python())
    return out
