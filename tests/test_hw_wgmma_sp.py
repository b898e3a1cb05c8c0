"""Sparse wgmma (wgmma.mma_async.sp) harness without a GPU: names, tables, kernels, metadata.

The kernels are assembled with the local nvcc (skipped without one). A CPU stand-in for the
GPU (numpy-backed fake ``cupy`` and an emulator that reads the metadata words by a *hardware*
map) checks the plumbing: the exact self-check passes on the declared map and fails on a twin
map, and the metadata probe recovers whichever map the emulated hardware uses.
"""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest

from mmaformal import isa
from mmaformal.hw import check, forms, kernels, layouts, runner, sparse, validate

NVCC = runner.nvcc_path()


def test_names_match_the_catalog():
    cat = {n for n, i in isa.catalog().items() if n.startswith("sm90/wgmma.sp.")}
    assert {n for n in forms.instructions(None, "sm90", family="wgmma")
            if forms.spec(n).sparse} == cat
    assert len(cat) == 528
    s = forms.spec("hopper/wgmma.sp.m64n240k64.satfinite.s32.u8.s8")
    assert (s.m, s.n, s.k, s.a_cols, s.sparse, s.sat) == (64, 240, 64, 32, "sp", True)
    assert s.ptx == "wgmma.mma_async.sp.sync.aligned.m64n240k64.satfinite.s32.u8.s8"
    for bad in ("sm90/wgmma.sp.m64n40k64.s32.s8.s8", "sm90/wgmma.sp.m64n8k32.f32.tf32.tf32",
                "sm90/wgmma.sp.m64n264k32.f32.f16.f16"):
        with pytest.raises(ValueError):
            forms.spec(bad)


@pytest.mark.parametrize("name", ["sm90/wgmma.sp.m64n8k32.f16.f16.f16",
                                  "sm90/wgmma.sp.m64n136k16.f32.tf32.tf32",
                                  "sm90/wgmma.sp.m64n256k64.f32.e5m2.e4m3",
                                  "sm90/wgmma.sp.m64n48k64.s32.s8.u8"])
def test_tables_are_bijections(name):
    s = forms.spec(name)
    t = layouts.operand_tables(name)
    for role, (r, c) in (("a", (64, s.k // 2)), ("b", (s.k, s.n)), ("c", (64, s.n))):
        v = t[role][t[role] >= 0]
        assert np.array_equal(np.sort(v), np.arange(r * c)), role


@pytest.mark.parametrize("fmt", ["f16", "tf32", "e4m3", "s8"])
@pytest.mark.parametrize("sel", [0, 1])
def test_declared_map_covers_every_chunk_once(fmt, sel):
    if sel and fmt in ("e4m3", "s8"):
        return
    lay = sparse.declared(fmt, sel)
    g, _, _ = sparse.group(fmt)
    k = {"f16": 32, "tf32": 16}.get(fmt, 64)
    cells = {tuple(x) for x in lay.reshape(-1, 2) if x[0] >= 0}
    assert cells == {(r, c) for r in range(64) for c in range(k // g)}
    assert (lay[..., 0] >= 0).sum() == 64 * k // g
    # the row pattern of lane 0 (row 0) in the low bits, as the mma.sp figures say
    pos = sparse.random_kept(fmt, k, (2, 64), np.random.default_rng(1))
    w = sparse.meta_words(pos, fmt, lay)
    nib = sparse.nibbles(pos, fmt)
    t0 = 2 * sel
    assert w[0, t0] & 0xF == nib[0, 0, 0]


#: CuTe's metadata (thread, value) layouts of sparse GMMA: ((2, 2, 8, 4) threads, values) shapes
#: and strides into the 64 x K metadata tensor (column-major, m + 64 k), and the metadata bits
#: per logical k element. Source: NVIDIA CUTLASS include/cute/atom/mma_traits_sm90_gmma_sparse.hpp
#: (ELayout_64x32 for f16/bf16, ELayout_64x16 for tf32, ELayout_64x64 for e4m3/e5m2/s8/u8).
CUTE_ELAYOUT = {
    "f16": (((2, 2, 8, 4), (1024, 0, 1, 16)), ((16, 2), (64, 8)), 32, 1),
    "tf32": (((2, 2, 8, 4), (512, 0, 1, 16)), ((8, 2), (64, 8)), 16, 2),
    "s8": (((2, 2, 8, 4), (8, 2048, 1, 16)), ((32,), (64,)), 64, 1),
}


@pytest.mark.parametrize("fmt", ["f16", "tf32", "s8"])
def test_declared_map_is_cutes_metadata_layout(fmt):
    """An independent reading: CuTe's layouts, evaluated here by their shapes and strides, put
    every metadata bit where the declared map puts its nibble (the thread pair that CuTe fills
    twice, stride 0, is the one the sparsity selector picks)."""
    (tsh, tst), (vsh, vst), k, bits = CUTE_ELAYOUT[fmt]
    g = 2 if fmt == "tf32" else 4

    def coord(i, shape, stride):
        off = 0
        for n, st in zip(shape, stride):
            off += (i % n) * st
            i //= n
        return off

    for sel in ((0, 1) if fmt != "s8" else (0,)):
        lay = sparse.declared(fmt, sel)
        for t in range(128):
            pair = (t >> 1) & 1
            for v in range(int(np.prod(vsh))):
                idx = coord(t, tsh, tst) + coord(v, vsh, vst)
                m, kk = idx % 64, idx // 64
                q = v * bits // 4
                if tst[1] == 0 and pair != sel:       # the pair the selector does not read
                    assert (lay[t, q] == -1).all(), (t, q)
                else:
                    assert tuple(lay[t, q]) == (m, kk // g), (fmt, sel, t, v)
        assert k // g * 64 == (lay[..., 0] >= 0).sum()


def test_nibbles_follow_ptx():
    # f16 2:4: kept 0,1 -> 0b0100; kept 2,3 -> 0b1110; tf32 1:2: element 0 -> 0b0100, 1 -> 0b1110
    assert sparse.nibbles(np.array([[0, 1, 2, 3]]), "f16").tolist() == [[0b0100, 0b1110]]
    assert sparse.nibbles(np.array([[0, 1]]), "tf32").tolist() == [[0b0100, 0b1110]]


@pytest.mark.skipif(NVCC is None, reason="no nvcc")
def test_kernels_assemble_for_sm90a(tmp_path):
    names = ["sm90/wgmma.sp.m64n8k32.f32.f16.f16", "sm90/wgmma.sp.m64n256k32.f16.f16.f16",
             "sm90/wgmma.sp.m64n256k32.f32.bf16.bf16", "sm90/wgmma.sp.m64n8k16.f32.tf32.tf32",
             "sm90/wgmma.sp.m64n256k64.f16.e4m3.e5m2", "sm90/wgmma.sp.m64n256k64.satfinite.s32.s8.u8",
             "sm90/wgmma.m64n256k32.satfinite.s32.u8.s8", "sm90/wgmma.m64n240k32.s32.s8.s8"]
    for i, n in enumerate(names):
        cu = tmp_path / f"k{i}.cu"
        cu.write_text(kernels.source(n))
        r = subprocess.run([NVCC, "-cubin", forms.TARGETS["sm90"].nvcc_flag, "-o", str(tmp_path / f"k{i}.cubin"),
                            str(cu)], capture_output=True, text=True)
        assert r.returncode == 0, (n, r.stderr[-800:])
    cu = tmp_path / "sel1.cu"
    cu.write_text(kernels.source(names[0], sel=1))
    assert subprocess.run([NVCC, "-cubin", forms.TARGETS["sm90"].nvcc_flag, "-o", str(tmp_path / "s.cubin"),
                           str(cu)], capture_output=True).returncode == 0


# ---------------------------------------------------------------------------------------------
# CPU stand-in for the GPU
# ---------------------------------------------------------------------------------------------

ml_dtypes = pytest.importorskip("ml_dtypes")
_FLOAT = {"f32": np.float32, "tf32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
          "e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


class _Arr(np.ndarray):
    def get(self):
        return np.asarray(self)


def _w(x):
    return np.asarray(x).view(_Arr)


def _fake_cupy():
    cp = types.ModuleType("cupy")
    cp.__version__ = "fake"
    cp.asarray = lambda x, dtype=None: _w(np.array(x, dtype=dtype))
    cp.ascontiguousarray = lambda x: _w(np.ascontiguousarray(x))
    cp.take = lambda x, i, axis=None: _w(np.take(np.asarray(x), np.asarray(i), axis=axis))
    for f in ("zeros", "empty", "full", "arange", "broadcast_to"):
        setattr(cp, f, (lambda g: lambda *a, **k: _w(g(*a, **k)))(getattr(np, f)))
    cp.uint32 = np.uint32
    rt = types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        getDeviceProperties=lambda i: {"name": b"Fake H100", "major": 9, "minor": 0,
                                       "multiProcessorCount": 2},
        driverGetVersion=lambda: 0, runtimeGetVersion=lambda: 0)
    cp.cuda = types.SimpleNamespace(runtime=rt, Device=lambda *a: types.SimpleNamespace(id=0))
    return cp


def _emulator(name: str, hw_map: np.ndarray):
    """D = A*B + C of one tile per image row, the metadata read through ``hw_map``."""
    s = forms.spec(name)
    tabs = layouts.operand_tables(name)
    g, kept, _ = sparse.group(s.atype)

    def val(img, tab, fmt, shape):
        img = np.asarray(img)
        if fmt in ("f16", "bf16", "e4m3", "e5m2") and img.dtype == np.uint32:
            pass
        flat = np.zeros((img.shape[0], shape[0] * shape[1]), img.dtype)
        flat[:, tab[tab >= 0]] = img[:, tab >= 0]
        if fmt in check._INT:
            v, _ = check.decode_ints(flat, fmt)
            return v.astype(np.float64).reshape(-1, *shape)
        if fmt == "tf32":
            flat = flat & np.uint32(0xFFFFE000)
        return flat.view(_FLOAT[fmt]).astype(np.float64).reshape(-1, *shape)

    def f(grid, block, args):
        a, b, c, d, T, e = args[:6]
        T = int(T)
        A = val(a, tabs["a"], s.atype, (64, s.k // 2))
        B = val(b, tabs["b"], s.btype, (s.k, s.n))
        C = val(c, tabs["c"], s.ctype, (64, s.n))
        e = np.asarray(e).astype(np.int64)
        pos = np.full((T, 64, s.k // g, kept), -1)
        for tid, q in np.argwhere(hw_map[..., 0] >= 0):
            r, ch = hw_map[tid, q]
            nib = (e[:, tid] >> (4 * q)) & 0xF
            pos[:, r, ch] = (nib[:, None] & 3) >> 1 if kept == 1 else \
                np.stack([nib & 3, nib >> 2], -1)
        Ad = np.zeros((T, 64, s.k // g, g))
        np.put_along_axis(Ad, pos, A.reshape(T, 64, s.k // g, kept), -1)
        R = Ad.reshape(T, 64, s.k) @ B + C
        if s.dtype == "s32":
            R = R.astype(np.int64)
            R = np.clip(R, -2**31, 2**31 - 1) if s.sat else R
            D = (R & 0xFFFFFFFF).astype(np.uint32).reshape(T, -1)
        else:
            D = R.astype(_FLOAT[s.dtype]).view(s.storage("d")).reshape(T, -1)
        np.asarray(d)[...] = D[:, tabs["d"]]

    return f


def _twin(lay: np.ndarray) -> np.ndarray:
    """A wrong map: the nibbles of lanes 4g and 4g + 1 swapped (rows g and g + 8 for 8-bit)."""
    out = lay.copy()
    for tid in range(0, 128, 4):
        out[[tid, tid + 1]] = lay[[tid + 1, tid]]
    return out


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    runner.sm_count.cache_clear()
    runner.device_tables.cache_clear()
    state = {"map": None}

    def fn(name, sel=0):
        s = forms.spec(name)
        hw = state["map"] if state["map"] is not None else sparse.declared(s.atype, sel)
        return _emulator(name, hw)
    monkeypatch.setattr(runner, "function", fn)
    yield state
    runner.sm_count.cache_clear()
    runner.device_tables.cache_clear()


@pytest.mark.parametrize("name", ["sm90/wgmma.sp.m64n8k32.f32.f16.f16",
                                  "sm90/wgmma.sp.m64n16k16.f32.tf32.tf32",
                                  "sm90/wgmma.sp.m64n8k64.f32.e4m3.e5m2",
                                  "sm90/wgmma.sp.m64n24k64.satfinite.s32.s8.u8"])
def test_probe_and_selfcheck_on_emulated_hardware(fake_gpu, name):
    s = forms.spec(name)
    ok, msg = check.layout_selfcheck(name, tiles=4)
    assert ok, msg
    p = check.meta_probe(name)
    assert p["consistent"] and p["agrees"], p["message"]
    # hardware with another map: the declared map fails the exact check, the probe finds the
    # hardware's map and the check passes with it
    fake_gpu["map"] = _twin(sparse.declared(s.atype))
    ok, msg = check.layout_selfcheck(name, tiles=4)
    assert not ok and "differ" in msg
    assert check.layout_selfcheck(name, tiles=4, uniform=True)[0]     # no map can fail this one
    p = check.meta_probe(name)
    assert p["consistent"] and not p["agrees"], p["message"]
    assert np.array_equal(p["layout"], fake_gpu["map"])
    assert check.layout_selfcheck(name, tiles=4, layout=p["layout"])[0]


def test_selector_one_uses_the_other_thread_pair(fake_gpu):
    name = "sm90/wgmma.sp.m64n8k32.f32.bf16.bf16"
    ok, msg = check.layout_selfcheck(name, sel=1, tiles=4)
    assert ok, msg
    p = check.meta_probe(name, sel=1)
    assert p["agrees"], p["message"]
    assert (p["layout"][0::4, :, 0] == -1).all()           # lane 4g gives nothing under sel 1


def test_runner_run_dense_a_and_integer_campaign(fake_gpu, tmp_path):
    name = "sm90/wgmma.sp.m64n16k64.s32.u8.s8"
    rng = np.random.default_rng(3)
    pos = sparse.random_kept("u8", 64, (2, 64), rng)
    comp = rng.integers(0, 9, size=(2, 64, 32))
    A = sparse.expand(comp, pos, "u8")
    B = rng.integers(-4, 5, size=(2, 64, 16))
    C = rng.integers(-9, 9, size=(2, 64, 16))
    d = runner.run(name, check.encode_ints(A, "u8"), check.encode_ints(B, "s8"),
                   check.encode_ints(C, "s32"))
    assert (check.decode_ints(d, "s32")[0] == A @ B + C).all()
    # the same through the compressed A and its positions, and with a batch shape
    Ac, P = sparse.compress(check.encode_ints(A, "u8"), "u8")
    d2 = runner.run(name, Ac[None], check.encode_ints(B, "s8")[None],
                    check.encode_ints(C, "s32")[None], meta=P[None])
    assert d2.shape == (1, 2, 64, 16) and (d2[0] == d).all()
    # an exact integer campaign (wrap-around and extremes) against the theory: 0 mismatches,
    # through the one campaign path (validate.campaign) with the declared map
    r = validate.campaign(name, 20_000, seed=1, out_dir=tmp_path, chunk_dots=4096,
                          layout=sparse.declared("u8"))
    assert r["tests"] >= 20_000 and r["mismatches"] == 0, r["counterexamples"][:1]
    z = np.load(tmp_path / "sm90_wgmma.sp.m64n16k64.s32.u8.s8.npz")
    for k in r["classes"]:
        sim, hw = validate.replay_sample(name, z, k)
        assert (sim == hw).all(), k
    # the digests: regenerated inputs through the theory give the (emulated) hardware's D
    assert all(validate.replay_digest(r).values())
    # and a theory that clamps where this one wraps gives another digest somewhere
    twin = theory.resolve(name).replace(sat="always", id="clamping")
    v = validate.replay_digest(r, theory=twin)
    assert not v["overflow"] and v["normal"]
    # the same through the command line (the record as written)
    import json
    rec = tmp_path / "sm90_wgmma.sp.m64n16k64.s32.u8.s8.json"
    from mmaformal import cli
    assert cli.main(["hw", "wgmma-sp", "--out", str(tmp_path / "rp"), "--replay", str(rec)]) == 0
    v = json.loads((tmp_path / "rp" / "digest-replay.json").read_text())["verdicts"][name]
    assert v["all_equal"] and len(v["classes_equal"]) == 10


def test_hw_validate_runs_sparse_wgmma(fake_gpu, tmp_path, capsys):
    from mmaformal import cli
    name = "sm90/wgmma.sp.m64n16k64.satfinite.s32.s8.s8"
    assert cli.main(["hw", "validate", name, "--tests", "10240", "--out", str(tmp_path)]) == 0
    import json
    r = json.loads((tmp_path / "sm90_wgmma.sp.m64n16k64.satfinite.s32.s8.s8.json").read_text())
    assert r["tests"] >= 10240 and r["mismatches"] == 0 and len(r["classes"]) == 10
    assert all(len(v["sha256"]) == 64 for v in r["classes"].values())


# ---------------------------------------------------------------------------------------------
# The H100 records, replayed without a GPU: two device calls of 2026-11-25, the first
# (counterexamples/hw/2026-11-25-h100-issue14d/) ran 320 of the 544 new sm90 forms, the
# second (counterexamples/hw/2026-11-25-h100-issue14e/) the other 224
# ---------------------------------------------------------------------------------------------

import hw_records  # noqa: E402
from mmaformal import paths, theory  # noqa: E402
from mmaformal.hw import campaigns  # noqa: E402

BATCHES = [hw_records.campaign(d) for d in ("2026-11-25-h100-issue14d", "2026-11-25-h100-issue14e")]
RECORDS = [r for d in BATCHES for r in d.records("sm90_*.json")]


def new_sm90_forms() -> set[str]:
    """Issue 14's new sm90 wgmma forms, read from the catalog: every sparse wgmma and the
    integer wgmma with N = 240 or 256 (dense and sparse)."""
    import re
    cat = isa.catalog()
    sp = {n for n in cat if n.startswith("sm90/wgmma.sp.")}
    dense = {n for n in cat if re.fullmatch(
        r"sm90/wgmma\.m64n(240|256)k32(\.satfinite)?\.s32\.[su]8\.[su]8", n)}
    return sp | dense


def coverage(batches) -> dict[str, list[str]]:
    """Problems per form over the campaigns: a form of ``new_sm90_forms`` with no record,
    with more than one, a record that is not a clean >= 10^7-dot run of the form's primary
    theory over the ten input classes, or a batch summary that disagrees with the record."""
    import json
    recs: dict[str, list[tuple[str, dict]]] = {}
    runs: dict[str, list[dict]] = {}
    for d in batches:
        for p in d.records("sm90_*.json"):
            r = p.data
            recs.setdefault(r["instruction"], []).append((d.name, r))
        for f in ("batch-summary.json", ):
            for e in d.json(f):
                runs.setdefault(e["instruction"], []).append(dict(e, batch=d.name))
        for e in d.json("wgmma-sp-batch.json")["results"]:
            if "skipped" not in e:
                runs.setdefault(e["instruction"], []).append(dict(e, batch=d.name))
    bad: dict[str, list[str]] = {}
    for name in sorted(new_sm90_forms() | set(recs)):
        why = []
        rs = recs.get(name, [])
        if len(rs) != 1:
            why.append(f"{len(rs)} records")
        th = theory.resolve(name)
        for b, r in rs:
            cls = r["classes"]
            if name not in new_sm90_forms():
                why.append("not a new form")
            if r["theory"] != th.id:
                why.append(f"{b}: theory {r['theory']} is not the primary {th.id}")
            if r["tests"] < 10_000_000 or r["mismatches"] != 0:
                why.append(f"{b}: {r['tests']} dots, {r['mismatches']} mismatches")
            if len(cls) != 10 or sum(c["tests"] for c in cls.values()) != r["tests"] \
                    or any(c["mismatches"] for c in cls.values()):
                why.append(f"{b}: classes do not add up to a clean run")
            for e in runs.get(name, []):
                if e.get("error") or (e["batch"], e["tests"], e["mismatches"]) != \
                        (b, r["tests"], r["mismatches"]):
                    why.append(f"{e['batch']}: batch result {e} is not the record's")
        if why:
            bad[name] = why
    return bad


def test_every_new_sm90_form_has_one_clean_campaign():
    """The 544 new sm90 forms (528 wgmma.sp, 16 dense integer wgmma N = 240/256) each have
    exactly one record over the two folders: >= 10^7 dot products, 0 mismatches, the primary
    theory corroborated."""
    forms = new_sm90_forms()
    assert len(forms) == 544
    bad = coverage(BATCHES)
    assert not bad, list(bad.items())[:5]
    assert {theory.resolve(n).status for n in forms} == {"corroborated"}
    # a folder alone does not cover the forms: the check sees a missing record
    first = coverage(BATCHES[:1])
    assert len(first) == 224 and all(w == ["0 records"] for w in first.values())


def test_both_device_calls_read_the_metadata_by_the_declared_map():
    for d in BATCHES:
        b = d.json("wgmma-sp-batch.json")
        assert b["device"]["device"] == "NVIDIA H100 80GB HBM3" and not b["compile_errors"]
        assert set(b["layouts"].values()) == {"declared (probe agrees)"}, d.name
        assert len(b["probes"]) == 10
        for k, pr in b["probes"].items():
            assert pr["consistent"] and pr["agrees"], (d.name, k)
            assert pr["selfcheck"][0] and pr["selfcheck_uniform"][0], (d.name, k)


def test_provenance_states_the_records_totals():
    """The sparse theories' provenance gives the forms and dot products of both folders (and
    their rivals' mismatches), as summed here from the records."""
    import collections
    import json
    per = collections.defaultdict(lambda: {"forms": collections.Counter(), "dots": 0,
                                           "rivals": collections.Counter(),
                                           "rival_tests": collections.Counter()})
    for d in BATCHES:
        for p in d.records("sm90_wgmma.sp.*.json"):
            r = p.data
            t = per[r["theory"]]
            t["forms"][d.name] += 1
            t["dots"] += r["tests"]
            for k, v in r["rivals"].items():
                t["rivals"][k] += v["mismatches"]
                t["rival_tests"][k] += v["tests"]
    assert len(per) == 7
    db = theory.default()
    for tid, t in per.items():
        n = sum(t["forms"].values())
        prov = db.get(tid).provenance
        a, b = (t["forms"][d.name] for d in BATCHES)
        assert (f"{BATCHES[0].name}/, {a} forms" in prov and f"{BATCHES[1].name}/, {b} forms"
                in prov and f"all {n} of its wgmma.sp forms" in prov
                and f"{t['dots']:,} in all, 0 mismatches" in prov), (tid, prov)
        assert "device time ran out" not in prov, tid
        for rid in t["rivals"]:
            rprov = db.get(rid).provenance
            assert db.get(rid).status == "refuted"
            assert (f"{t['rivals'][rid]:,} of {t['rival_tests'][rid]:,} hardware dot products "
                    f"(all {n} wgmma.sp forms) differ") in rprov, (rid, rprov)
            assert all(f"{d.name}/" in rprov for d in BATCHES), rid


@pytest.mark.parametrize("d", BATCHES, ids=lambda d: d.name)
def test_digest_verdicts_current(d):
    """Every sparse record of both device calls was replayed in full (10^7 inputs regenerated
    from its seed, the primary theory's D hashed per class: digest-replay.json) with today's
    primary theory: a changed theory makes the verdict stale and this fails until it is
    replayed again (mmaformal hw wgmma-sp --out DIR --replay REC...)."""
    v = d.json("digest-replay.json")["verdicts"]
    names = {p.data["instruction"] for p in d.records("sm90_wgmma.sp.*.json")}
    assert set(v) == names and len(v) in (304, 224)
    for name, r in v.items():
        th = theory.resolve(name)
        assert r["theory"] == th.id and r["theory_hash"] == th.hash(), name
        assert r["all_equal"] and len(r["classes_equal"]) == 10, name
        assert all(r["classes_equal"].values()), name


def test_coverage_check_finds_a_dirty_or_doubled_record(tmp_path):
    import json
    import shutil
    dirs = [d.extract(tmp_path / d.name, arrays=False) for d in BATCHES]

    def opened():
        return [campaigns.open_campaign(d) for d in dirs]
    assert not coverage(opened())
    rec = next(dirs[1].glob("sm90_wgmma.sp.*.json"))
    r = json.loads(rec.read_text())
    r["mismatches"] = 1
    rec.write_text(json.dumps(r))
    assert list(coverage(opened())) == [r["instruction"]]
    r["mismatches"] = 0
    rec.write_text(json.dumps(r))
    shutil.copy(rec, dirs[0] / rec.name)             # the same form in both folders
    assert coverage(opened())[r["instruction"]][0] == "2 records"


@pytest.mark.parametrize("rec", hw_records.params(RECORDS))
def test_record_replays(rec):
    """Every class's kept 8 x 8 block of hardware outputs is reproduced by the theory that the
    campaign ran (its hash unchanged), and a corroborated primary had a clean >= 10^7 run.
    Default run: the curated records (tests/hw_records.py); `-m slow`: every record."""
    r = rec.data
    name = r["instruction"]
    th = theory.resolve(name)
    assert r["theory"] == th.id
    z = rec.arrays()
    classes = sorted({k.rsplit(".", 1)[0] for k in z})
    assert len(classes) == 10
    bad = 0
    for k in classes:
        sim, hw = validate.replay_sample(name, z, k)
        bad += int((sim != hw).sum())
    if th.status == "corroborated":
        assert r["tests"] >= 10_000_000 and r["mismatches"] == 0
        assert bad == 0, f"{name}: {th.id} no longer reproduces the H100 sample"
    for tid, rv in r.get("rivals", {}).items():   # a refuted rival's counterexamples still hold
        if theory.default().get(tid).status == "refuted" and rv["counterexamples"]:
            cx = rv["counterexamples"][0]
            assert _one(name, cx, tid) != int(cx["hardware"], 16)
            assert _one(name, cx, None) == int(cx["hardware"], 16)


def _one(name, cx, tid):
    """One recorded dot product (row 0, column 0 of a tile) through simulate."""
    from mmaformal import fp
    from mmaformal.simulate import simulate
    ins = isa.lookup(name)
    dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}
    a = np.array([int(x, 16) for x in cx["a"]], dt[fp.fmt(ins.a).storage])
    A = np.zeros((1, ins.m, len(a)), a.dtype)
    A[0, :] = a
    P = None
    if ins.sparse:
        P = np.zeros((1, ins.m, len(a)), np.uint8)
        P[0, :] = np.array(cx["meta"], np.uint8)
    B = np.zeros((1, ins.k, ins.n), dt[fp.fmt(ins.b).storage])
    B[0, :, 0] = [int(x, 16) for x in cx["b"]]
    C = np.zeros((1, ins.m, ins.n), dt[fp.fmt(ins.c).storage])
    C[0, 0, 0] = int(cx["c"], 16)
    return int(simulate(name, A, B, C, meta=P, theory=tid)[0, 0, 0])


# ---------------------------------------------------------------------------------------------
# docs/hardware.md's table of sm90 families: counted here from the records and the catalog
# ---------------------------------------------------------------------------------------------

def _family(ins) -> str:
    op = ins.qualifier.split(".")[0]
    sp = ".sp" if ins.sparse else ""
    return ("integer " if ins.integer else "") + op + sp


def test_readme_sm90_family_table_counts_the_records():
    """Each row of docs/hardware.md's "sm90 forms on the silicon, by family" gives the catalog's forms of
    that family and how many have a clean >= 10^7 campaign (0 mismatches against the form's
    primary theory, or every class's digest equal on replay for the digest records); a row
    names forms not run exactly when some lack one, and every sm90 form has one."""
    import re
    clean: set[str] = set()
    for p in (p for c in hw_records.every() for p in c.records("sm90_*.json")):
        r = p.data
        if "instruction" not in r or r.get("tests", 0) < 10_000_000:
            continue
        name = r["instruction"]
        if "mismatches" in r:
            ok = r["mismatches"] == 0 and r.get("theory") == theory.resolve(name).id
        else:
            v = p.campaign.json("digest-replay.json")["verdicts"]
            ok = name in v and v[name]["all_equal"] and v[name]["theory"] == \
                theory.resolve(name).id
        if ok:
            clean.add(name)
    cat = [i for i in isa.catalog().values() if i.arch == "sm90"]
    want: dict[str, list[int]] = {}
    for i in cat:                     # the table has one wmma row (17 + 18 integer forms)
        c = want.setdefault(_family(i).replace("integer wmma", "wmma"), [0, 0])
        c[0] += 1
        c[1] += i.name in clean
    readme_path = paths.shipped("counterexamples").parent / "docs" / "hardware.md"
    if not readme_path.exists():
        pytest.skip("docs/hardware.md is not shipped with an installed package")
    readme = readme_path.read_text()
    sec = readme.split("## sm90 forms on the silicon, by family", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (.+?) \| (\d+)[^|]* \| (\d+) \|.* \| ([^|]+) \|$", sec, re.M)
    got = {}
    for fam, n, ok, not_run in rows:
        key = re.sub(r"[`]", "", fam).split(" (")[0].replace("wmma.mma", "wmma")
        key = key.replace("mma.sp, mma.sp::ordered_metadata", "mma.sp")
        got[key] = [int(n), int(ok)]
        assert (not_run == "-") == (n == ok), (fam, not_run)
    assert got == want
    # the goal: every sm90 form has a clean campaign
    missing = sorted(i.name for i in cat if i.name not in clean)
    assert not missing, (len(missing), missing[:5])
