"""Layer 5, query: questions to SMT solvers about instruction models, and their records.

Its modules, each importing only those on earlier lines (tests/test_imports.py checks it):

    solvers      the solver back-ends (bitwuzla, z3, cvc5, portfolio) on SMT-LIB2 text
    frame        exit codes, BadInput/InternalError, the CLI frame of every verb
    campaign     the campaign runner: independent jobs on a local process pool or Ray,
                 limits enforced from outside, a resumable progress store
    model        the model of a query: Model (a theory on an instruction, mutants, chains),
                 Inputs, Witness, SMT-LIB text, evaluation and replay
    where        the --where constraint language of the verbs
    store        proof records on disk (proofs/, sha256 of canonical query text)
    search       the distinguishing query of two models and the witness search
    claims       prove's claims (a package): here its base (claims.core: statements, result
                 dict, concrete checks; the constraint language, the Claim API for user
                 claims); its other modules take their own places below
    pool         batches of dot-product inputs and their evaluation on numpy lanes
    family       hypothesis families (spaces of candidate theories)
    ieee         the IEEE add/mul/fma equivalence proofs of the fp layer
    cache        the solver-result cache (proofs/cache: proved lemmas by sha256)
    witness_search    concrete counterexample searches on numpy lanes (monotonicity)
    minimize     readable witnesses (fewest non-zero products, ...) and the one-line form
    cex          counterexamples/ records and their replay
    claims.common     the decomposed proofs' base: the traced structure, the lemma runs
    claims.bound_fdpa, claims.bound_tr, claims.monotonic_fdpa, claims.monotonic_tr,
    claims.exact_fdpa
                 the lemmas of one operation family each (bound, monotonicity, exact)
    proofs       prove's records in proofs/<claim>/
    claims.symmetry, claims.equivalence, claims.unobservable, claims.monotonic, claims.bound,
    claims.exact
                 prove's claims, one module each: statement, broken twin, lemmas (exact:
                 the user claim of the Claim API, stored monolithic or decomposed)
    distinguish, prove, probes    the verbs
    infer_oracle, infer_engine, infer_loop, infer_report    the parts of infer, in this
                 order: its oracles, the pool and the engine that evaluates the candidates on
                 it, the loop (uses probes and prove), the report
    infer        the closed loop: the verb over its parts
    settle       probes --settle PARAM: the probe set that settles one open parameter

May import every layer below it. Nothing in mmaformal imports a name through a verb module;
the verbs re-export the names scripts and tests used from them.
"""
