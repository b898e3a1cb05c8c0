"""Platform profiles (mmaformal.profile) and the ops emulating() covers beyond one GEMM.

Oracles: tests/oracles/schedule.py (exact Fractions, no mmaformal code) for the schedule
semantics (K-block order, splits of K and their reductions, tf32 pre-rounding); the explicit
composition of mt.matmul / mt.matmul_rule for einsum, tensordot, multi_dot, SDPA and
_scaled_mm; torch itself for calls that must run natively.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from oracles import schedule as OS  # noqa: E402
from mmaformal import profile as P  # noqa: E402
from mmaformal import torch as mt  # noqa: E402
from mmaformal import torch_gemm as mtg  # noqa: E402

K8 = "sm90/mma.m16n8k8.f32.f16.f16.f32"
K16 = "sm90/mma.m16n8k16.f32.f16.f16.f32"
TF32 = "sm90/mma.m16n8k8.f32.tf32.tf32.f32"
E4M3 = "sm90/wgmma.m64n8k32.f32.e4m3.e4m3"


def _f16(shape, seed, emin=-10, emax=10):
    """f16 tensors of normal numbers with exponents spread over [emin, emax] (partial sums
    that cancel and truncate differently under different schedules)."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, shape)
    e = rng.integers(emin + 15, emax + 16, shape)
    m = rng.integers(0, 1 << 10, shape)
    bits = (s << 15 | e << 10 | m).astype(np.uint16)
    return torch.from_numpy(bits.view(np.int16)).view(torch.float16)


def _f32(shape, seed):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, shape)
    e = rng.integers(127 - 12, 127 + 12, shape)
    m = rng.integers(0, 1 << 23, shape)
    bits = (s << 31 | e << 23 | m).astype(np.uint32)
    return torch.from_numpy(bits.view(np.int32)).view(torch.float32)


def _e4m3(shape, seed):
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 256, shape).astype(np.uint8)
    b[(b & 0x7F) == 0x7F] = 0x38                       # no NaN codes
    return torch.from_numpy(b.view(np.int8)).view(torch.float8_e4m3fn)


def _u(t) -> list[list[int]]:
    st = t.element_size() * 8
    sig = {8: torch.int8, 16: torch.int16, 32: torch.int32}[st]
    mask = (1 << st) - 1
    return [[int(v) & mask for v in row] for row in t.contiguous().view(sig).tolist()]


def _bits(t):
    return _u(t)


def _rule(instruction, **kw) -> P.Rule:
    ins = P.isa.lookup(instruction)
    fa = "f32" if ins.a == "tf32" else ins.a
    d = {"id": "r", "status": "hypothesis", "provenance": "test", "instruction": instruction,
         "match": {"a": fa, "b": fa}}
    d.update(kw)
    return P.parse({"profile": {"id": "t", "status": "hypothesis", "provenance": "test"},
                    "rule": [d]}, "test").rules[0]


# ------------------------------------------------------------------------------------------
# Schedules against the exact oracle


SCHEDULES = [
    ("chain", {}, {}),
    ("decreasing", {"order": "decreasing"}, {"order": "decreasing"}),
    ("slices-seq", {"split": {"slices": 4}}, {"slices": 4}),
    ("slices-pair", {"split": {"slices": 4, "reduce": "pairwise"}}, {"slices": 4, "reduce": "pairwise"}),
    ("chunk", {"split": {"chunk": 40}}, {"chunk": 40}),
    ("slices-units", {"split": {"slices": 2, "unit": 32}}, {"slices": 2, "unit": 32}),
]


def test_schedules_f16_match_the_exact_oracle():
    a = _f16((2, 44), 1)                               # K = 44: padded to 48 (6 blocks of 8)
    b = _f16((44, 3), 2)
    got = {}
    for name, rule_kw, oracle_kw in SCHEDULES:
        d = mt.matmul_rule(a, b, _rule(K8, **rule_kw))
        assert d.dtype == torch.float32 and d.shape == (2, 3)
        ref = OS.gemm(_u(a), _u(b), "sm90_f16_k8", **oracle_kw)
        assert _u(d) == ref, name
        got[name] = tuple(map(tuple, ref))
    # the data separate the schedules: a schedule the executor ignored would show
    assert len(set(got.values())) == len(got), got


def test_reduction_into_the_output_format_matches_the_oracle():
    """A serial split-K: each part added into the f16 output, D = f16(f32(D) + P)."""
    a = _f16((2, 48), 8)
    b = _f16((48, 3), 9)
    r = _rule(K8, split={"slices": 2, "reduce_format": "out"})
    d = mt.matmul_rule(a, b, r, out_dtype=torch.float16)
    assert d.dtype == torch.float16
    assert _u(d) == OS.gemm(_u(a), _u(b), "sm90_f16_k8", slices=2, reduce_out="f16")
    acc = mt.matmul_rule(a, b, _rule(K8, split={"slices": 2}))           # f32 sum of the parts
    assert _u(acc) == OS.gemm(_u(a), _u(b), "sm90_f16_k8", slices=2)
    with pytest.raises(mt.EmulationError, match="needs out_dtype"):
        mt.matmul_rule(a, b, r)


def test_tf32_pre_rounding_and_chain_match_the_oracle():
    a = _f32((2, 20), 3)                               # K = 20: padded to 24
    b = _f32((20, 3), 4)
    rne = mt.matmul_rule(a, b, _rule(TF32, pre_round="tf32-rne"))
    trunc = mt.matmul_rule(a, b, _rule(TF32))
    assert _u(rne) == OS.gemm(_u(a), _u(b), "sm90_tf32_k8", pre_round="tf32-rne")
    assert _u(trunc) == OS.gemm(_u(a), _u(b), "sm90_tf32_k8")
    assert _u(rne) != _u(trunc)


def test_tf32_rne_rounding_of_single_values():
    special = [0x3F801000, 0x3F803000, 0x3F800FFF, 0x7F7FFFFF, 0xFF7FF000, 0x7F800000,
               0x7F800001, 0xFFC01234, 0x00001000, 0x00003000, 0x80001FFF, 0x80000000, 0]
    rng = np.random.default_rng(5)
    vals = special + [int(x) for x in rng.integers(0, 1 << 32, 300, dtype=np.uint64)]
    t = torch.from_numpy(np.array(vals, dtype=np.uint32).view(np.int32)).view(torch.float32)
    got = mtg._tf32_rne(t).view(torch.int32).numpy().view(np.uint32).tolist()
    assert got == [OS.tf32_rne(v) for v in vals]


def test_fp8_chunked_chain_matches_the_oracle():
    a = _e4m3((2, 200), 6)                             # K = 200: padded to 224 (7 blocks of 32)
    b = _e4m3((200, 2), 7)
    whole = mt.matmul_rule(a, b, _rule(E4M3))
    chunked = mt.matmul_rule(a, b, _rule(E4M3, split={"chunk": 64}))
    assert _u(whole) == OS.gemm(_u(a), _u(b), "sm90_e4m3_k32")
    assert _u(chunked) == OS.gemm(_u(a), _u(b), "sm90_e4m3_k32", chunk=64)
    assert _u(whole) != _u(chunked)


def test_split_parts_semantics():
    s = P.Split(slices=4)
    assert s.parts(6, 8) == [(0, 2), (2, 4), (4, 5), (5, 6)]     # array_split of the blocks
    assert P.Split(chunk=128).parts(9, 32) == [(0, 4), (4, 8), (8, 9)]
    assert P.Split(slices=10).parts(3, 8) == [(0, 1), (1, 2), (2, 3)]
    assert P.Split(slices=2, unit=64).parts(20, 16) == [(0, 12), (12, 20)]   # 5 units of 4 blocks


# ------------------------------------------------------------------------------------------
# The loader


GOOD = """
[profile]
id = "t"
status = "hypothesis"
provenance = "test"
[[rule]]
id = "r"
status = "hypothesis"
provenance = "test"
instruction = "sm90/mma.m16n8k8.f32.f16.f16.f32"
[rule.match]
a = "f16"
b = "f16"
"""


@pytest.mark.parametrize("edit,msg", [
    (lambda s: s.replace('status = "hypothesis"\nprovenance = "test"\ninstruction',
                         'status = "maybe"\nprovenance = "test"\ninstruction'),
     r"rule r: status must be one of uncalibrated, hypothesis, confirmed, refuted, got 'maybe'"),
    (lambda s: s.replace("mma.m16n8k8.f32", "mma.m16n8k9.f32"), r"rule r: instruction 'sm90/mma.m16n8k9"),
    (lambda s: s.replace('a = "f16"', 'a = "bf16"'), r"takes A in f16, but match.a allows bf16"),
    (lambda s: s.replace('a = "f16"', 'a = "f17"'), r"match.a: unknown format 'f17'"),
    (lambda s: s + "[rule.split]\nchunk = 12\n", r"split.chunk = 12 is not a multiple of .* k = 8"),
    (lambda s: s + "[rule.split]\nchunk = 16\nslices = 2\n", r"exactly one of slices, chunk"),
    (lambda s: s + 'n = { not_a_multiple = 8 }\n', r"match.n: unknown key not_a_multiple"),
    (lambda s: s + 'op = "conv2d"\n', r"match.op must be one of"),
    (lambda s: s.replace('[rule.match]', 'colour = "red"\n[rule.match]'), r"rule r: unknown key colour"),
    (lambda s: s.replace('id = "r"', 'id = "R!"'), r"id 'R!' must match"),
    (lambda s: s + s[s.index("[[rule]]"):].replace("[[rule]]", "[[rule]]", 1), r"rule id 'r' appears twice"),
    (lambda s: s.replace("[profile]", "[profil]"), r"unknown key profil"),
    (lambda s: s.replace('a = "f16"\n', ""), r"match.a is required"),
    (lambda s: s + 'pre_round = "tf32-rne"\n', r"unknown key pre_round"),   # inside [rule.match]
    (lambda s: s.replace('instruction =', 'pre_round = "tf32-rne"\ninstruction ='),
     r"pre_round tf32-rne needs a tf32 instruction"),
    (lambda s: s.replace("[[rule]]", "[[rule]\n"), r"not valid TOML"),
])
def test_bad_profiles_are_one_line_errors(tmp_path, edit, msg):
    assert P.load(_write(tmp_path, GOOD)).rules[0].id == "r"
    path = _write(tmp_path, edit(GOOD))
    with pytest.raises(P.ProfileError, match=msg) as e:
        P.load(path)
    assert "\n" not in str(e.value) and str(path) in str(e.value)
    assert isinstance(e.value, ValueError)


def _write(tmp_path, text):
    p = tmp_path / "p.toml"
    p.write_text(text)
    return p


def test_unknown_profile_names_and_missing_files():
    with pytest.raises(P.ProfileError, match=r"no profile named 'h999-cublas' \(shipped: .*h100-cublas"):
        P.load("h999-cublas")
    with pytest.raises(P.ProfileError, match="does not exist"):
        P.load("/nonexistent/p.toml")
    with pytest.raises(P.ProfileError, match="no profile named"):
        mt.emulating("h999-cublas")
    with pytest.raises(mt.EmulationError, match="theory= applies to an instruction"):
        mt.emulating("h100-cublas", theory="sm90.f16.f32")


def _call(op="mm", a="f16", b="f16", out=None, m=64, n=768, k=768, **kw):
    return P.Call(op, a, b, out or a, m, n, k, **kw)


def test_shipped_profiles_load_and_select_the_observations():
    assert {"h100-cublas", "sm80-cublas", "sm89-cublas", "sm100-cublas", "gfx942-hipblaslt"} <= set(P.names())
    for name in P.names():
        p = P.load(name)
        assert p.status in ("uncalibrated", "hypothesis", "confirmed") and p.provenance
        if name != "h100-cublas":
            assert p.status == "uncalibrated" and all(r.status == "uncalibrated" for r in p.rules)
    h = P.load("h100-cublas")
    sel = lambda c: (lambda r: (r[0].id if r[0] else None, r[1]))(h.select(c))  # noqa: E731
    assert sel(_call("linear", n=50257)) == ("f16-vocab-serial-split2", True)       # M = 64
    assert h.rule("f16-vocab-serial-split2").split == P.Split(slices=2, reduce_format="out")
    assert sel(_call("linear", m=200, n=50257)) == ("f16-n-unaligned", True)
    assert h.rule("f16-n-unaligned").instruction.name == K8
    assert sel(_call("linear", n=768)) == ("f16", True)
    assert sel(_call("addmm", m=128, n=768, k=3072)) == ("f16-n768-k3072-split2", True)
    assert sel(_call("addmm", m=96, n=768, k=3072)) == ("f16", True)
    assert sel(_call(m=64, n=64, k=8192)) == ("f16-64x64x8192-split6", True)
    assert h.rule("f16-64x64x8192-split6").split == P.Split(chunk=1408)
    assert sel(_call(a="bf16", b="bf16")) == ("bf16", True)
    assert sel(_call(a="f32", b="f32", allow_tf32=True)) == ("f32-tf32", True)
    assert sel(_call(a="f32", b="f32", m=128, n=768, k=768, allow_tf32=True)) == \
        ("f32-tf32-m128-n768-k768-split4", True)
    assert h.rule("f32-tf32").pre_round == "tf32-rne"
    assert sel(_call(a="f32", b="f32", allow_tf32=False)) == (None, False)
    fp8 = dict(op="scaled_mm", a="e4m3", b="e4m3", out="bf16", scaling="tensor")
    assert sel(_call(fast_accum=True, **fp8)) == ("fp8-fast-accum", True)
    assert sel(_call(fast_accum=False, **fp8)) == ("fp8-chunked", True)
    assert h.rule("fp8-chunked").split == P.Split(chunk=128)
    assert h.rule("fp8-fast-accum").split is None


# ------------------------------------------------------------------------------------------
# emulating(profile)


def _as(d, dtype=torch.float16):
    return d.to(dtype)


def test_profile_routes_each_call_to_its_rule():
    x = _f16((3, 40), 10, -4, 4)
    w_odd = _f16((13, 40), 11, -4, 4)                  # N = 13: not a multiple of 8
    w_even = _f16((16, 40), 12, -4, 4)
    with torch.no_grad(), mt.emulating("h100-cublas", strict=True) as mode:
        y_odd = F.linear(x, w_odd)
        y_even = F.linear(x, w_even)
    assert [r for _, r, _ in mode.log] == ["f16-n-unaligned", "f16"]
    assert "linear f16 x f16 -> f16, M=3 N=13 K=40" in mode.log[0][0]
    assert torch.equal(y_odd, _as(mt.matmul(x, w_odd.T.contiguous(), instr=K8, pad_k=True)))
    assert torch.equal(y_even, _as(mt.matmul(x, w_even.T.contiguous(), instr=K16, pad_k=True)))
    # the two instructions differ on these data (D before the cast: the routing is observable)
    assert not torch.equal(mt.matmul_rule(x, w_odd.T, _rule(K8)), mt.matmul_rule(x, w_odd.T, _rule(K16)))


def test_tf32_flag_selects_the_rounding_rule():
    x, y = _f32((2, 20), 13), _f32((20, 3), 14)
    m = torch.backends.cuda.matmul
    old = m.fp32_precision
    try:
        m.fp32_precision = "tf32"
        with torch.no_grad(), mt.emulating("h100-cublas", strict=True) as mode:
            d = x @ y
        assert mode.log[0][1] == "f32-tf32"
        assert _u(d) == OS.gemm(_u(x), _u(y), "sm90_tf32_k8", pre_round="tf32-rne")
        m.fp32_precision = "ieee"
        with mt.emulating("h100-cublas", strict=True), \
                pytest.raises(mt.EmulationError, match=r"no rule covers matmul f32 x f32 -> f32, M=2 N=3 K=20 .*allow_tf32=False"):
            x @ y
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            with mt.emulating("h100-cublas") as mode:
                n1 = x @ y
                n2 = x @ y
        assert torch.equal(n1, torch.matmul(x, y)) and torch.equal(n2, n1) and mode.calls == 0
        msgs = [str(r.message) for r in rec if issubclass(r.category, mt.EmulationWarning)]
        assert len(msgs) == 1 and "runs natively" in msgs[0]
    finally:
        m.fp32_precision = old


def test_default_rule_with_one_warning_and_strict_error(tmp_path):
    text = GOOD.replace('a = "f16"', 'op = "mm"\na = "f16"').replace(
        'instruction =', 'default = true\ninstruction =')
    path = _write(tmp_path, text)
    x, y = _f16((2, 16), 20, -3, 3), _f16((16, 3), 21, -3, 3)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with torch.no_grad(), mt.emulating(path) as mode:
            d1 = x @ y                                  # matmul: not op mm -> default rule
            d2 = torch.matmul(x, y)
            d3 = torch.mm(x, y)                         # covered
    msgs = [str(r.message) for r in rec if issubclass(r.category, mt.EmulationWarning)]
    assert len(msgs) == 1 and "using the default rule r" in msgs[0] and "M=2 N=3 K=16" in msgs[0]
    assert [c for _, _, c in mode.log] == [False, False, True]
    ref = _as(mt.matmul(x, y, instr=K8))
    assert torch.equal(d1, ref) and torch.equal(d2, ref) and torch.equal(d3, ref)
    with torch.no_grad(), mt.emulating(path, strict=True), \
            pytest.raises(mt.EmulationError, match=r"profile t: no rule covers matmul f16 x f16"):
        x @ y


def test_dtype_mix_is_one_error():
    with torch.no_grad(), mt.emulating("h100-cublas"), \
            pytest.raises(mt.EmulationError, match=r"operand dtypes differ: float16 x bfloat16"):
        torch.zeros(2, 8, dtype=torch.float16) @ torch.zeros(8, 2, dtype=torch.bfloat16)


# ------------------------------------------------------------------------------------------
# einsum, tensordot, multi_dot, SDPA, _scaled_mm


def test_einsum_tensordot_multi_dot_equal_the_composition():
    x = _f16((2, 3, 24), 30, -3, 3)
    y = _f16((2, 24, 5), 31, -3, 3)
    z = _f16((5, 7), 32, -3, 3)
    ref = lambda a, b: _as(mt.matmul(a.contiguous(), b.contiguous(), instr=K16, pad_k=True))  # noqa: E731
    with torch.no_grad(), mt.emulating(K16, strict=True) as mode:
        e1 = torch.einsum("bij,bjk->bik", x, y)
        e2 = torch.einsum("ij,kj->ik", x[0], y[0].T)
        t1 = torch.tensordot(x, y[0], dims=([2], [0]))
        md = torch.linalg.multi_dot([x[0], y[0], z])
    assert mode.calls >= 5
    for i in range(2):
        assert torch.equal(e1[i], ref(x[i], y[i]))
        assert torch.equal(t1[i], ref(x[i], y[0]))
    assert torch.equal(e2, ref(x[0], y[0]))
    assert torch.equal(md, ref(ref(x[0], y[0]), z))


def _sdpa_ref(q, k, v, mm, mask=None, causal=False, scale=None):
    """torch's math backend of SDPA (aten _scaled_dot_product_attention_math), with `mm` for
    the two products: f16/bf16 inputs converted to f32, q and k^T each scaled by sqrt(scale),
    safe softmax of q k^T + mask in f32, times v, converted back."""
    dt = q.dtype
    acc = torch.float32 if dt in (torch.float16, torch.bfloat16) else dt
    L, S = q.shape[-2], k.shape[-2]
    sf = float(np.sqrt(1 / np.sqrt(q.shape[-1]) if scale is None else scale))
    s = mm(q.to(acc) * sf, k.to(acc).transpose(-2, -1) * sf)
    if causal:
        mask = torch.ones(L, S, dtype=torch.bool).tril()
    if mask is not None:
        s = s + (torch.zeros(L, S, dtype=acc).masked_fill(~mask, float("-inf"))
                 if mask.dtype == torch.bool else mask)
    return mm(torch._safe_softmax(s, -1), v.to(acc)).to(dt)


def _emulated_mm(instr):
    def mm(a, b):
        out = torch.empty(*a.shape[:-1], b.shape[-1], dtype=torch.float32)
        for idx in np.ndindex(*a.shape[:-2]):
            out[idx] = _as(mt.matmul(a[idx].contiguous(), b[idx].contiguous(), instr=instr,
                                     pad_k=True), torch.float32)
        return out
    return mm


def test_sdpa_reference_is_torchs_math_backend():
    """The oracle above against torch itself (its math backend on the CPU, no mmaformal code)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    g = torch.Generator().manual_seed(3)
    bmask = torch.rand(5, 6, generator=g) > 0.3
    bmask[:, 0] = True
    for dt in (torch.float16, torch.bfloat16, torch.float32):
        q, k, v = (torch.randn(1, 2, n, 16, generator=g).to(dt) for n in (5, 6, 6))
        fmask = torch.randn(5, 6, generator=g).to(dt if dt == torch.float32 else torch.float32)
        with sdpa_kernel(SDPBackend.MATH):
            for kw in ({}, {"is_causal": True, "scale": 0.3}, {"attn_mask": bmask},
                       {"attn_mask": fmask}):
                want = F.scaled_dot_product_attention(q, k, v, **kw)
                got = _sdpa_ref(q, k, v, torch.matmul, mask=kw.get("attn_mask"),
                                causal=kw.get("is_causal", False), scale=kw.get("scale"))
                assert torch.equal(got.view(torch.int8), want.view(torch.int8)), (dt, kw)


def test_sdpa_is_torchs_math_with_emulated_products():
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(1, 2, n, 16, generator=g) for n in (5, 6, 6))
    bmask = torch.rand(5, 6, generator=g) > 0.3
    bmask[:, 0] = True
    fmask = torch.randn(5, 6, generator=g)
    mm = _emulated_mm(TF32)
    with torch.no_grad(), mt.emulating(TF32, strict=True) as mode:
        o1 = F.scaled_dot_product_attention(q, k, v)
        o2 = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
        o3 = F.scaled_dot_product_attention(q, k, v, attn_mask=bmask)
        o4 = F.scaled_dot_product_attention(q, k, v, attn_mask=fmask)
        with pytest.raises(mt.EmulationError, match="dropout_p must be 0"):
            F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
    assert mode.calls == 8
    assert torch.equal(o1, _sdpa_ref(q, k, v, mm))
    assert torch.equal(o2, _sdpa_ref(q, k, v, mm, causal=True, scale=0.3))
    assert torch.equal(o3, _sdpa_ref(q, k, v, mm, mask=bmask))
    assert torch.equal(o4, _sdpa_ref(q, k, v, mm, mask=fmask))
    # f16 inputs: torch's math backend multiplies in f32, which an f16 instruction does not
    # model: strict says so instead of running anything silently
    with torch.no_grad(), mt.emulating(K16, strict=True), pytest.raises(mt.EmulationError):
        F.scaled_dot_product_attention(q.half(), k.half(), v.half())


def _smm_ref(a, b, sa, sb, rule, bias=None, out_dtype=torch.bfloat16):
    d = mt.matmul_rule(a, b, rule).float()
    if sa.numel() == 1:
        y = d * (sa.reshape(()) * sb.reshape(()))
    else:
        y = d * (sa * sb)
    if bias is not None:
        y = y + bias.float()
    return y.to(out_dtype)


def test_scaled_mm_fast_and_chunked_accumulation():
    a = _e4m3((4, 256), 50)
    b = _e4m3((3, 256), 51).T                          # (K, N), column-major as torch wants
    one = torch.tensor(1.0)
    sa, sb = torch.tensor(0.5), torch.tensor(0.25)
    ra = torch.tensor([[0.5], [2.0], [1.0], [0.125]])
    rb = torch.tensor([[4.0, 0.5, 1.0]])
    bias = torch.tensor([0.5, -1.0, 2.0], dtype=torch.bfloat16)
    h = P.load("h100-cublas")
    with torch.no_grad(), mt.emulating("h100-cublas", strict=True) as mode:
        fast = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=True)
        slow = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
        f32 = torch._scaled_mm(a, b, one, one, out_dtype=torch.float32)
        row = torch._scaled_mm(a, b, ra, rb, bias=bias, out_dtype=torch.bfloat16)
    assert [r for _, r, _ in mode.log] == ["fp8-fast-accum", "fp8-chunked", "fp8-chunked", "fp8-chunked"]
    assert torch.equal(fast, _smm_ref(a, b, sa, sb, h.rule("fp8-fast-accum")))
    assert torch.equal(slow, _smm_ref(a, b, sa, sb, h.rule("fp8-chunked")))
    assert _u(f32) == OS.gemm(_u(a), _u(b), "sm90_e4m3_k32", chunk=128)
    assert torch.equal(row, _smm_ref(a, b, ra, rb, h.rule("fp8-chunked"), bias))
    assert not torch.equal(mt.matmul_rule(a, b, h.rule("fp8-fast-accum")), f32)
    with torch.no_grad(), mt.emulating("h100-cublas"), pytest.raises(mt.EmulationError, match="scales must be"):
        torch._scaled_mm(a, b, torch.ones(2), one, out_dtype=torch.bfloat16)


# ------------------------------------------------------------------------------------------
# Ops that are not modelled


def test_unmodelled_ops_strict_raise_else_warn_once():
    x = torch.randn(1, 2, 6, 6)
    w = torch.randn(3, 2, 3, 3)
    with mt.emulating("h100-cublas", strict=True), \
            pytest.raises(mt.EmulationError, match=r"^conv2d is not emulated under emulating\(profile h100-cublas\): convolution"):
        F.conv2d(x, w)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        with mt.emulating(K16):
            c1 = F.conv2d(x, w)
            F.conv2d(x, w)
            torch.mv(torch.randn(3, 4), torch.randn(4))
    msgs = [str(r.message) for r in rec if issubclass(r.category, mt.EmulationWarning)]
    assert len(msgs) == 2 and msgs[0].startswith("conv2d is not emulated") and msgs[1].startswith("mv ")
    assert torch.equal(c1, F.conv2d(x, w))
    # integer tensors are not what the list is about: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with mt.emulating(K16, strict=True):
            torch.mv(torch.ones(2, 2, dtype=torch.int64), torch.ones(2, dtype=torch.int64))
