"""The confidence interval of a median from the values alone (no distribution assumed).

A run's verdict is the median of its per-round ratios, and under emulation rounds scatter widely
(bench/README.md): a median of 1.03 from 15 rounds may or may not differ from 1.00. For n values
of independent rounds, the k-th smallest and the k-th largest bound the true median with
probability 1 - 2 P(B <= k - 1), B ~ Binomial(n, 1/2) (the sign test's interval). The largest
such k whose probability still reaches the level (the narrowest such pair) gives the interval;
below 6 rounds no pair reaches 95%."""
import math


def coverage(n, k):
    """Probability that [k-th smallest, k-th largest] of n values holds their true median."""
    tail = sum(math.comb(n, i) for i in range(k)) / 2 ** n
    return 1 - 2 * tail


def median_interval(values, level=0.95):
    """(low, high, coverage): the narrowest order-statistic interval of `values` that holds their
    median with at least `level`; None when there are too few values for that level."""
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    v = sorted(values)
    n = len(v)
    best = None
    for k in range(1, n // 2 + 1):
        c = coverage(n, k)
        if c < level:
            break
        best = (v[k - 1], v[n - k], c)
    return best


def clears(lo, hi, value):
    """Whether an interval lies wholly on one side of `value` (None: no interval, it cannot)."""
    return lo is not None and not lo <= value <= hi


def interval_text(lo, hi):
    """An interval as a table shows it: "lo..hi", or "-" for none."""
    return f"{lo:.3f}..{hi:.3f}" if lo is not None else "-"
