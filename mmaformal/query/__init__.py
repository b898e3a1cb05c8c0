"""Layer 5, query: questions to SMT solvers about instruction models, and their records.

Its modules, each importing only those on earlier lines (tests/test_imports.py checks it):

    solvers      the solver back-ends (bitwuzla, z3, cvc5, portfolio) on SMT-LIB2 text
    frame        exit codes, BadInput/InternalError, the CLI frame of every verb
    campaign     the campaign runner: independent jobs on a local process pool or Ray,
                 limits enforced from outside, a resumable progress store
    model        the model of a query: Model (a theory on an instruction, mutants, chains),
                 Inputs, Witness, the --where language, SMT-LIB text, evaluation and replay
    store        proof records on disk (proofs/, sha256 of canonical query text)
    search       the distinguishing query of two models and the witness search
    claims       prove's claims (a package: the built-in claims, the constraint language,
                 the Claim API for user claims, exact): statements, result dict, concrete checks
    pool         batches of dot-product inputs and their evaluation on numpy lanes
    family       hypothesis families (spaces of candidate theories)
    ieee         the IEEE add/mul/fma equivalence proofs of the fp layer
    cache        the solver-result cache (proofs/cache: proved lemmas by sha256)
    witness_search    concrete counterexample searches on numpy lanes (monotonicity)
    minimize     readable witnesses (fewest non-zero products, ...) and the one-line form
    decompose    lemmas of decomposed proofs
    cex          counterexamples/ records and their replay
    proofs       prove's records in proofs/<claim>/
    distinguish, prove, probes    the verbs
    infer        the closed loop (uses probes and prove)
    settle       probes --settle PARAM: the probe set that settles one open parameter

May import every layer below it. Nothing in mmaformal imports a name through a verb module;
the verbs re-export the names scripts and tests used from them.
"""
