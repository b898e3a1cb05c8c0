"""Layer 5, query: solver layer, claims (IEEE equivalence, distinguish, prove) and the proofs/
and counterexamples/ stores. May import every layer below it."""
