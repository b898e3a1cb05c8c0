"""Layer 5, query/claims: what claims say. prove's built-in claims, the Claim API for claims
users write over the symbolic model, and the registry of claims written with it.

The base of the package (this package's place in the query order):

    core        prove's built-in claims (equiv, symmetry, monotonic, bound, unobservable):
                statements, the result dict (`outcome`), concrete checks of a witness
    constraint  the constraint language of user claims (int(a,b) and abs(a,b) < 2^p ...)
    api         Claim: a statement, a constraint, a broken twin; solved through the solver
                layer, exported as SMT-LIB2, stored in proofs/<name>/
    exact_fdpa  `prove exact` decomposed for T-FDPA chains: lemmas per product, block term and
                alignment exponent, with the written combination argument
    exact       `prove exact`: D is the exact (or correctly rounded) c + a.b under a constraint

Higher in the query order, each with its own place (tests/test_imports.py, QUERY), not
re-exported here: the decomposed proofs' base (`common`: the traced structure, the lemma runs,
the monolithic query, the claims' real order) and lemmas by operation family (`bound_fdpa`,
`bound_tr`, `monotonic_fdpa`, `monotonic_tr`), then one module per built-in claim
(`symmetry`, `equivalence`, `unobservable`, `monotonic`, `bound`: statement, broken twin,
lemmas), which query.prove's CLAIM_MODULES names.

REGISTRY maps a user claim's name to the module that defines it (its `add_parser(sub,
common)` adds `mmaformal prove NAME`); CLAIMS lists the built-in claims and these.

May import: mmaformal.query.model, .frame, .solvers, .store, the layers below (mma, fp, bits;
simulate lazily).
Invariant: the base submodules import each other in the order above and never this package,
so the names re-exported here are the base's whole public face.
"""
from __future__ import annotations

from . import exact
from .api import Claim, Symbolic
from .constraint import CONSTRAINT_HELP, Constraint, parse_constraint
from .core import (SYMMETRY_STATEMENT, SYMMETRY_STATEMENT_INT, approx_int, bound_blocks,
                   bound_concrete, neg_int, neg_witness, outcome, value_lt)
from .core import CLAIMS as BUILTIN_CLAIMS

#: user claims written with the Claim API: name -> module (add_parser, run)
REGISTRY = {exact.NAME: exact}

#: every claim `mmaformal prove` takes
CLAIMS = BUILTIN_CLAIMS + tuple(REGISTRY)

__all__ = ["CLAIMS", "BUILTIN_CLAIMS", "REGISTRY", "Claim", "Symbolic", "Constraint",
           "parse_constraint", "CONSTRAINT_HELP", "SYMMETRY_STATEMENT", "SYMMETRY_STATEMENT_INT",
           "outcome", "value_lt", "neg_witness", "neg_int", "approx_int", "bound_blocks",
           "bound_concrete"]
