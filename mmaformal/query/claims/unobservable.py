"""Layer 5, query/claims/unobservable: the claim `prove unobservable A P=V`.

Claim: the theory with parameter P set to V is equivalent to A's (claim equiv, in its record
folder proofs/unobservable/): the same proof, decomposed first where the two differ only in
the zero-sign / overflow rules, with the same broken twins (claims.equivalence).

May import: claims.equivalence, mmaformal.query.model, .frame.
Invariant: the claim text names the parameter, both values and the theory; the verdict is
prove_equiv's.
"""
from __future__ import annotations

from ..frame import BadInput
from ..model import Model, mutate, parse_param_value, resolve
from .equivalence import prove_equiv

__all__ = ["prove_unobservable", "from_args", "job", "applies"]


def prove_unobservable(A: Model, param: str, value, **kw) -> dict:
    try:
        B = mutate(A, {param: value}, label=f"{A.label}[{param}={value}]")
    except (ValueError, TypeError) as e:
        raise BadInput(str(e).splitlines()[0]) from None
    claim = (f"parameter {param} = {value!r} is unobservable on {A.label} (theory {A.theory.id}, "
             f"{param} = {A.theory.param_dict.get(param)!r}): both give bitwise-identical "
             f"outputs for every input")
    return prove_equiv(A, B, claim=claim, group="unobservable", **kw)


# ============================================================================================
# The verb's hooks (query.prove: CLAIM_MODULES)
# ============================================================================================

def from_args(args, kw: dict) -> dict:
    """`prove unobservable A P=V` (prove.run; kw: the common options)."""
    if "=" not in args.change:
        raise BadInput(f"expected PARAM=VALUE, got {args.change!r}")
    k, v = args.change.split("=", 1)
    return prove_unobservable(resolve(args.A), k.strip(), parse_param_value(v),
                              method=args.method, raw=args.raw,
                              minimize_timeout=args.minimize_timeout, **kw)


def job(m: Model, names, o: dict) -> dict:
    """`prove unobservable --all P=V`: the claim on m, the first instruction of a group
    (prove.prove_job; o: its options, o["change"] = (P, V))."""
    return prove_unobservable(m, o["change"][0], o["change"][1], solver=o["solver"],
                              timeout=o["timeout"], method=o["method"], backends=o["backends"])


def applies(m: Model, change) -> str:
    """Why the change does not apply to m ("" when it does), for prove unobservable --all."""
    if change[0] not in m.theory.param_dict:
        return f"no parameter {change[0]}"
    return ""
