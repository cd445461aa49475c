"""Per-case reliability figures over trials: pass rate, Wilson interval, pass^k, flakiness.

These inform a reader; they never loosen the gate, which still needs every required trial to
pass.
"""

from __future__ import annotations

import math
from typing import Any

# 95% two-sided normal quantile.
Z_95 = 1.959963984540054


def wilson_interval(passed: int, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for a pass rate; (0, 1) when nothing ran.

    Unlike the normal approximation it stays inside [0, 1] and is honest about small n:
    3 passes out of 3 gives about (0.44, 1.0), not a certain 1.0.
    """
    if total <= 0:
        return 0.0, 1.0
    rate = passed / total
    z2 = z * z
    centre = (rate + z2 / (2 * total)) / (1 + z2 / total)
    half = z * math.sqrt(rate * (1 - rate) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    # At 0 and n passes the bounds are exactly 0 and 1; floating point would miss by 1e-17.
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == total else min(1.0, centre + half)
    return low, high


def pass_hat_k(passed: int, total: int, k: int) -> float:
    """Unbiased estimate of the chance that k fresh trials all pass: C(c, k) / C(n, k).

    With c passes out of n trials; 0 when c < k (there are not k passing trials to choose).
    """
    if k < 1 or k > total:
        raise ValueError(f"k must be between 1 and the number of trials ({total}), not {k}")
    return math.comb(passed, k) / math.comb(total, k)


def case_reliability(passed: int, failed: int, ran: int,
                     infra_blocked: int = 0) -> dict[str, Any]:
    """The figures of one case over the trials that ran; empty figures when none did.

    Blocked trials count as trials that did not pass, but not as failures: a case is flaky
    when some trials passed and some failed. Trials blocked by an external blocker
    (``infra_blocked_when``) are counted apart, as ``infra_blocked``: they are not failures
    of the skill, and not passes either.
    """
    if ran == 0:
        return {"passed": 0, "ran": 0, "pass_rate": None, "wilson_95": None,
                "pass_hat_k": {}, "flaky": False, "infra_blocked": 0}
    low, high = wilson_interval(passed, ran)
    return {
        "passed": passed,
        "ran": ran,
        "pass_rate": round(passed / ran, 4),
        "wilson_95": [round(low, 4), round(high, 4)],
        "pass_hat_k": {str(k): round(pass_hat_k(passed, ran, k), 4) for k in range(1, ran + 1)},
        "flaky": passed > 0 and failed > 0,
        "infra_blocked": infra_blocked,
    }
