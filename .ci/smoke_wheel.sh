#!/usr/bin/env bash
# CI: the built wheel works outside the checkout (issue 17).
#
#   .ci/smoke_wheel.sh [WHEEL]
#
# Without WHEEL: builds the sdist and, from it, the wheel (python3 -m build), and also the wheel
# straight from the tree (python3 -m build --wheel), and checks that both wheels hold the same
# files. Then installs the wheel into a fresh virtual environment outside the checkout (no
# --system-site-packages: the editable install of the checkout cannot leak in) and runs every
# verb there from a directory outside the checkout, asserting its exit code and a key piece of
# its output: list, simulate, compare, explain, distinguish, prove, probes, infer (small
# family), emulate, accuracy, hw (exit 2 without a GPU), store check (the shipped records and
# their lemma lists; the wheel carries no lemma texts, hardware samples or campaign logs, and
# store recheck says so in one line), --version, --store (a missing store: exit 2), the replay
# of the shipped counterexamples, and that nothing was written into the installed package.
# Exit status: the number of failed checks (0: all passed).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/mmaformal-smoke.XXXXXX)
trap '[ -n "${SMOKE_KEEP:-}" ] || rm -rf "$WORK"' EXIT     # SMOKE_KEEP=1: keep it to look at
T0=$(date +%s%N)

WHEEL=${1:-}
if [ -z "$WHEEL" ]; then
    "$PY" -m build --version >/dev/null 2>&1 || "$PY" -m pip install -q build
    "$PY" -m build --outdir "$WORK/dist" "$REPO" >"$WORK/build.log" 2>&1 \
        || { tail -30 "$WORK/build.log"; exit 1; }
    "$PY" -m build --wheel --outdir "$WORK/direct" "$REPO" >>"$WORK/build.log" 2>&1 \
        || { tail -30 "$WORK/build.log"; exit 1; }
    WHEEL=$(ls "$WORK"/dist/*.whl)
    "$PY" - "$WHEEL" "$WORK"/direct/*.whl <<'EOF'
import sys, zipfile
a, b = (sorted(n for n in zipfile.ZipFile(p).namelist() if ".dist-info/" not in n) for p in sys.argv[1:])
assert a == b, f"wheel from sdist and wheel from tree differ: {sorted(set(a) ^ set(b))[:10]}"
print(f"build: sdist -> wheel and tree -> wheel hold the same {len(a)} files")
EOF
    rm -rf "$REPO/build"        # setuptools' scratch folder of the tree build
fi
WHEEL=$(cd "$(dirname "$WHEEL")" && pwd)/$(basename "$WHEEL")
echo "wheel: $WHEEL ($(du -k "$WHEEL" | cut -f1) KiB)"

"$PY" -m venv "$WORK/venv"
V="$WORK/venv/bin"
"$V/pip" install -q "$WHEEL" 2>&1 | grep -v "^WARNING: Location" || true
T1=$(date +%s%N)

# Outside the checkout, with nothing pointing back into it.
mkdir "$WORK/run"
cd "$WORK/run"
unset PYTHONPATH MMAFORMAL_STORE MMAFORMAL_THEORIES
export MMAFORMAL_CACHE="$WORK/cache" XDG_DATA_HOME="$WORK/xdg" HOME="$WORK/home"
mkdir -p "$HOME"
M="$V/mmaformal"
SITE=$("$V/python" -c "import mmaformal, os; print(os.path.dirname(mmaformal.__file__))")
case "$SITE" in "$WORK"/venv/*) ;; *) echo "FAIL: mmaformal imported from $SITE, not the venv"; exit 1;; esac
snapshot() { (cd "$SITE" && find . -path '*/__pycache__' -prune -o -type f -print | sort | xargs md5sum); }
snapshot >"$WORK/site.before"

FAILS=0
# check NAME RC PATTERN CMD...: CMD exits RC and its stdout+stderr match the regex PATTERN
check() {
    local name=$1 want=$2 pat=$3
    shift 3
    local t=$(date +%s%N) rc=0
    "$@" >"$WORK/out" 2>&1 || rc=$?
    local ms=$((($(date +%s%N) - t) / 1000000))
    if [ "$rc" -ne "$want" ]; then
        echo "FAIL $name: exit $rc, expected $want"; tail -5 "$WORK/out" | sed 's/^/     /'
        FAILS=$((FAILS + 1))
    elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$WORK/out"; then
        echo "FAIL $name: output lacks /$pat/"; tail -5 "$WORK/out" | sed 's/^/     /'
        FAILS=$((FAILS + 1))
    else
        printf 'ok   %-14s %3d.%02d s\n' "$name" $((ms / 1000)) $((ms % 1000 / 10))
    fi
}
py() { "$V/python" -c "$@"; }

H80=sm80.f16.f32@sm80/mma.m16n8k16.f32.f16.f16.f32
H90=sm90.f16.f32@sm90/mma.m16n8k16.f32.f16.f16.f32
F16=sm90/mma.m16n8k16.f32.f16.f16.f32

check version 0 '^z3 [0-9]' "$M" --version
check version 0 "^data: $SITE/_data$" "$M" --version
check list 0 'sm90\.f16\.f32 +corroborated' "$M" list
check list 0 'sm90/mma\.m16n8k16\.f32\.f16\.f16\.f32 +sm90\.f16\.f32 \[corroborated\]' "$M" list "$F16"
# simulate: a 16x16 tile of f16 1.0 times ones (K = 16) plus 0 is 16.0 = 0x41800000 in f32
py 'import numpy as np
np.save("a.npy", np.full((2, 16, 16), 0x3C00, np.uint16)); np.save("b.npy", np.full((2, 16, 8), 0x3C00, np.uint16))
np.save("c.npy", np.zeros((2, 16, 8), np.uint32))'
check simulate 0 '' "$M" simulate "$F16" --a a.npy --b b.npy --c c.npy --out d.npy
check simulate-d 0 '^ok$' py 'import numpy as np; d = np.load("d.npy"); assert d.dtype == np.uint32 and d.shape == (2, 16, 8) and (d == 0x41800000).all(), d; print("ok")'
# the README's compare: [Xie2025] Equation 10; Hopper's T-FDPA gives -0.75
check compare 0 "^$F16 +0xBF400000 +-0\.75 +sm90\.f16\.f32" "$M" compare --a=-8192,-0.5,-0.25,-0.125 --b=1024,1,1,1 --c=8388608
check explain 0 '^d = 0x41380000 \(f32: 11\.5\)' "$M" explain "$F16" --a 1,2 --b 3,4 --c 0.5
# storing verbs: the default store outside a checkout is $XDG_DATA_HOME/mmaformal
check distinguish 0 "saved: $XDG_DATA_HOME/mmaformal/counterexamples/distinguish/" "$M" distinguish "$H80" "$H90" --save
check distinguish 0 'status: distinguished' "$M" distinguish "$H80" "$H90" --raw
mkdir "$WORK/store"
check prove 0 "saved: $WORK/store/proofs/symmetry/sm80_mma\.m16n8k8\.f32\.f16\.f16\.f32\.json" \
    "$M" prove symmetry sm80/mma.m16n8k8.f32.f16.f16.f32 --save --store "$WORK/store"
check prove 0 'status: proved' "$M" prove symmetry sm80/mma.m16n8k8.f32.f16.f16.f32
check probes 0 'sm80/mma\.m16n8k8\.f32\.f16\.f16\.f32: [0-9]+ probes in probes' \
    "$M" probes sm80/mma.m16n8k8.f32.f16.f16.f32 --out probes
check probes-store 0 "probes in $WORK/store/probes/sm80_mma\.m16n8k8" \
    env MMAFORMAL_STORE="$WORK/store" "$M" probes sm80/mma.m16n8k8.f32.f16.f16.f32
check probes-run 0 '' "$M" simulate sm80/mma.m16n8k8.f32.f16.f16.f32 --a probes/precision/A.npy \
    --b probes/precision/B.npy --c probes/precision/C.npy --out probes/precision/D.npy
cat >small.toml <<'EOF'
[family]
id = "smoke-t"
description = "T-FDPA with a few F, L and output roundings (CI smoke)"
[family.domain]
F = "23..26"
L = [4, 8, 16]
rho = ["RZ-FP32", "RNE-FP32"]
zero_exp = ["excluded"]
nan = ["nvidia"]
overflow = ["inf"]
zero_sign = ["positive"]
[[family.structure]]
name = "t"
model = "fdpa"
op = "t_fdpa"
[family.structure.params]
tf32_round = "RZ"
EOF
check infer 0 'status: identified' "$M" infer --space small.toml --oracle "theory:$H90" --timeout 20
check infer-json 0 '^ +"t\[F=25,L=16,rho=RZ-FP32\]"$' "$M" infer --space small.toml --oracle "theory:$H90" --timeout 20 --json
py 'import numpy as np
np.save("ea.npy", np.full((32, 64), 0x3C00, np.uint16)); np.save("eb.npy", np.full((64, 16), 0x4000, np.uint16))'
check emulate 0 '' "$M" emulate "$F16" --a ea.npy --b eb.npy --out ed.npy
check emulate-d 0 '^ok$' py 'import numpy as np; d = np.load("ed.npy"); assert d.shape == (32, 16) and (d.view(np.float32) == 128.0).all(), d; print("ok")'
check accuracy 0 "^$F16 +-?[0-9.e+-]+ " "$M" accuracy "$F16" --n 2000
check hw-run 2 'no usable GPU' "$M" hw run "$F16" --a a.npy --b b.npy --c c.npy --out hw.npy
check hw-validate 2 'no usable GPU' "$M" hw validate "$F16" --tests 1000
check bad-store 2 "^mmaformal: error: store $WORK/missing: no such directory" \
    "$M" --store "$WORK/missing" distinguish "$H80" "$H90" --raw --save
check bad-store 2 'store .*: no such directory' env MMAFORMAL_STORE="$WORK/missing" "$M" prove symmetry sm80/mma.m16n8k8.f32.f16.f16.f32 --save
# the shipped records are in the wheel and replay with the installed package
check records 0 '^replayed [0-9]+ shipped counterexamples, read [0-9]+ proofs$' py '
from mmaformal import paths
from mmaformal.query import cex, store
assert paths.checkout() is None and paths.shipped().name == "_data", paths.shipped()
recs = cex.read_all(paths.shipped("counterexamples"))
bad = [p.name for p, r in recs if cex.replay_record(r, ("int", "numpy"))]
assert recs and not bad, bad
proofs = store.read_proofs(root=paths.shipped("proofs"))
assert len([p for p, _ in proofs if p.parent.name == "symmetry"]) >= 50, len(proofs)
# the bulk evidence stays in the sdist: lemma texts, hardware samples, campaign logs
assert not (paths.shipped("proofs") / "cache").exists()
assert not (paths.shipped("counterexamples") / "hw").exists()
assert not (paths.shipped().parent / "hw" / "evidence").exists()
assert (paths.shipped("proofs") / "parts.tar.zst").is_file()
assert len(list((paths.shipped("theories") / "families").glob("*.toml"))) >= 3
print(f"replayed {len(recs)} shipped counterexamples, read {len(proofs)} proofs")'
check store-check 0 '^store check: ok$' "$M" store check
check store-check 0 'lemma texts not installed' "$M" store check
check store-recheck 1 '^store recheck: lemma texts not installed: ' \
    "$M" store recheck --no-solve "$SITE/_data/proofs/symmetry/sm80_mma.m16n8k16.f32.f16.f16.f32.json"
check store-unpack 0 'members of .*parts\.tar\.zst written to' \
    "$M" store unpack "$SITE/_data/proofs/parts.tar.zst" "$WORK/parts"
check store-bad 2 '^mmaformal: error: store unpack: .*: no such pack$' "$M" store unpack "$WORK/none.tar.zst" "$WORK/x"
check site 0 '^unchanged$' sh -c "cd '$WORK' && snapshot_after=\$(cd '$SITE' && find . -path '*/__pycache__' -prune -o -type f -print | sort | xargs md5sum) && [ \"\$snapshot_after\" = \"\$(cat site.before)\" ] && echo unchanged"
check stored 0 '^ok$' py "
import pathlib
s = pathlib.Path('$XDG_DATA_HOME/mmaformal')
assert len(list(s.glob('counterexamples/distinguish/*.json'))) == 1
assert len(list(pathlib.Path('$WORK/store').glob('proofs/symmetry/*.json'))) == 1
print('ok')"

T2=$(date +%s%N)
echo "smoke: $FAILS failed; $(((T2 - T0) / 1000000000)) s in all (build and install" \
    "$(((T1 - T0) / 1000000000)) s, verbs $(((T2 - T1) / 1000000000)) s)"
exit "$FAILS"
