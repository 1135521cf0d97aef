"""The issues' speed targets (targets.json) judged against a compare.py run.

A target holds for a case when the median of its per-round unet / peer ratios is at most (or at
least) the target's value: the rule the issues state. Under emulation that median is uncertain,
so each verdict also says whether the run resolves it — whether the 95% interval of the median
(median_interval.py) lies wholly on one side of the value — and, where a BOUNDS row caps the case
on the device, whether the target lies beyond that bound in the same rounds (resolved the same
way: a noisy bound proves nothing beyond)."""
import json
import os

from median_interval import clears, interval_text

DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets.json")


def load(path=DEFAULT):
    """The targets of `path`; each has an issue, a case and one of at_most / at_least (a bound
    is optional). Raises ValueError for a malformed file or entry."""
    with open(path) as f:
        doc = json.load(f)
    targets = doc.get("targets") if isinstance(doc, dict) else None
    if not isinstance(targets, list):
        raise ValueError(f"{path}: no list of targets")
    for t in targets:
        if (not isinstance(t, dict) or not isinstance(t.get("case"), str) or "issue" not in t
                or ("at_most" in t) == ("at_least" in t)
                or not isinstance(t.get("at_most", t.get("at_least")), (int, float))):
            raise ValueError(f"{path}: {t}: a target needs an issue, a case and a number, at_most "
                             "or at_least")
    return targets


def judge(target, row, bound=None):
    """The verdict of one target on its summary row (compare.summarize) and, if any, the BOUNDS
    row it names: a dict with the target's text, the median, the interval and the verdict."""
    low = "at_most" in target
    value = target["at_most"] if low else target["at_least"]
    median, lo, hi = row["ratio_median"], row.get("ratio_lo"), row.get("ratio_hi")
    met = median <= value if low else median >= value
    if lo is None:
        resolved = "fewer than 6 rounds: not resolved"
    elif clears(lo, hi, value):
        resolved = "resolved"
    else:
        resolved = "not resolved (the target is inside the interval)"
    verdict = f"{'met' if met else 'not met'}, {resolved}"
    if bound is not None:
        verdict += "; " + bound_verdict(bound, value, low)
    return {"issue": target["issue"], "case": target["case"],
            "target": f"{'<=' if low else '>='} {value:g}", "ratio_median": median,
            "ratio_lo": lo, "ratio_hi": hi, "met": met, "verdict": verdict}


def bound_verdict(bound, value, low):
    """Whether a latency target (`low`: at most `value`) or a rate target lies beyond the device's
    bound in the same rounds: by the bound's median, and resolved as a verdict is."""
    b, lo, hi = bound["ratio_median"], bound.get("ratio_lo"), bound.get("ratio_hi")
    if not (b > value if low else b < value):
        return f"within the device's bound {b:.3f}"
    if clears(lo, hi, value):
        return f"beyond the device: {bound['bound']} is {b:.3f}, resolved"
    return f"beyond the device by the median of {bound['bound']}, {b:.3f}, but not resolved"


def verdicts(targets, summary, bound_rows):
    """judge() for every target whose case ran, in the file's order."""
    rows = {r["case"]: r for r in summary}
    bounds = {b["bound"]: b for b in bound_rows}
    return [judge(t, rows[t["case"]], bounds.get(t.get("bound"))) for t in targets
            if t["case"] in rows]


def markdown(judged):
    """The verdicts as a markdown table (no lines when there are none)."""
    if not judged:
        return []
    lines = ["", "| issue | target: unet / peer | median | 95% interval | verdict |",
             "|---|---|---:|---|---|"]
    for j in judged:
        iv = interval_text(j["ratio_lo"], j["ratio_hi"])
        lines.append(f"| {j['issue']} | {j['case']} {j['target']} | {j['ratio_median']:.3f} | {iv} "
                     f"| {j['verdict']} |")
    return lines
