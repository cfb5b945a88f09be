"""The long-run rules, framework-free (D-K2): states, thresholds, texts, reports, cleanup.

Everything here is a pure function of (task, now, thresholds): no database,
no clock, no Django. The services load rows, pass them in and write what
comes out; the tests freeze the clock by passing `now`.
"""

from longrun.policies import answers, cleanup, facts, messages, reports, states, timing, trigger

__all__ = ["answers", "cleanup", "facts", "messages", "reports", "states", "timing", "trigger"]
