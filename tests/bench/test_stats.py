"""Nearest-rank percentiles against values worked out by hand."""
import random

import pytest

from hrx.bench.stats import median, p95, percentile, rank, run_median

pytestmark = pytest.mark.python_only


def test_fifteen_samples_median_is_eighth_and_p95_is_max():
    values = list(range(1, 16))
    random.Random(7).shuffle(values)
    assert median(values) == 8          # ceil(15 * 0.50) = 8th
    assert p95(values) == 15            # ceil(15 * 0.95) = ceil(14.25) = 15th = max


def test_even_count_median_is_lower_middle():
    assert median([20, 10]) == 10       # ceil(2 * 0.5) = 1st
    assert median([4, 1, 3, 2]) == 2    # ceil(4 * 0.5) = 2nd
    assert p95([1, 2, 3, 4]) == 4       # ceil(3.8) = 4th


def test_three_runs_median_is_middle_value():
    assert median([0.703, 0.593, 0.532]) == 0.593
    assert run_median([0.703, 0.593, 0.532]) == 0.593


def test_the_median_over_runs_of_an_even_count_is_the_mean_of_the_middle_two():
    assert run_median([20, 10]) == 15
    assert run_median([4, 1, 3, 2]) == 2.5
    assert run_median([7]) == 7
    assert run_median([5, 1, 9, 3, 7]) == median([5, 1, 9, 3, 7]) == 5
    values = [3.0, 1.0]
    assert run_median(values) == 2.0 and values == [3.0, 1.0]
    with pytest.raises(ValueError):
        run_median([])


def test_single_value_is_every_percentile():
    for p in (1, 50, 95, 100):
        assert percentile([42], p) == 42


@pytest.mark.parametrize("n, p, expected_rank", [
    (20, 95, 19),    # exactly 19.0 -> 19th, not 20th
    (100, 95, 95),
    (10, 95, 10),    # 9.5 -> 10th
    (240, 95, 228),  # 16 lanes x 15 rounds: 228th
    (240, 50, 120),
    (1000, 99.9, 999),
    (7, 100, 7),
    (7, 1, 1),
])
def test_rank_is_exact(n, p, expected_rank):
    assert rank(n, p) == expected_rank - 1
    assert percentile(range(1, n + 1), p) == expected_rank


def test_input_is_not_modified():
    values = [3, 1, 2]
    assert median(values) == 2
    assert values == [3, 1, 2]


@pytest.mark.parametrize("values, p", [([], 50), ([1], 0), ([1], 100.5), ([1], -5)])
def test_rejects_empty_input_and_bad_percentiles(values, p):
    with pytest.raises(ValueError):
        percentile(values, p)
