"""Ember through its Python bindings (`import ember`), timed inside run.py beside the references.

EmberPython has the interface of harness.references' objects (`xp`, `device`, `uniform`,
`randint`, `sync`), so a family writes the Python side of a case as it writes a reference:
`r.xp` is the ember module. What `import ember` finds is whatever the interpreter finds (the
installed wheel, or PYTHONPATH); build it from the checkout being measured, since the CSV's
commit column names the checkout, not the package.

Ember's ops from Python take no out=: each call's result comes from Ember's caching allocator,
which hands back the block the previous call freed, as in ember_bench."""


class EmberPython:
    name = "ember"

    def __init__(self, ember, device: str):
        self.xp, self.device = ember, device
        ember.manual_seed(0)

    def uniform(self, *shape):
        return self.xp.rand(*shape, device=self.device) * 2 - 1

    def randint(self, high, *shape):
        return self.xp.randint(0, high, shape, device=self.device)

    def sync(self):
        if self.device == "cuda":
            self.xp.synchronize(self.device)


def load(device: str) -> tuple[EmberPython | None, str]:
    """(Ember's Python side on device, '') or (None, why it cannot run here)."""
    try:
        import ember
    except ImportError as e:
        return None, (f"the ember package is not importable ({e}); install python-bindings' "
                      "wheel or put a built package on PYTHONPATH")
    if device == "cuda" and not ember.cuda.is_available():
        return None, (f"the ember package at {ember.__file__} sees no GPU (built without "
                      "CUDA?)")
    return EmberPython(ember, device), ""
