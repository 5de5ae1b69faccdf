"""Compiled mode (ember.compile) against Ember's eager mode, PyTorch eager and torch.compile, in
one process, on the digits CNN step of the training family (its network, loss and SGD).

  cnn_step            one step at batch 32 and 256: Ember compiled against PyTorch eager, and
                      against torch.compile where PyTorch's compiler runs here (a C++ compiler
                      and Triton's CPU path: otherwise the case is skipped, saying why)
  cnn_step_graphed    CUDA only: one step at batch 32 and 256, Ember compiled (replayed as one
                      CUDA graph) against PyTorch's whole-step CUDA-graph capture
                      (torch.cuda.graph, as its documentation captures a training step: a static
                      input copied in, then one replay) and torch.compile(mode="reduce-overhead")
  cnn_step_vs_eager   one step at batch 32 and 256, Ember compiled against Ember eager (the
                      reference column says "ember-eager"), measured in turn
  cnn_first_call      the first call of a compiled step at batch 32 (trace: one eager step
                      recording every op, then the passes and the memory plan), against
                      torch.compile's first call; one sample per round (each needs a fresh step)
  cnn_peak_memory     the most bytes in use during one step at batch 32 and 256 above those in
                      use before the model was built: Ember compiled (the arena included) and
                      Ember eager, each against PyTorch eager (training.torch_peak: on the CPU its
                      profiler's allocation records, a lower bound)
  mlp_budget          a deep MLP (32 linear+ReLU layers of 1024, batch 256, SGD) compiled under
                      a shrinking memory budget (fractions of the activation memory of the plan
                      without one): the planned arena (rematerialisation's effect) and the step
                      time, each against the unbudgeted compiled step ("no-budget")
"""

import gc
import re
import sys
import time
from dataclasses import dataclass

from families.training import (
    LR,
    MOMENTUM,
    WEIGHT_DECAY,
    ember_step_peak,
    images,
    peak_rows,
    small_cnn,
    torch_peak,
)
from harness.case import (
    Context,
    KernelCase,
    Measurement,
    PythonCase,
    Skipped,
    over_rounds,
    python_side,
    torch_reference,
)
from harness.timer import TimerOptions, time_calls

STEP_BATCHES = (32, 256)
MLP_LAYERS, MLP_WIDTH, MLP_BATCH = 32, 1024, 256
BUDGET_FRACTIONS = (1.0, 0.75, 0.5, 0.33, 0.25)


def trainer(r, compiled=False, torch_compile=False, memory_budget=None):
    """The model and its step on a batch (x, labels): eager, ember.compile'd, or torch.compile'd.
    """
    xp = r.xp
    xp.manual_seed(0)
    model = small_cnn(xp.nn).to(r.device)
    optimizer = xp.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM,
                             weight_decay=WEIGHT_DECAY)
    loss_fn = xp.nn.CrossEntropyLoss()

    def step(x, labels):
        optimizer.zero_grad()
        loss = loss_fn(model(x), labels)
        loss.backward()
        optimizer.step()
        return loss

    if compiled:
        step = xp.compile(step, memory_budget=memory_budget)
    if torch_compile:
        step = xp.compile(step)
    return model, optimizer, step


def needs_compile(r):
    if not hasattr(r.xp, "compile"):
        raise Skipped("this ember has no compile()")


def torch_compile_works(torch) -> str:
    """'' when torch.compile runs a small step here, else why not."""
    try:
        f = torch.compile(lambda a: (a * 2).sum())
        f(torch.ones(4))
    except Exception as e:  # noqa: BLE001 (any failure of PyTorch's compiler stack)
        return f"torch.compile does not run here: {type(e).__name__}: {str(e)[:120]}"
    return ""


def stepper(compiled, torch_compile=False):
    def build(r, p):
        if compiled and r.name == "ember":
            needs_compile(r)
        step = trainer(r, compiled=compiled and r.name == "ember",
                       torch_compile=torch_compile and r.name == "torch")[2]
        x, labels = images(r, p["batch"])
        for _ in range(3):  # trace (or torch.compile) and warm up before the clock
            step(x, labels)
        if hasattr(step, "explain") and str(r.device).startswith("cuda"):
            # Whether the replay runs as one CUDA graph, and if not why: into the run's log.
            replay = step.explain().split("== replay ==")[-1].split("==")[0].strip()
            print(f"compiled step on {r.device}, batch {p['batch']}: {replay}", file=sys.stderr)
        return lambda: step(x, labels)
    return build


@dataclass
class VersusEagerCase(PythonCase):
    """Ember compiled against Ember eager, timed in turn, as one row."""

    def measure(self, ctx: Context) -> list[Measurement]:
        r = python_side(ctx)
        needs_compile(r)
        compiled, eager = stepper(True)(r, self.params), stepper(False)(r, self.params)
        ours, theirs = [], []
        for _ in range(ctx.rounds):
            ours.append(time_calls(compiled, r.sync, ctx.timer))
            theirs.append(time_calls(eager, r.sync, ctx.timer))
        a, b = over_rounds(ours), over_rounds(theirs)
        return [Measurement("time", "ms", "lower", a.median_ms, a.spread, "ember-eager",
                            b.median_ms, b.spread)]


@dataclass
class FirstCallCase(PythonCase):
    """The first call of a compiled step, once per round on a fresh model and step."""

    def first_call_ms(self, r, torch_compile=False) -> float:
        gc.collect()
        if torch_compile:
            r.xp._dynamo.reset()
        step = trainer(r, compiled=r.name == "ember", torch_compile=torch_compile)[2]
        x, labels = images(r, self.params["batch"])
        r.sync()
        start = time.perf_counter()
        step(x, labels)
        r.sync()
        return (time.perf_counter() - start) * 1e3

    def measure(self, ctx: Context) -> list[Measurement]:
        r = python_side(ctx)
        needs_compile(r)
        torch = torch_reference(ctx)
        why = torch_compile_works(torch.xp) if torch is not None else "no PyTorch"
        ours = sorted(self.first_call_ms(r) for _ in range(ctx.rounds))
        theirs = sorted(self.first_call_ms(torch, True) for _ in range(ctx.rounds)) \
            if not why else None
        mid = len(ours) // 2
        return [Measurement("first_call", "ms", "lower", ours[mid], 0.0,
                            "torch.compile" if theirs else "",
                            theirs[mid] if theirs else None, 0.0 if theirs else None)]


def ember_peak(r, p, compiled) -> int:
    # Three calls first: a compiled step traces twice (the first call makes the optimizer's
    # state), and on CUDA its first replay runs outside the graph it then captures.
    return ember_step_peak(r, lambda: (*trainer(r, compiled=compiled), images(r, p["batch"])),
                           warmup=3)


@dataclass
class PeakMemoryCase(PythonCase):
    deterministic = True

    def measure(self, ctx: Context) -> list[Measurement]:
        compiled = self.params["ember"] == "compiled"
        if compiled:
            needs_compile(python_side(ctx))
        return peak_rows(ctx, lambda r: ember_peak(r, self.params, compiled),
                         lambda r: torch_peak(r, self.params))


def mlp_step(r, memory_budget):
    em = r.xp
    em.manual_seed(0)
    layers = []
    for _ in range(MLP_LAYERS):
        layers += [em.nn.Linear(MLP_WIDTH, MLP_WIDTH), em.nn.ReLU()]
    model = em.nn.Sequential(*layers).to(r.device)
    optimizer = em.optim.SGD(model.parameters(), lr=1e-3)

    def step(x):
        optimizer.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        optimizer.step()
        return loss

    return em.compile(step, memory_budget=memory_budget)


def arena_bytes(step) -> int:
    """The planned peak of the memory plan, as explain() reports it."""
    found = re.search(r"planned peak (?:[\d.]+ [KM]iB \()?(\d+) B\)? \(the arena\)",
                      step.explain())
    if found is None:
        raise Skipped("explain() reports no planned peak")
    return int(found.group(1))


def budgeted(r, x, budget):
    """The MLP step compiled under budget and called once; a budget it cannot meet is raised to
    the smallest the error names."""
    try:
        step = mlp_step(r, budget)
        step(x)
    except r.xp.ValueError as e:
        smallest = re.search(r"memory_budget >= (\d+)", str(e))
        if smallest is None:
            raise
        step = mlp_step(r, int(smallest.group(1)))
        step(x)
    return step


@dataclass
class BudgetCase(PythonCase):
    """The deep MLP compiled under a budget: its arena and step time against no budget."""

    def measure(self, ctx: Context) -> list[Measurement]:
        r = python_side(ctx)
        needs_compile(r)
        x = r.uniform(MLP_BATCH, MLP_WIDTH)
        free = mlp_step(r, None)
        free(x)
        full = arena_bytes(free)
        budget = int(full * self.params["fraction"])
        bound = budgeted(r, x, budget)
        arena = arena_bytes(bound)
        timer = TimerOptions(warmup=1, repeat=5, min_sample_ms=0.0)
        ours = over_rounds([time_calls(lambda: bound(x), r.sync, timer)
                            for _ in range(ctx.rounds)])
        theirs = over_rounds([time_calls(lambda: free(x), r.sync, timer)
                              for _ in range(ctx.rounds)])
        return [Measurement("arena_bytes", "B", "lower", float(arena), 0.0, "no-budget",
                            float(full), 0.0),
                Measurement("time", "ms", "lower", ours.median_ms, ours.spread, "no-budget",
                            theirs.median_ms, theirs.spread)]


def cases(device):
    out = []
    for b in STEP_BATCHES:
        out.append(KernelCase("cnn_step", {"batch": b, "ember": "compiled", "torch": "eager"},
                              torch=stepper(False), ember=stepper(True)).on_python())
        out.append(KernelCase("cnn_step", {"batch": b, "ember": "compiled", "torch": "compile"},
                              torch=torch_compiled_step, ember=stepper(True)).on_python())
        out.append(VersusEagerCase("cnn_step_vs_eager", {"batch": b, "via": "python"}))
        if device == "cuda":
            out.append(KernelCase("cnn_step_graphed", {"batch": b, "torch": "cuda_graph"},
                                  torch=torch_cuda_graph_step, ember=stepper(True)).on_python())
            out.append(KernelCase("cnn_step_graphed", {"batch": b, "torch": "reduce-overhead"},
                                  torch=torch_reduce_overhead_step,
                                  ember=stepper(True)).on_python())
    out.append(FirstCallCase("cnn_first_call", {"batch": 32, "via": "python"}))
    for b in STEP_BATCHES:
        for mode in ("compiled", "eager"):
            out.append(PeakMemoryCase("cnn_peak_memory", {"batch": b, "ember": mode,
                                                          "via": "python"}))
    for fraction in BUDGET_FRACTIONS:
        out.append(BudgetCase("mlp_budget", {"layers": MLP_LAYERS, "width": MLP_WIDTH,
                                             "batch": MLP_BATCH, "fraction": fraction,
                                             "via": "python"}))
    return out


def torch_compiled_step(r, p):
    why = torch_compile_works(r.xp)
    if why:
        raise Skipped(why)
    return stepper(False, torch_compile=True)(r, p)


def torch_reduce_overhead_step(r, p):
    """torch.compile(mode="reduce-overhead"): Inductor's kernels replayed through CUDA graphs."""
    torch = r.xp
    why = torch_compile_works(torch)
    if why:
        raise Skipped(why)
    torch._dynamo.reset()
    step = trainer(r)[2]
    x, labels = images(r, p["batch"])
    # One eager step first makes SGD's momentum buffers: made inside the graphed step they would
    # be outputs of its CUDA graph, which the next replay overwrites while SGD still holds them.
    step(x, labels)
    graphed = torch.compile(step, mode="reduce-overhead")

    def call():
        # Each call is a new training step: the outputs of the last replay may be overwritten.
        torch.compiler.cudagraph_mark_step_begin()
        return graphed(x, labels)

    for _ in range(3):
        call()
    return call


def torch_cuda_graph_step(r, p):
    """The whole step captured once with torch.cuda.graph and replayed: PyTorch's documented
    whole-network capture (warm-up on a side stream, gradients set to None before capture)."""
    torch = r.xp
    model, optimizer, _ = trainer(r)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, labels = images(r, p["batch"])
    static_x, static_labels = x.clone(), labels.clone()

    def body():
        loss = loss_fn(model(static_x), static_labels)
        loss.backward()
        optimizer.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        body()

    def call():
        static_x.copy_(x)
        static_labels.copy_(labels)
        graph.replay()
    return call
