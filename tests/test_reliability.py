"""Reliability figures against values computed by hand."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_agentic_evals.reliability import case_reliability, pass_hat_k, wilson_interval


@pytest.mark.parametrize(
    ("passed", "total", "low", "high"),
    [
        # p = c/n, z = 1.96: centre = (p + z²/2n) / (1 + z²/n),
        # half = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)
        (3, 3, 0.43850, 1.0),
        (0, 3, 0.0, 0.56150),
        (1, 1, 0.20654, 1.0),
        (0, 1, 0.0, 0.79346),
        (5, 10, 0.23659, 0.76341),
        (9, 10, 0.59585, 0.98212),
    ],
)
def test_wilson_interval_matches_hand_computation(
    passed: int, total: int, low: float, high: float
) -> None:
    got_low, got_high = wilson_interval(passed, total)
    assert got_low == pytest.approx(low, abs=1e-4)
    assert got_high == pytest.approx(high, abs=1e-4)


def test_wilson_interval_with_nothing_run_is_uninformative() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("passed", "total", "k", "expected"),
    [
        (3, 3, 3, 1.0),            # all pass
        (0, 3, 1, 0.0),            # all fail
        (2, 3, 1, 2 / 3),          # C(2,1)/C(3,1)
        (2, 3, 2, 1 / 3),          # C(2,2)/C(3,2) = 1/3
        (2, 3, 3, 0.0),            # c < k: no 3 passing trials to choose
        (1, 1, 1, 1.0),            # n = 1
        (4, 5, 2, 6 / 10),         # C(4,2)/C(5,2) = 6/10
        (7, 10, 3, 35 / 120),      # C(7,3)/C(10,3)
    ],
)
def test_pass_hat_k(passed: int, total: int, k: int, expected: float) -> None:
    assert pass_hat_k(passed, total, k) == pytest.approx(expected)


def test_pass_hat_k_refuses_k_out_of_range() -> None:
    with pytest.raises(ValueError, match="k must be between 1 and the number of trials"):
        pass_hat_k(2, 3, 4)
    with pytest.raises(ValueError):
        pass_hat_k(2, 3, 0)


@given(st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.tuples(st.integers(min_value=0, max_value=n), st.just(n))))
def test_figures_are_consistent(case: tuple[int, int]) -> None:
    passed, total = case
    low, high = wilson_interval(passed, total)
    assert 0.0 <= low <= passed / total <= high <= 1.0
    estimates = [pass_hat_k(passed, total, k) for k in range(1, total + 1)]
    assert estimates[0] == pytest.approx(passed / total)
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(estimates))
    assert estimates[-1] == (1.0 if passed == total else 0.0)


def test_case_reliability_flags_flaky_cases_only() -> None:
    flaky = case_reliability(passed=2, failed=1, ran=3)
    assert flaky["flaky"] is True
    assert flaky["pass_rate"] == pytest.approx(0.6667)
    assert flaky["pass_hat_k"] == {"1": pytest.approx(0.6667), "2": pytest.approx(0.3333),
                                   "3": 0.0}
    assert case_reliability(passed=3, failed=0, ran=3)["flaky"] is False
    assert case_reliability(passed=0, failed=3, ran=3)["flaky"] is False
    assert case_reliability(passed=2, failed=0, ran=3)["flaky"] is False  # one trial blocked
    assert case_reliability(passed=0, failed=0, ran=0)["pass_rate"] is None
