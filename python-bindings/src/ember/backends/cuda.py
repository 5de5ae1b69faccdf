"""ember.backends.cuda: ``matmul.allow_tf32`` lets float32 GEMMs on CUDA (matmul, linear, the
im2col convolutions) use TF32 tensor cores: about 8x faster on an H100/H200, with a 10-bit
mantissa in the products. Off by default, as in PyTorch; EMBER_ALLOW_TF32=1 in the environment
starts it on. float16/bfloat16 GEMMs always use tensor cores with float32 accumulation."""

from ember import _core


class _MatmulSettings:
    @property
    def allow_tf32(self):
        return _core._allow_tf32()

    @allow_tf32.setter
    def allow_tf32(self, on):
        if not isinstance(on, bool):
            raise _core.ValueError(
                f"ember.backends.cuda.matmul.allow_tf32: set it to True or False, not {on!r}")
        _core._set_allow_tf32(on)

    def __repr__(self):
        return f"matmul(allow_tf32={self.allow_tf32})"


matmul = _MatmulSettings()
