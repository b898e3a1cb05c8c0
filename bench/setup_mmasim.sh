#!/usr/bin/env bash
# Make the benchmark-only environment with mmasim (MMA-Sim, PyPI `mmasim` 2.1.1), the simulator
# the benchmarks compare against. mmasim needs torch; neither is ever a dependency of mmaformal,
# so they live in their own venv, apart from the project's environment.
#
#   bash bench/setup_mmasim.sh            # venv at /work/benchenv (or $MMASIM_VENV)
#   $MMASIM_VENV/bin/python bench/mmasim_adapter.py -n 1048576
#
# Idempotent: an existing venv with the pinned versions is left as it is.
# torch is pinned to the CPU build 2.13.0 (pip resolves the local +cpu wheel where the machine
# has one; elsewhere point pip at PyTorch's CPU wheel index, e.g. with PIP_EXTRA_INDEX_URL).
# Do not let pip pick another torch: the default CUDA builds pull gigabytes of CUDA packages.
# The first `import mmasim` compiles a small C++ FMA kernel with torch.utils.cpp_extension
# (needs g++; cached under ~/.cache/torch_extensions); this script triggers it once.
set -euo pipefail

VENV="${MMASIM_VENV:-/work/benchenv}"
TORCH_VERSION="2.13.0"
MMASIM_VERSION="2.1.1"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
PIP="$VENV/bin/pip"

have() {  # have PACKAGE VERSION-PREFIX
    "$VENV/bin/python" - "$1" "$2" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version(sys.argv[1]).startswith(sys.argv[2]) else 1)
EOF
}

if ! have torch "$TORCH_VERSION"; then
    "$PIP" install "torch==$TORCH_VERSION"
fi
case "$("$VENV/bin/python" -c 'import torch; print(torch.__version__)')" in
    *+cpu*) ;;
    *) echo "warning: torch in $VENV is not a +cpu build (make a CPU wheel available to pip)" >&2 ;;
esac

if ! have mmasim "$MMASIM_VERSION" || ! have numpy "" || ! have ml_dtypes ""; then
    # torch is already satisfied, so this does not touch it
    "$PIP" install "mmasim==$MMASIM_VERSION" numpy ml-dtypes
fi

"$VENV/bin/python" - <<'EOF'
import torch, numpy, ml_dtypes
import mmasim.nv_ptx, mmasim.amd  # compiles mmasim's FMA kernel on first import
from importlib.metadata import version
op = mmasim.nv_ptx.MMA("Hopper", "m16n8k16.f32.f16.f16.f32")
d = op.dpa(torch.ones(1, 16, dtype=torch.float16), torch.ones(1, 16, dtype=torch.float16),
           torch.zeros(1, dtype=torch.float32))
assert d.item() == 16.0, d
print(f"mmasim {version('mmasim')} OK (torch {torch.__version__}, numpy {numpy.__version__}, "
      f"ml_dtypes {ml_dtypes.__version__})")
EOF
