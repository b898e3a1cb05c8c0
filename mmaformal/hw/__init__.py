"""hw: run MMA instructions on a real Hopper GPU (sm_90a), raw bits in and raw bits out.

Layer 5 front end (docs/design.md). Modules: :mod:`.kernels` (CUDA C++ / inline PTX generator and the
fragment layout tables), :mod:`.runner` (``available()``, ``run()``; CuPy imported
lazily), :mod:`.check` (``layout_selfcheck()``: the exact-integer self-check, and the one-hot
layout probe, beside the runner: it runs tiles through it),
:mod:`.sass` (cubin -> ``cuobjdump -sass`` mnemonics), :mod:`.selfcheck_all` (the batch
validation run on a device; results in SASS.md), :mod:`.campaigns` (the recorded campaigns of
counterexamples/hw, packed or loose: the one reader of the hardware evidence). The command line:
:mod:`.cli` (``mmaformal hw run|validate|record|wgmma-sp|selfcheck|sass|zero-probes``).

May import: numpy at import time; cupy only inside functions. Invariant: operands and results are
unsigned-integer bit patterns; nothing goes through host floats.
"""

from .check import layout_selfcheck
from .runner import HardwareUnavailable, available, instructions, run

__all__ = ["HardwareUnavailable", "available", "run", "layout_selfcheck", "instructions"]
