"""The white-box trace (mmaformal.trace): one frozen dataclass per kind of step, recorded in
evaluation order by mma, theory and the chained models of the query layer, only while
`tracing()` is on, and never changing a result."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from mmaformal import isa, trace
from mmaformal import theory as T
from mmaformal.bits import INT
from mmaformal.simulate import bits_of

RECORDS = [c for c in vars(trace).values()
           if inspect.isclass(c) and dataclasses.is_dataclass(c) and c.__module__ == trace.__name__]


def test_every_record_is_a_frozen_dataclass_with_its_own_label():
    assert len(RECORDS) >= 25 and set(trace.__all__) >= {c.__name__ for c in RECORDS}
    labels = [c.label for c in RECORDS]
    assert len(set(labels)) == len(labels)
    for c in RECORDS:
        params = c.__dataclass_params__
        assert params.frozen and not params.eq, c.__name__
        assert "label" not in {f.name for f in dataclasses.fields(c)}
    rec = trace.BlockOut(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.d = 2


def _dot(name, a, b, c):
    ins = isa.lookup(name)
    th = T.resolve(ins)
    w = lambda f: {"f16": 16, "f32": 32}[f]
    return th.dot(INT, [INT.const(bits_of(x, ins.a), w(ins.a), False) for x in a],
                  [INT.const(bits_of(x, ins.b), w(ins.b), False) for x in b],
                  INT.const(bits_of(c, ins.c), w(ins.c), False))


def test_a_chain_of_two_fused_blocks_is_recorded_in_order():
    name = "sm80/mma.m16n8k16.f32.f16.f16.f32"          # two blocks of L = 8
    a, b = [1] * 16, [0.5] * 16
    d0 = _dot(name, a, b, 0.25)
    with trace.tracing() as notes:
        d = _dot(name, a, b, 0.25)
    assert int(d.v) == int(d0.v)                          # tracing never changes a result
    kinds = [type(n) for n in notes]
    block = [trace.BlockIn, trace.FusedSum] + [trace.Aligned] * 9 + \
        [trace.Sum, trace.Convert, trace.Special, trace.BlockOut]
    assert kinds == block * 2
    b0, b1 = (n for n in notes if isinstance(n, trace.BlockIn))
    assert (b0.k0, b0.L, b1.k0, b1.L) == (0, 8, 8, 8)
    fs = next(n for n in notes if isinstance(n, trace.FusedSum))
    assert len(fs.terms) == len(fs.e) == 9 and fs.mode == "RZ"
    outs = [n.d for n in notes if isinstance(n, trace.BlockOut)]
    assert int(outs[-1].v) == int(d.v) and b1.c is outs[0]


def test_nothing_is_recorded_outside_tracing():
    assert trace.TRACE.get() is None
    trace.record(trace.BlockOut(0))                       # a no-op
    with trace.tracing() as outer:
        with trace.tracing() as inner:
            trace.record(trace.BlockOut(1))
        trace.record(trace.BlockOut(2))
    assert [n.d for n in inner] == [1] and [n.d for n in outer] == [2]
    assert trace.TRACE.get() is None
