"""Ranges, decisive differences and the recommended default, on lines made
by hand."""
import pytest
from conftest_bench import REFERENCE_FILE, summary_line

from hrx.bench import Results, load
from hrx.bench.analysis import (
    adjacent_changes,
    format_changes,
    format_ranges,
    recommend,
)
from hrx.bench.table import group_lines

pytestmark = pytest.mark.python_only


def _group(spec):
    """spec: {queues: [(threads, idle_p95_us), ...one per run]}"""
    lines = [summary_line(q, r, threads=t, idle_p95_us=idle)
             for q, runs in spec.items() for r, (t, idle) in enumerate(runs, 1)]
    (group,) = group_lines(lines)
    return group


def test_reference_recommends_eight_and_says_why():
    results = load(REFERENCE_FILE)
    advice = results.recommend()
    assert advice.queues == 8
    assert advice.candidates == [8, 16]
    assert 16 in advice.dropped and "Idle p95" in advice.dropped[16]
    text = str(advice)
    assert text.startswith("Recommended default: 8 queues.")
    assert "Rule: the smallest queue count" in text


def test_reference_ranges_match_the_reference_prose():
    text = format_ranges(load(REFERENCE_FILE).groups[0])
    assert "| 4 | 3 | 0.920–1.160 | 1.239–1.919 |" in text
    assert "| 8 | 3 | 0.965–1.417 | 1.506–2.178 |" in text
    assert "| 16 | 3 | 0.965–1.062 | 1.970–2.252 |" in text


def test_reference_adjacent_changes():
    group = load(REFERENCE_FILE).groups[0]
    changes = {(c.low, c.high, c.column.key): c for c in adjacent_changes(group)}
    four_eight = changes[(4, 8, "threads")]
    assert four_eight.relative == pytest.approx(1.933 / 1.646 - 1, abs=5e-4)   # about +17%
    assert not four_eight.decisive
    assert changes[(8, 16, "threads")].relative == pytest.approx(0.02, abs=2e-3)
    assert changes[(8, 16, "idle_p95")].decisive
    assert changes[(1, 2, "threads")].decisive
    assert not changes[(1, 2, "bulk")].decisive


def test_relative_change_and_overlap_by_hand():
    group = _group({1: [(1.0, 4), (1.2, 4), (1.1, 4)], 2: [(2.0, 4), (2.4, 4), (2.2, 4)],
                    4: [(2.1, 4), (2.5, 4), (2.3, 4)]})
    changes = {(c.low, c.high): c for c in adjacent_changes(group) if c.column.key == "threads"}
    assert changes[(1, 2)].relative == pytest.approx(1.0)     # 1.1 -> 2.2
    assert changes[(1, 2)].decisive                           # 1.0–1.2 vs 2.0–2.4
    assert changes[(2, 4)].relative == pytest.approx(0.1 / 2.2)
    assert not changes[(2, 4)].decisive                       # 2.0–2.4 vs 2.1–2.5
    text = format_changes(group)
    assert "| 1 → 2 | +0.0% | +100.0% * |" in text
    assert ("Decisive (the run-to-run ranges do not overlap): "
            "1 → 2 queues: 16 host threads +100.0%.") in text
    assert "Every other difference between adjacent counts is within run-to-run variation" in text


def test_no_decisive_difference_is_stated_plainly():
    group = _group({1: [(1.0, 4), (2.0, 4)], 2: [(1.5, 4), (2.5, 4)]})
    assert "none is decisive" in format_changes(group)


def test_tie_within_variation_goes_to_fewer_queues():
    group = _group({1: [(0.5, 4), (0.6, 4), (0.55, 4)],
                    2: [(1.8, 4), (2.2, 4), (2.0, 4)],
                    4: [(1.9, 4), (2.3, 4), (2.1, 4)],
                    8: [(1.95, 4), (2.4, 4), (2.2, 4)]})
    advice = recommend(group)
    assert advice.candidates == [2, 4, 8]
    assert advice.queues == 2


def test_latency_jump_beyond_variation_drops_a_candidate():
    group = _group({2: [(1.0, 4), (1.1, 5), (1.2, 6)],
                    4: [(1.9, 4), (2.0, 5), (2.1, 6)],
                    8: [(2.0, 50), (2.1, 60), (2.2, 70)]})
    advice = recommend(group)
    assert advice.candidates == [4, 8]
    assert advice.queues == 4
    assert list(advice.dropped) == [8]


def test_latency_within_variation_is_not_a_jump():
    group = _group({4: [(1.0, 4), (1.05, 5), (1.1, 9)],
                    8: [(1.0, 8), (1.1, 10), (1.2, 12)]})
    assert recommend(group).dropped == {}
    assert recommend(group).queues == 4


def test_guard_compares_with_the_other_candidates_only():
    group = _group({1: [(0.5, 4), (0.6, 4), (0.55, 4)],
                    2: [(1.0, 4), (1.1, 4), (1.2, 4)],
                    16: [(3.0, 500), (3.1, 600), (3.2, 700)]})
    advice = recommend(group)
    assert advice.candidates == [16]
    assert advice.queues == 16 and advice.dropped == {}


def test_conflicting_latency_guards_fall_back_to_idle():
    def line(q, r, idle, loaded):
        return summary_line(q, r, threads=2.0 + 0.1 * r, idle_p95_us=idle, loaded_p95_ms=loaded)
    lines = [line(2, r, 4 + r, 20 + r) for r in (1, 2, 3)]     # best idle
    lines += [line(4, r, 40 + r, 2 + r) for r in (1, 2, 3)]    # best loaded
    (group,) = group_lines(lines)
    advice = recommend(group)
    assert advice.candidates == [2, 4]
    assert advice.queues == 2
    assert list(advice.dropped) == [4]
    assert any("only the idle guard is applied" in reason for reason in advice.reasons)


def test_single_run_warns_that_variation_is_unknown():
    group = _group({1: [(1.0, 4)], 2: [(2.0, 4)], 4: [(2.0, 4)]})
    advice = recommend(group)
    assert advice.queues == 2                  # equal values overlap; fewer queues
    assert "variation is unknown" in advice.reasons[0]


def test_one_queue_count_measured_has_nothing_to_recommend():
    advice = recommend(_group({8: [(1.0, 4), (1.1, 4)]}))
    assert advice.queues is None and advice.candidates == []
    assert str(advice).splitlines()[0] == ("No recommendation: only 8 queues measured, "
                                           "nothing to compare it with.")
    assert "sweep two or more queue counts" in advice.reasons[0]
    text = Results([summary_line(8, r) for r in (1, 2, 3)]).table()
    assert "Recommended default" not in text and "No recommendation: only 8 queues" in text


def test_one_queue_count_left_after_failures_is_chosen():
    lines = [summary_line(8, r) for r in (1, 2, 3)]
    lines.append({"error": "crashed", "queues": 4, "repeat": 1, "driver": None,
                  "returncode": 1, "stderr_tail": "", "timestamp": "2026-01-01T00:00:00Z"})
    advice = Results(lines).recommend()
    assert advice.queues == 8
    assert advice.reasons[-1] == "only one queue count is left to choose from"


def test_counts_with_failed_runs_are_left_out():
    lines = [summary_line(q, r, threads=2.0 + 0.1 * r, driver="native")
             for q in (2, 4) for r in (1, 2, 3)]
    lines.append({"error": "timed out after 600 s", "queues": 2, "repeat": 4,
                  "driver": "native", "returncode": -9, "stderr_tail": "",
                  "timestamp": "2026-01-01T00:00:00Z"})
    lines.append({"error": "other driver", "queues": 4, "repeat": 4, "driver": "python",
                  "returncode": 1, "stderr_tail": "", "timestamp": "2026-01-01T00:00:00Z"})
    advice = Results(lines).recommend()
    assert advice.queues == 4
    assert advice.reasons[0] == "left out for failed runs: 2 queues (1 failed)"
    assert "left out for failed runs" in Results(lines).table()


def test_results_recommend_needs_a_group_when_several():
    lines = [summary_line(1, target="a"), summary_line(1, target="b")]
    results = Results(lines)
    with pytest.raises(ValueError, match="2 groups"):
        results.recommend()
    assert results.recommend(group="b").queues is None   # one count: nothing to compare


def test_html_rendering_has_table_and_recommendation():
    html = load(REFERENCE_FILE)._repr_html_()
    assert "<table>" in html and "Recommended default: 8 queues." in html
    assert "0.593" in html and "1.970–2.252" in html
