#!/usr/bin/python3
"""bench/compare/median_interval.py: the sign test's interval of a median, against its definition."""
import itertools
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "compare"))

from median_interval import clears, coverage, interval_text, median_interval  # noqa: E402


class MedianInterval(unittest.TestCase):
    def test_known_ranks_for_the_round_counts_the_issues_use(self):
        # Tables of the sign test's interval: 9 rounds the 2nd and 8th values, 15 the 4th and 12th.
        self.assertEqual(median_interval(range(1, 10))[:2], (2, 8))
        self.assertEqual(median_interval(range(1, 16))[:2], (4, 12))
        self.assertEqual(median_interval(range(1, 31))[:2], (10, 21))
        self.assertAlmostEqual(median_interval(range(1, 16))[2], 1 - 2 * 576 / 32768)

    def test_too_few_rounds_give_no_interval(self):
        self.assertIsNone(median_interval([1.0, 2.0, 3.0, 4.0, 5.0]))
        self.assertIsNone(median_interval([]))
        self.assertEqual(median_interval([3, 1, 2, 6, 5, 4])[:2], (1, 6))  # 6 rounds: 96.9%
        with self.assertRaises(ValueError):
            median_interval([1, 2, 3], level=1.0)

    def test_order_of_the_rounds_does_not_matter(self):
        v = [1.07, 0.91, 1.30, 1.02, 0.99, 1.11, 0.95, 1.04, 2.10]
        shuffled = v[:]
        random.Random(7).shuffle(shuffled)
        self.assertEqual(median_interval(v), median_interval(shuffled))
        self.assertEqual(median_interval(v)[:2], (0.95, 1.30))

    def test_coverage_is_the_share_of_sign_patterns_that_straddle_the_median(self):
        # Each value falls below the true median with probability 1/2, independently: count the
        # patterns with at least k values below and at least k above.
        for n in range(1, 13):
            for k in range(1, n // 2 + 1):
                inside = sum(1 for p in itertools.product((0, 1), repeat=n) if k <= sum(p) <= n - k)
                self.assertAlmostEqual(coverage(n, k), inside / 2 ** n, msg=f"n={n} k={k}")

    def test_the_interval_is_the_narrowest_that_reaches_the_level(self):
        for n in range(6, 40):
            lo, hi, c = median_interval(range(n))
            k = lo + 1
            self.assertGreaterEqual(c, 0.95)
            self.assertEqual(hi, n - k)
            self.assertLess(coverage(n, k + 1), 0.95, f"n={n}: a narrower pair would do")

    def test_an_interval_clears_a_value_only_wholly_on_one_side_and_prints_as_tables_show_it(self):
        self.assertTrue(clears(1.01, 1.2, 1.0))
        self.assertTrue(clears(0.8, 0.99, 1.0))
        self.assertFalse(clears(0.9, 1.0, 1.0), "a value on the edge is inside")
        self.assertFalse(clears(None, None, 1.0), "no interval clears nothing")
        self.assertEqual(interval_text(0.8, 1.4), "0.800..1.400")
        self.assertEqual(interval_text(None, None), "-")


if __name__ == "__main__":
    unittest.main()
