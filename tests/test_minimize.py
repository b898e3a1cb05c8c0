"""Tests of readable witnesses (mmaformal.query.minimize): the minimized witness still separates
the models when replayed concretely (through simulate on .npy-form tiles, not the query's own
replay), has no more non-zero products than the solver's raw witness (counted here from exact
values), and prints as one line in the style of [Xie2025]'s Equation 10."""
from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from mmaformal import isa
from mmaformal.cli import main
from mmaformal.query import distinguish as D
from mmaformal.query import minimize as M
from mmaformal.query import prove as P
from mmaformal.query.claims import equivalence as CE
from mmaformal.simulate import bits_of, simulate, value_of

V70 = "sm70/mma.m8n8k4.f32.f16.f16.f32"
V75 = "sm75/mma.m16n8k8.f32.f16.f16.f32"
H90 = "sm90/mma.m16n8k8.f32.f16.f16.f32"


def _is_zero(bits: int, f: str) -> bool:
    return value_of(bits, f) in ("0", "-0")


def _products(w) -> int:
    return sum(1 for x, y in zip(w.a, w.b) if not _is_zero(x, w.fa) and not _is_zero(y, w.fb))


def _paired_with_zero(w) -> int:
    return sum(1 for x, y in zip(w.a, w.b) if _is_zero(x, w.fa) != _is_zero(y, w.fb))


def _simulate(name: str, w) -> int:
    """The output of instruction `name` (its primary theory) on witness w as one tile."""
    ins = isa.lookup(name)
    dt = {16: np.uint16, 32: np.uint32}
    A = np.zeros((ins.m, ins.k), dt[16])
    B = np.zeros((ins.k, ins.n), dt[16])
    C = np.zeros((ins.m, ins.n), dt[32])
    A[0, :len(w.a)] = w.a
    B[:len(w.b), 0] = w.b
    C[0, 0] = w.c
    return int(simulate(ins, A, B, C)[0, 0])


@pytest.fixture(scope="module")
def pair():
    raw = D.distinguish(V70, V75, raw=True)
    mini = D.distinguish(V70, V75, minimize_timeout=5, minimize_budget=30)
    return raw, mini


def test_minimized_witness_still_separates_when_replayed(pair):
    raw, mini = pair
    assert raw["minimized"] is None and mini["minimized"] is not None
    w = mini["found"][0].witness
    a, b = _simulate(V70, w), _simulate(V75, w)
    assert a != b
    assert mini["found"][0].outputs == {V70: a, V75: b}


def test_minimized_has_no_more_nonzero_products(pair):
    raw, mini = pair
    wr, wm = raw["found"][0].witness, mini["found"][0].witness
    assert _products(wm) <= _products(wr)
    rep = mini["minimized"]
    assert rep["before"]["products"] >= rep["after"]["products"] == _products(wm)
    first = rep["queries"][0]
    if first["step"] == "no operand paired with a zero" and first["status"] == "sat":
        assert _paired_with_zero(wm) == 0
    # every query has a status and a time; the total is within the budget (and a little)
    assert all(q["status"] in ("sat", "unsat", "unknown", "skipped", "kept", "rejected")
               for q in rep["queries"])
    assert rep["seconds"] <= 30 + 6
    # an unanswered query is a time-out, never a solver error (e.g. a query it cannot parse)
    assert not [q for q in rep["queries"] if q.get("reason", "").startswith("error")]


def test_measure_counts_like_the_exact_values(pair):
    for res in pair:
        w = res["found"][0].witness
        m = M.measure(w)
        assert m["products"] == _products(w) and m["paired_with_zero"] == _paired_with_zero(w)


def test_equation_line_of_xie2025_equation10():
    f16 = lambda v: bits_of(Fraction(v), "f16")
    a = [f16(-8192), f16(Fraction(-1, 2)), f16(Fraction(-1, 4)), f16(Fraction(-1, 8))] + [0] * 12
    b = [f16(1024), f16(1), f16(1), f16(1)] + [0] * 12
    w = D.Witness("f16", "f16", "f32", a, b, bits_of(Fraction(2 ** 23), "f32"))
    assert M.equation(w) == ("a = (-2^13, -0.5, -0.25, -0.125, 0, ..., 0), "
                             "b = (2^10, 1, 1, 1, 0, ..., 0), c = 2^23")
    d = bits_of(Fraction(-3, 4), "f32")
    assert M.equation(w, {"sm90": d}, "f32").endswith(": sm90 = -0.75")
    assert M._num(Fraction(3 * 2 ** 40)) == "3*2^40" and M._num("-0") == "-0"


def test_cli_prints_one_line_and_raw_skips(capsys):
    rc = main(["distinguish", V70, V75, "--minimize-timeout", "5"])
    out = capsys.readouterr().out
    assert rc == 0 and "in one line: a = (" in out and "minimized in" in out
    rc = main(["distinguish", V70, V75, "--raw", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and set(d) == {"status", "witness", "outputs", "seconds"}


def test_prove_equiv_refutation_is_minimized_and_printed_in_one_line(capsys):
    A, B = D.resolve_pair(H90, H90 + "[F=24]")
    res = CE.prove_equiv(A, B, method="monolithic", minimize_timeout=5, timeout=60)
    assert res["status"] == "refuted" and res["minimized"] is not None
    w = D.Witness.from_json(res["witness"], "f16", "f16", "f32")
    assert D.evaluate(A, w) != D.evaluate(B, w)
    assert _products(w) == res["minimized"]["after"]["products"]
    assert "in one line: a = (" in P.render(res)


def test_timeout_must_be_positive(capsys):
    for verb in (["distinguish", V70, V75], ["prove", "monotonic", V70],
                 ["probes", V70, "--out", "x.npz"], ["infer", "--space", "x", "--oracle", V70]):
        for bad in ("0", "-1", "nan", "soon"):
            assert main(verb + ["--timeout", bad]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "--timeout" in err and "Traceback" not in err
