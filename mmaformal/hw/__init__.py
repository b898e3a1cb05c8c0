"""hw: run MMA instructions on a real NVIDIA GPU (sm_75 .. sm_120a), raw bits in and raw bits out.

Layer 5 front end (docs/design.md). Modules: :mod:`.forms` (which catalog instructions the
harness runs, and the compile target of each architecture: read from :mod:`mmaformal.isa`),
:mod:`.layouts` (the fragment / shared / tensor-memory layout tables), :mod:`.kernels` (the CUDA
C++ / inline PTX generator), :mod:`.sparse` (metadata words of mma.sp and wgmma.sp),
:mod:`.runner` (``available()``, ``run()``: the one run path; CuPy imported lazily),
:mod:`.check` (``layout_selfcheck()``: the exact-integer self-check, the one-hot layout probe and
the sparse wgmma metadata probe, beside the runner: they run tiles through it),
:mod:`.validate` (the one campaign path), :mod:`.record` (digest campaigns decided later),
:mod:`.batch` (the device batch), :mod:`.sass` (cubin -> ``cuobjdump -sass`` mnemonics),
:mod:`.selfcheck_all` (the batch self-check run on a device; results in SASS.md),
:mod:`.campaigns` (the recorded campaigns of counterexamples/hw, packed or loose: the one reader
of the hardware evidence). The command line: :mod:`.cli` (``mmaformal hw
run|validate|record|wgmma-sp|selfcheck|sass|zero-probes``).

May import: numpy at import time; cupy only inside functions. Invariant: operands and results are
unsigned-integer bit patterns; nothing goes through host floats.
"""

from .check import layout_selfcheck
from .forms import instructions
from .runner import HardwareUnavailable, available, run

__all__ = ["HardwareUnavailable", "available", "run", "layout_selfcheck", "instructions"]
