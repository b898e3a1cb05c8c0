"""Layer 5, query/claims: what claims say. prove's built-in claims, the Claim API for claims
users write over the symbolic model, and the names of the claims written with it.

The base of the package (this package's place in the query order):

    core        prove's built-in claims (equiv, symmetry, monotonic, bound, unobservable):
                statements, the result dict (`outcome`), concrete checks of a witness
    constraint  the constraint language of user claims (int(a,b) and abs(a,b) < 2^p ...)
    api         Claim: a statement, a constraint, a broken twin; solved through the solver
                layer, exported as SMT-LIB2, stored in proofs/<name>/

Higher in the query order, each with its own place (tests/test_imports.py, QUERY), not
re-exported here: the decomposed proofs' base (`common`: the traced structure, the one lemma
runner `run_lemmas`, the monolithic query, the claims' real order) and lemmas by operation
family (`bound_fdpa`, `bound_tr`, `monotonic_fdpa`, `monotonic_tr`, `exact_fdpa`: `prove
exact` decomposed for T-FDPA chains, lemmas per product, block term and alignment exponent),
then one module per claim (`symmetry`, `equivalence`, `unobservable`, `monotonic`, `bound`:
statement, broken twin, lemmas; `exact`: D is the exact or correctly rounded c + a.b under a
constraint, written with the Claim API, its proofs stored monolithic or decomposed), which
query.prove names (CLAIM_MODULES, USER_CLAIMS).

USER_CLAIMS names the user claims written with the Claim API (query.prove's USER_CLAIMS maps
each name to its module, whose `add_parser(sub, common)` adds `mmaformal prove NAME`); CLAIMS
lists the built-in claims and these.

May import: mmaformal.query.model, .frame, .solvers, .store, the layers below (mma, fp, bits;
simulate lazily).
Invariant: the base submodules import each other in the order above and never this package,
so the names re-exported here are the base's whole public face.
"""
from __future__ import annotations

from .api import Claim, Symbolic
from .constraint import CONSTRAINT_HELP, Constraint, parse_constraint
from .core import (SYMMETRY_STATEMENT, SYMMETRY_STATEMENT_INT, approx_int, bound_blocks,
                   bound_concrete, neg_int, neg_witness, outcome, value_lt)
from .core import CLAIMS as BUILTIN_CLAIMS

#: user claims written with the Claim API (their modules sit higher in the query order:
#: query.prove.USER_CLAIMS maps each name to its module)
USER_CLAIMS = ("exact",)

#: every claim `mmaformal prove` takes
CLAIMS = BUILTIN_CLAIMS + USER_CLAIMS

__all__ = ["CLAIMS", "BUILTIN_CLAIMS", "USER_CLAIMS", "Claim", "Symbolic", "Constraint",
           "parse_constraint", "CONSTRAINT_HELP", "SYMMETRY_STATEMENT", "SYMMETRY_STATEMENT_INT",
           "outcome", "value_lt", "neg_witness", "neg_int", "approx_int", "bound_blocks",
           "bound_concrete"]
