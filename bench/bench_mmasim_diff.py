"""Differential run of `mmaformal.simulate` against mmasim 2.1.1 (MMA-Sim), bit for bit.

Benchmark only: mmasim needs torch and lives in the benchmark venv (bench/setup_mmasim.sh,
default /work/benchenv); it is never a dependency of mmaformal, and mmaformal never imports it.
This file imports both (mmaformal from this checkout) and shares no arithmetic with either.

    /work/benchenv/bin/python bench/bench_mmasim_diff.py [--tiles T] [--only GLOB] [--pairs all]

Instructions: every instruction of the mmaformal catalog that mmasim also models (mma, wgmma,
tcgen05.mma, block-scaled mma and tcgen05.mma, mfma), one per (arch, family, kind, operand and
output types, K): the smallest M*N shape of wgmma/tcgen05 stands for the others (N only repeats
the same dot product). fp8/fp6/fp4 type pairs: the same-type pairs and e4m3 x e2m1, unless
`--pairs all`. mmasim's adapter is bench/mmasim_adapter.py.

Inputs: raw bits of every input class of `mmaformal.classes` (normal, uniform, dnn, cancel, bits,
sparse, subnormal, special, overflow, swamping) and one more, `tiny`: products near the exponent
mmasim gives zero terms (2^-160..2^-110 for f32 out, 2^-50..2^-10 for f16 out), half of all
elements and of c +-0, and tiny scales, where that exponent shows. Each class fills T tiles of the instruction's shape; every
element (t, i, j) of D is a dot product that both simulators compute (mmasim through its batch
`dpa` path on row A[t, i, :], column B[t, :, j], c = C[t, i, j] and the row/column scales).

and the probe set of `mmaformal probes` (mmaformal.query.probes: edge cases per feature, among
them the zero-term exponent scans that pinned the H200's values), class `probes`.

Every difference is classified: `nan-encoding` (both NaN, other bits), `signed-zero` (+0 vs -0),
`value` (anything else); value differences are further tagged by the rule that explains them
(docs/mmasim-notes.md sec. 6): the bench re-runs the differing dot products through a named
mmaformal variant of the theory (a parameter set to mmasim's choice) and counts those the variant
reproduces. A value difference that no rule explains is printed as `UNEXPLAINED` with its inputs.
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

CLASSES_EXTRA = ("tiny",)
SMALL = {"e4m3", "e5m2", "e3m2", "e2m3", "e2m1"}
KEEP_PAIRS = {("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e3m2", "e3m2"), ("e2m3", "e2m3"),
              ("e2m1", "e2m1"), ("e4m3", "e2m1")}


def mmasim_name(ins) -> tuple[str, str]:
    """(mmasim arch, mmasim qualifier) for an mmaformal instruction."""
    from mmasim_adapter import canonical_arch
    q = ins.qualifier
    if ins.scale:  # kind::X.block_scale.scale_vec::NX -> kind::X.blockB (mmasim's own form)
        q = re.sub(r"\.block_scale\.scale_vec::\d+X", f".block{ins.scale_block}", q)
    return canonical_arch(ins.arch), q


def representatives(pairs_all: bool, only: str | None):
    from mmaformal import isa
    from mmasim_adapter import make_op
    reps: dict[tuple, object] = {}
    skipped = Counter()
    for name, ins in isa.catalog().items():
        if only and not fnmatch.fnmatch(name, only):
            continue
        if not pairs_all and ins.a in SMALL and ins.b in SMALL and (ins.a, ins.b) not in KEEP_PAIRS:
            continue
        arch, q = mmasim_name(ins)
        try:
            op = make_op(arch, q)
        except BaseException:  # mmasim asserts on what it does not model
            skipped[ins.arch] += 1
            continue
        if getattr(op, "k", ins.k) != ins.k:
            skipped[ins.arch] += 1
            continue
        shape_free = re.sub(r"m\d+n\d+k", "mNk", name) if ins.family in ("wgmma", "tcgen05") else name
        key = (shape_free, ins.k)
        if key not in reps or ins.m * ins.n < reps[key].m * reps[key].n:
            reps[key] = ins
    return sorted(reps.values(), key=lambda i: i.name), skipped


def _tiny(f, rng, shape, lo, hi, zero_frac):
    """Raw bits of values +-(1 + U) * 2^E, E uniform in [lo, hi] (rounded into the format,
    which may clamp them to its range), a fraction `zero_frac` of them +-0."""
    from mmaformal import classes
    E = np.floor(rng.uniform(lo, hi, size=shape))
    v = (1 + rng.random(shape)) * np.exp2(E) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    v[rng.random(shape) < zero_frac] = 0.0
    top = (2 - 2.0 ** -max(f.t, 1)) * 2.0 ** min(f.emax, 1000)
    bits = classes.from_float(f, np.clip(v, -top, top))
    neg0 = (v == 0) & (rng.random(shape) < 0.5) & f.signed
    bits[neg0] |= np.asarray(1 << (f.k - 1 + f.pad)).astype(bits.dtype)
    return bits


def inputs(ins, klass, T, rng):
    """Raw-bit tiles A (T,M,K), B (T,K,N), C (T,M,N) and scales for one class."""
    from mmaformal import classes, fp
    M, N, K = ins.m, ins.n, ins.k
    if klass == "tiny":
        # products near the exponent given to zero terms (2^-160..2^-110 for f32 out,
        # 2^-50..2^-10 for f16 out), half the elements zero: zero terms and tiny nonzero ones meet
        lo, hi = (-160, -110) if ins.d in ("f32", "f64") else (-50, -10)
        A = _tiny(fp.fmt(ins.a), rng, (T, M, K), lo / 2, hi / 2, 0.5)
        B = _tiny(fp.fmt(ins.b), rng, (T, K, N), lo / 2, hi / 2, 0.5)
        C = _tiny(fp.fmt(ins.c), rng, (T, M, N), lo, hi, 0.5)
    else:
        a, _, c = classes.generate(klass, ins.a, ins.b, ins.c, K, T * M * N, rng)
        _, b, _ = classes.generate(klass, ins.a, ins.b, ins.c, K, T * N, rng)
        A = a[: T * M].reshape(T, M, K)
        B = np.swapaxes(b.reshape(T, N, K), 1, 2).copy()
        C = c.reshape(T, M, N)
    sc = {}
    if ins.scale:
        f = fp.fmt(ins.scale)
        nb = K // ins.scale_block
        def scales(shape):
            if klass == "tiny":   # scales 2^-80..2^-60 (ue8m0), so that scaled products land
                # near the zero-term exponent; the smallest ue4m3 values; and 1.0 (127 / 0x38)
                one = 127 if ins.scale == "ue8m0" else 0x38
                lo, hi = (127 - 80, 127 - 60) if ins.scale == "ue8m0" else (0x01, 0x10)
                v = rng.integers(lo, hi + 1, size=shape).astype(np.uint8)
                v[rng.random(shape) < 0.3] = one
                return v
            if klass in ("bits", "sparse", "special", "overflow"):
                return rng.integers(0, 1 << f.k, size=shape).astype(np.uint8)
            # around 1.0: ue8m0 127 +- 4; ue4m3 1.0 .. 2.0
            if ins.scale == "ue8m0":
                return rng.integers(123, 132, size=shape).astype(np.uint8)
            return rng.integers(0x30, 0x48, size=shape).astype(np.uint8)
        sc = dict(scale_a=scales((T, M, nb)), scale_b=scales((T, nb, N)))
    return A, B, C, sc


def as_rows(ins, A, B, C, sc):
    """The dot products of the tiles as (n, K) rows/columns, (n,) c and (n, nb) scales."""
    T, M, K = A.shape
    N = B.shape[2]
    a = np.broadcast_to(A[:, :, None, :], (T, M, N, K)).reshape(-1, K)
    b = np.broadcast_to(np.swapaxes(B, 1, 2)[:, None, :, :], (T, M, N, K)).reshape(-1, K)
    c = C.reshape(-1)
    sa = sb = None
    if sc:
        nb = sc["scale_a"].shape[2]
        sa = np.broadcast_to(sc["scale_a"][:, :, None, :], (T, M, N, nb)).reshape(-1, nb)
        sb = np.broadcast_to(np.swapaxes(sc["scale_b"], 1, 2)[:, None, :, :], (T, M, N, nb)).reshape(-1, nb)
    return a, b, c, sa, sb


def classify(d_ours, d_sim, fmt_name):
    """Per element: 0 equal, 1 NaN encoding, 2 signed zero, 3 value."""
    from mmaformal import fp
    f = fp.fmt(fmt_name)
    u = d_ours.astype(np.uint64) >> np.uint64(f.pad)
    v = d_sim.astype(np.uint64) >> np.uint64(f.pad)
    mag = np.uint64((1 << (f.k - 1)) - 1)
    expo_all = np.uint64(((1 << f.w) - 1) << f.t)
    def isnan(x):
        return ((x & expo_all) == expo_all) & ((x & np.uint64((1 << f.t) - 1)) != 0)
    out = np.zeros(u.shape, np.int8)
    diff = d_ours != d_sim
    both_nan = isnan(u) & isnan(v)
    zeros = ((u & mag) == 0) & ((v & mag) == 0)
    out[diff & both_nan] = 1
    out[diff & zeros] = 2
    out[diff & ~both_nan & ~zeros] = 3
    return out


def nan_kind(bits, fmt_name):
    """'canonical 0x7FFF..' / 'default +qNaN' / 'x86 default -qNaN' / 'payload' of a NaN."""
    from mmaformal import fp
    f = fp.fmt(fmt_name)
    x = int(bits) >> f.pad
    quiet = 1 << (f.t - 1)
    sign = x >> (f.k - 1)
    frac = x & ((1 << f.t) - 1)
    if frac == (1 << f.t) - 1:
        return "all-ones NaN" if not sign else "all-ones -NaN"
    if frac == quiet:
        return "-qNaN (x86 default)" if sign else "+qNaN (IEEE default)"
    return "NaN with input payload"


def variants(ins, th):
    """Named mmaformal variants of the primary theory, each set to one of mmasim's choices
    (docs/mmasim-notes.md sec. 4/6); a value difference reproduced by one is explained by it."""
    from mmaformal import theory as T
    ts = T.default()
    out = []
    p = th.param_dict
    # the rivals of the primary (e.g. <id>.zero-excluded, nan rules) as stored theories
    for r in th.competes_with:
        if ins.name in ts.instructions_of(r):
            out.append((f"rival {r}", r))
    if th.op in ("t_fdpa", "st_fdpa") and isinstance(p.get("zero_exp"), str):
        ez = None
        if ins.vendor == "nvidia":
            from mmasim_adapter import make_op
            op = make_op(*mmasim_name(ins))
            ez = getattr(getattr(op, "arithmetic_op", None), "e_zero", None)
        if isinstance(ez, int):
            out.append((f"zero_exp={ez} (mmasim's e_zero)", th.replace(zero_exp=ez)))
    if "zero_sign" in p and p["zero_sign"] != "positive":
        out.append(("zero_sign=positive", th.replace(zero_sign="positive")))
    return out


def _nonfinite(bits, fmt_name):
    from mmaformal import fp
    f = fp.fmt(fmt_name)
    x = np.asarray(bits).astype(np.uint64) >> np.uint64(f.pad)
    if f.name in ("f32", "f16", "f64", "bf16"):
        e = np.uint64(((1 << f.w) - 1) << f.t)
        return (x & e) == e
    return np.zeros(x.shape, bool)


def explain(ins, th, a, b, c, sa, sb, d_ours, d_sim):
    """For value differences: the documented rule that explains each (first match), else ""."""
    tags = np.full(len(c), "", dtype=object)
    if th.op == "gtr_fdpa":
        # mmasim's GTR-FDPA gives an Inf/NaN accumulator (c, or the previous block's result when
        # K > L) the frexp exponent -1 and drops it when E > F + 1 (docs/mmasim-notes.md 3.8, 4.6)
        hit = _nonfinite(d_ours, ins.d) & ~_nonfinite(d_sim, ins.d) \
            & (_nonfinite(c, ins.c) | (ins.k > th.L))
        tags[hit] = "mmasim GTR drops an Inf/NaN accumulator (notes 4.6)"
    if th.op in ("tr_fdpa", "gtr_fdpa") and th.param_dict.get("zero_exp") == "excluded":
        # mmasim's TR/GTR give a zero c the exponent -126 (frexp's emin) in E = max(e_dot, Exp c):
        # our zero_exp = "field" does the same for c (zero products stay below e_dot here)
        from mmaformal.fp import fmt
        zc = (np.asarray(c).astype(np.uint64) & np.uint64((1 << (fmt(ins.c).k - 1)) - 1)) == 0
        todo = (tags == "") & zc
        if todo.any():
            d = simulate_rows(ins, a[todo], b[todo], c[todo], None, None, th.replace(zero_exp="field"))
            hit = np.zeros(len(c), bool)
            hit[np.nonzero(todo)[0]] = d == d_sim[todo]
            tags[hit] = "mmasim TR/GTR: zero c at exponent -126 (notes 3.2, 6)"
    for label, var in variants(ins, th):
        todo = tags == ""
        if not todo.any():
            break
        try:
            d = simulate_rows(ins, a[todo], b[todo], c[todo], None if sa is None else sa[todo],
                              None if sb is None else sb[todo], var)
        except ValueError:
            continue
        hit = np.zeros(len(c), bool)
        hit[np.nonzero(todo)[0]] = d == d_sim[todo]
        tags[hit] = label
    return tags


def probe_rows(ins):
    """The probe set of `mmaformal probes` for this instruction (mmaformal.query.probes:
    order, precision, alignment, output rounding, zero-term exponent scans, normalization,
    out of range, subnormals, specials, zero sign) as rows, or None where none is exact."""
    from mmaformal.query.probes import dot_probes
    from mmaformal.query.infer import Batch
    bs = [x for x in dot_probes(ins) if x is not None]
    if not bs:
        return None
    bt = Batch.concat(bs)
    return bt.a, bt.b, bt.c, bt.sa, bt.sb


def simulate_rows(ins, a, b, c, sa=None, sb=None, theory=None):
    """mmaformal.simulate on n independent dot products (rows a, b (n, K), c (n,), scales
    (n, K/block)): packed on the diagonals of tiles of the instruction's shape."""
    import mmaformal
    n, K = a.shape
    M, N = ins.m, ins.n
    P = min(M, N)
    T = -(-n // P)
    pad = T * P - n
    def padded(x):
        return np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)]) if pad else x
    a, b, c = padded(a).reshape(T, P, K), padded(b).reshape(T, P, K), padded(c).reshape(T, P)
    r = np.arange(P)
    A = np.zeros((T, M, K), a.dtype); A[:, r, :] = a
    B = np.zeros((T, K, N), b.dtype); B[:, :, r] = np.swapaxes(b, 1, 2)
    C = np.zeros((T, M, N), c.dtype); C[:, r, r] = c
    kw = {}
    if sa is not None:
        nb = sa.shape[1]
        sa, sb = padded(sa).reshape(T, P, nb), padded(sb).reshape(T, P, nb)
        SA = np.zeros((T, M, nb), np.uint8); SA[:, r, :] = sa
        SB = np.zeros((T, nb, N), np.uint8); SB[:, :, r] = np.swapaxes(sb, 1, 2)
        kw = dict(scale_a=SA, scale_b=SB)
    D = mmaformal.simulate(ins, A, B, C, theory=theory, **kw)
    return D[:, r, r].reshape(-1)[:n]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=2, help="tiles per class and instruction (default 2)")
    ap.add_argument("--max-dots", type=int, default=256,
                    help="at most this many dot products per class and instruction (default 256)")
    ap.add_argument("--only", help="fnmatch pattern over mmaformal instruction names")
    ap.add_argument("--pairs", choices=("some", "all"), default="some")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--examples", type=int, default=2, help="examples printed per unexplained kind")
    args = ap.parse_args(argv)

    import torch
    torch.set_num_threads(1)
    import mmaformal
    from mmaformal import classes, theory as T
    from mmasim_adapter import mmasim_dpa

    t0 = time.time()
    reps, skipped = representatives(args.pairs == "all", args.only)
    ts = T.default()
    rng = np.random.default_rng(args.seed)
    total = Counter()
    per_arch = defaultdict(Counter)
    value_tags = Counter()
    unexplained = []
    nan_kinds = Counter()
    zero_kinds = Counter()
    rival_total = Counter()
    print(f"{'instruction':<78} {'dots':>6} {'agree':>7} {'nan':>5} {'zero':>5} {'value':>5}  value explained by")
    for ins in reps:
        th = ts.resolve(ins)
        ok, why = th.evaluable
        if not ok:
            print(f"{ins.name:<78} skipped: {why}")
            continue
        arch, q = mmasim_name(ins)
        cnt = Counter()
        tags_here = Counter()
        rivals = [r for r in th.competes_with if ins.name in ts.instructions_of(r)
                  and ts.get(r).bind(ins).evaluable[0]]
        rival_diff = Counter({r: 0 for r in rivals})
        for klass in classes.CLASSES + CLASSES_EXTRA + ("probes",):
            if klass == "probes":
                pr = probe_rows(ins)
                if pr is None:
                    continue
                a, b, c, sa, sb = pr
                D = simulate_rows(ins, a, b, c, sa, sb)
                rows_of = lambda r: simulate_rows(ins, a, b, c, sa, sb, r)  # noqa: E731
            else:
                Tn = max(1, min(args.tiles, args.max_dots // (ins.m * ins.n)))
                A, B, C, sc = inputs(ins, klass, Tn, rng)
                D = mmaformal.simulate(ins, A, B, C, **sc).reshape(-1)
                a, b, c, sa, sb = as_rows(ins, A, B, C, sc)
                lim = args.max_dots
                a, b, c, D = a[:lim], b[:lim], c[:lim], D[:lim]
                if sa is not None:
                    sa, sb = sa[:lim], sb[:lim]
                rows_of = lambda r: mmaformal.simulate(ins, A, B, C, theory=r, **sc).reshape(-1)[:lim]  # noqa: E731
            Ds = mmasim_dpa(arch, q, a, b, c, sa, sb).astype(D.dtype)
            cl = classify(D, Ds, ins.d)
            cnt["dots"] += len(c)
            cnt["agree"] += int((cl == 0).sum())
            cnt["nan"] += int((cl == 1).sum())
            cnt["zero"] += int((cl == 2).sum())
            cnt["value"] += int((cl == 3).sum())
            for k in np.nonzero(cl == 2)[0]:
                sgn = lambda x: "-0" if int(x) >> (np.dtype(D.dtype).itemsize * 8 - 1) else "+0"  # noqa: E731
                zero_kinds[f"{ins.arch} {th.id}: mmaformal {sgn(D[k])} -> mmasim {sgn(Ds[k])}"] += 1
            for k in np.nonzero(cl == 1)[0]:
                nan_kinds[f"{ins.arch} {th.id}: {nan_kind(D[k], ins.d)} -> mmasim {nan_kind(Ds[k], ins.d)}"] += 1
            for r in rivals:
                Dr = rows_of(r)
                rival_diff[r] += int((Dr != Ds).sum())
            vi = np.nonzero(cl == 3)[0]
            if len(vi):
                tags = explain(ins, th, a[vi], b[vi], c[vi], None if sa is None else sa[vi],
                               None if sb is None else sb[vi], D[vi], Ds[vi])
                for k, tg in enumerate(tags):
                    tags_here[tg or "UNEXPLAINED"] += 1
                    if not tg and len(unexplained) < 400:
                        unexplained.append((ins.name, klass, a[vi[k]], b[vi[k]], c[vi[k]],
                                            None if sa is None else sa[vi[k]], None if sb is None else sb[vi[k]],
                                            D[vi[k]], Ds[vi[k]]))
        for k, v in cnt.items():
            total[k] += v
            per_arch[ins.arch][k] += v
        value_tags.update({f"{ins.arch}: {k}": v for k, v in tags_here.items()})
        expl = "; ".join(f"{k} {v}" for k, v in tags_here.most_common())
        if rivals:
            expl += ("; " if expl else "") + "rivals differ from mmasim on: " + \
                ", ".join(f"{r} {v}" for r, v in rival_diff.items())
            rival_total.update({f"{ins.arch}: {r.split('.', 1)[1]}": v for r, v in rival_diff.items()})
        print(f"{ins.name:<78} {cnt['dots']:>6} {100 * cnt['agree'] / cnt['dots']:>6.2f}% {cnt['nan']:>5} "
              f"{cnt['zero']:>5} {cnt['value']:>5}  {expl}", flush=True)

    print("\nper architecture (dot products, agreement, NaN-encoding / signed-zero / value differences):")
    for arch, c in sorted(per_arch.items()):
        print(f"  {arch:<7} {c['dots']:>8} {100 * c['agree'] / c['dots']:7.3f}%  {c['nan']:>6} {c['zero']:>6} {c['value']:>6}")
    print("\nvalue differences by explanation:")
    for k, v in sorted(value_tags.items()):
        print(f"  {k}: {v}")
    print("\nNaN-encoding differences (mmaformal's NaN -> mmasim's NaN):")
    for k, v in sorted(nan_kinds.items()):
        print(f"  {k}: {v}")
    print("\nsigned-zero differences (mmaformal's zero -> mmasim's zero):")
    for k, v in sorted(zero_kinds.items()):
        print(f"  {k}: {v}")
    print("\nrival theories: dot products on which each differs from mmasim (the inputs separate them):")
    for k, v in sorted(rival_total.items()):
        print(f"  {k}: {v}")
    if unexplained:
        print(f"\nUNEXPLAINED value differences: {len(unexplained)} (first examples by instruction and class)")
        shown = Counter()
        for name, klass, a, b, c, sa, sb, d, ds in unexplained:
            if shown[(name, klass)] >= args.examples:
                continue
            shown[(name, klass)] += 1
            h = lambda x: " ".join(f"{int(v):x}" for v in np.ravel(x))  # noqa: E731
            print(f"  {name} [{klass}] a={h(a)} b={h(b)} c={int(c):x}"
                  + (f" sa={h(sa)} sb={h(sb)}" if sa is not None else "")
                  + f" -> mmaformal {int(d):x}, mmasim {int(ds):x}")
    n_unexp = sum(v for k, v in value_tags.items() if k.endswith("UNEXPLAINED"))
    print(f"\nnot modelled by mmasim (skipped): " + ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())))
    print(f"\nsummary: {len(reps)} instructions, {total['dots']:,} dot products, "
          f"{100 * total['agree'] / max(1, total['dots']):.2f}% bit-identical; differences: "
          f"NaN encoding {total['nan']:,}, signed zero {total['zero']:,}, value {total['value']:,} "
          f"({total['value'] - n_unexp:,} explained, {n_unexp:,} unexplained); "
          f"{time.time() - t0:.0f} s")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main(sys.argv[1:])
