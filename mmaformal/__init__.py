"""mmaformal: formal, bit-exact models of GPU matrix-multiply-accumulate arithmetic.

Layers (each imports only those below it): bits, fp, mma, isa + theory, front ends (simulate,
explain, cli, ...). See docs/design.md. The package exposes the simulator as ``mmaformal.simulate``
(the function; the module is ``mmaformal.simulate`` too, so import its helpers with
``from mmaformal.simulate import ...``).
"""
from __future__ import annotations

__version__ = "0.1.0"

from .simulate import simulate  # noqa: E402  (numpy back-end; z3 is never imported here)

__all__ = ["simulate", "__version__"]
