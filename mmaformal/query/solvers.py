"""Layer 5, query/solvers: one interface to z3 (in process), bitwuzla and cvc5.

May import: z3, bitwuzla, cvc5 (each lazily), the standard library. Nothing from the
arithmetic layers: a query arrives as z3 assertions or as SMT-LIB2 text.

Invariants:
- Every query is exported as SMT-LIB2 (`to_smt2`) and that text is what bitwuzla and cvc5
  solve, so the stored `query.smt2` of a proof is exactly what was proved.
- A time-out or solver error is "unknown" (with the time spent), never "unsat".
- `model` holds the values of the declared bit-vector constants (name -> int) for "sat".
- bitwuzla's bit-vector engine is an option (`bitwuzla_engine`: its `bv-solver` option,
  "bitblast", "prop" or "preprop"); a result names the engine it was found with in `version`.
"""
from __future__ import annotations

import multiprocessing as mp
import time
from dataclasses import dataclass, field
from typing import Iterable

__all__ = ["Result", "to_smt2", "solve", "solve_smt2", "SOLVERS", "solver_version"]

SOLVERS = ("bitwuzla", "z3", "cvc5")


@dataclass
class Result:
    status: str                       # "sat" | "unsat" | "unknown"
    solver: str
    version: str
    seconds: float
    model: dict[str, int] = field(default_factory=dict)
    reason: str = ""


def to_smt2(assertions: Iterable) -> str:
    """SMT-LIB2 text of the conjunction of z3 assertions, ending in (check-sat)."""
    import z3
    s = z3.Solver()
    for a in assertions:
        s.add(a)
    text = s.to_smt2()
    if "(set-logic" not in text:
        text = "(set-logic ALL)\n" + text
    return text


def solver_version(name: str) -> str:
    try:
        if name == "z3":
            import z3
            return z3.get_version_string()
        if name == "bitwuzla":
            import bitwuzla
            return bitwuzla.version()
        if name == "cvc5":
            import cvc5
            return cvc5.__version__ if hasattr(cvc5, "__version__") else "1.x"
    except Exception as e:  # pragma: no cover - reported as the version string
        return f"unavailable: {e}"
    raise ValueError(f"unknown solver {name!r}; expected one of {', '.join(SOLVERS)} or portfolio")


def _parse_bv(text: str) -> int:
    text = str(text)
    if text.startswith("#b"):
        return int(text[2:], 2)
    if text.startswith("#x"):
        return int(text[2:], 16)
    if text in ("true", "false"):
        return int(text == "true")
    if text.startswith("(_ bv"):
        return int(text.split()[1][2:])
    return int(text)


def _z3(text: str, timeout: float | None) -> tuple[str, dict[str, int], str]:
    import z3
    s = z3.Solver()
    if timeout:
        s.set("timeout", int(timeout * 1000))
    s.from_string(text)
    r = s.check()
    model = {}
    if r == z3.sat:
        m = s.model()
        for d in m.decls():
            v = m[d]
            if z3.is_bv_value(v):
                model[d.name()] = v.as_long()
            elif z3.is_true(v) or z3.is_false(v):
                model[d.name()] = int(z3.is_true(v))
    return str(r), model, "" if r != z3.unknown else s.reason_unknown()


def _bitwuzla(text: str, timeout: float | None, engine: str | None = None) -> tuple[str, dict[str, int], str]:
    import bitwuzla
    tm = bitwuzla.TermManager()
    opts = bitwuzla.Options()
    opts.set(bitwuzla.Option.PRODUCE_MODELS, True)
    if engine:                    # bv-solver: bitblast | prop | preprop (prop, then bit-blasting)
        opts.set(bitwuzla.Option.BV_SOLVER, engine)
    if timeout:
        opts.set(bitwuzla.Option.TIME_LIMIT_PER, int(timeout * 1000))
    parser = bitwuzla.Parser(tm, opts)
    parser.parse(text.replace("(check-sat)", ""), True, False)
    bw = parser.bitwuzla()
    r = bw.check_sat()
    status = {bitwuzla.Result.SAT: "sat", bitwuzla.Result.UNSAT: "unsat"}.get(r, "unknown")
    model = {}
    if status == "sat":
        for t in parser.get_declared_funs():
            model[t.symbol()] = _parse_bv(bw.get_value(t))
    return status, model, "" if status != "unknown" else "time limit"


def _cvc5(text: str, timeout: float | None) -> tuple[str, dict[str, int], str]:
    import cvc5
    tm = cvc5.TermManager()
    slv = cvc5.Solver(tm)
    slv.setOption("produce-models", "true")
    if timeout:
        slv.setOption("tlimit-per", str(int(timeout * 1000)))
    sm = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(slv, sm)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text.replace("(check-sat)", ""), "query")
    while True:
        cmd = parser.nextCommand()
        if cmd.isNull():
            break
        cmd.invoke(slv, sm)
    r = slv.checkSat()
    status = "sat" if r.isSat() else "unsat" if r.isUnsat() else "unknown"
    model = {}
    if status == "sat":
        for t in sm.getDeclaredTerms():
            v = slv.getValue(t)
            try:
                model[t.getSymbol()] = int(v.getBitVectorValue(2), 2) if v.getSort().isBitVector() else int(v.getBooleanValue())
            except Exception:
                pass
    return status, model, "" if status != "unknown" else str(r.getUnknownExplanation())


_FUNCS = {"z3": _z3, "bitwuzla": _bitwuzla, "cvc5": _cvc5}


def solve_smt2(text: str, solver: str = "bitwuzla", timeout: float | None = None,
               bitwuzla_engine: str | None = None) -> Result:
    """Solve SMT-LIB2 text with one solver in this process (`bitwuzla_engine`: bitwuzla's
    bv-solver, ignored by the other solvers)."""
    if solver not in _FUNCS:
        raise ValueError(f"unknown solver {solver!r}; expected one of {', '.join(SOLVERS)} or portfolio")
    engine = bitwuzla_engine if solver == "bitwuzla" else None
    t0 = time.perf_counter()
    try:
        if engine:
            status, model, reason = _bitwuzla(text, timeout, engine)
        else:
            status, model, reason = _FUNCS[solver](text, timeout)
    except ImportError as e:
        return Result("unknown", solver, "unavailable", time.perf_counter() - t0, reason=f"not installed: {e}")
    except Exception as e:  # a solver error is not an answer
        return Result("unknown", solver, solver_version(solver), time.perf_counter() - t0, reason=f"error: {e}")
    version = solver_version(solver) + (f" (bv-solver={engine})" if engine else "")
    return Result(status, solver, version, time.perf_counter() - t0, model, reason)


def _worker(args):
    return solve_smt2(*args)


def _default_sigterm() -> None:
    """Pool initializer: SIGTERM kills a portfolio worker even inside a solver's C code. A
    Python-level handler inherited from the parent (Ray's driver installs one) would wait for
    the solver to return, so `pool.terminate()` would hang on a solver without a timeout."""
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def solve(query, solver: str = "bitwuzla", timeout: float | None = None,
          bitwuzla_engine: str | None = None) -> Result:
    """Solve a query (z3 assertions or SMT-LIB2 text). `solver` may be "portfolio": every
    installed solver in its own process, the first definite answer wins (bitwuzla with
    `bitwuzla_engine` there too)."""
    text = query if isinstance(query, str) else to_smt2(query)
    if solver != "portfolio":
        return solve_smt2(text, solver, timeout, bitwuzla_engine)
    t0 = time.perf_counter()
    ctx = mp.get_context("fork")
    with ctx.Pool(len(SOLVERS), initializer=_default_sigterm) as pool:
        pending = [pool.apply_async(_worker, ((text, s, timeout, bitwuzla_engine),)) for s in SOLVERS]
        results = []
        while pending:
            for p in list(pending):
                if p.ready():
                    r = p.get()
                    pending.remove(p)
                    if r.status in ("sat", "unsat"):
                        pool.terminate()
                        return r
                    results.append(r)
            time.sleep(0.005)
    return Result("unknown", "portfolio", "", time.perf_counter() - t0,
                  reason="; ".join(f"{r.solver}: {r.reason}" for r in results))
