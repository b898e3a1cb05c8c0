"""Layout self-check of every runnable instruction on a real GPU (pytest -m gpu).

Skipped where there is no CuPy or no GPU; the forms are those of the GPU's architecture (the
named sm90 ones only on an sm90 device). Results of the recorded device runs are in
mmaformal/hw/SASS.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from mmaformal.hw import check, forms, runner

pytestmark = pytest.mark.gpu

_OK, _WHY = runner.available()
_ARCH = runner.device_arch() if _OK else "sm90"
needs_gpu = pytest.mark.skipif(not _OK, reason=f"no GPU: {_WHY}")
needs_sm90 = pytest.mark.skipif(_ARCH != "sm90", reason=f"not an sm90 GPU ({_ARCH})")


@needs_gpu
@pytest.mark.parametrize("name", forms.instructions((8, 256), _ARCH))
def test_layout_selfcheck(name):
    ok, msg = check.layout_selfcheck(name)
    assert ok, msg


@needs_gpu
@needs_sm90
@pytest.mark.parametrize("name", ["sm90/mma.m16n8k16.f32.f16.f16.f32",
                                  "sm90/mma.m16n8k32.f32.e4m3.e4m3.f32",
                                  "sm90/mma.m16n8k16.f64.f64.f64.f64",
                                  "sm90/wgmma.m64n8k16.f32.f16.f16",
                                  "sm90/wgmma.m64n8k32.f16.e5m2.e4m3"])
def test_one_hot_probe(name):
    p = check.layout_probe(name)
    assert p["consistent"], p["message"]


@needs_gpu
@needs_sm90
def test_raw_bits_batch_shapes():
    name = "sm90/wgmma.m64n24k16.f32.bf16.bf16"
    rng = np.random.default_rng(0)
    A = rng.integers(-4, 5, size=(2, 3, 64, 16))
    B = rng.integers(-4, 5, size=(2, 3, 16, 24))
    C = rng.integers(-8, 9, size=(2, 3, 64, 24))
    d = runner.run(name, check.encode_ints(A, "bf16"), check.encode_ints(B, "bf16"),
                   check.encode_ints(C, "f32"), chunk_bytes=1 << 16)
    got, ok = check.decode_ints(d, "f32")
    assert d.dtype == np.uint32 and d.shape == (2, 3, 64, 24)
    assert ok.all() and (got == A @ B + C).all()


@needs_gpu
@needs_sm90
@pytest.mark.parametrize("name", __import__("mmaformal.hw.batch", fromlist=["x"]).PROBE_FORMS)
def test_wgmma_sp_metadata_probe_and_selfcheck(name):
    """Sparse wgmma: the metadata map recovered from the silicon is the declared one, and the
    exact per-row self-check passes with it (sp-sel 0; f16/bf16/tf32 also sp-sel 1)."""
    sels = (0, 1) if forms.spec(name).atype in ("f16", "bf16", "tf32") else (0,)
    for sel in sels:
        p = check.meta_probe(name, sel)
        assert p["consistent"] and p["agrees"], p["message"]
        ok, msg = check.layout_selfcheck(name, sel=sel)
        assert ok, msg
