"""Independent reference implementations ("oracles") used by the test-suite.

They share no code with `mmaformal`: pure Python and `fractions.Fraction`, written directly from
docs/semantics.md and [Xie2025] sec. 4, so that agreement with the core is evidence, not echo.
"""
