"""How the gate judges the code under test (head) against the base commit, measured side by side.

A timed metric is measured in rounds, base and head in turn, and each round gives one factor
head / base (base / head for a higher-is-better metric): above 1 means head is worse. The factor
of one round can be anything a burst of other load makes it; what the gate asks is whether head is
worse than the threshold *in most rounds*. It bootstraps the median of the per-round factors
(resampling rounds with replacement, a fixed seed so that a verdict can be reproduced) and
declares a regression only when the lower end of the 90 % interval of that median is above the
threshold: with 9 rounds (the gate's default) that needs seven rounds above it, so a burst of
load in two rounds neither fails the gate nor saves a slower kernel from failing it. An
improvement is the mirror image. Deterministic metrics (instruction counts, allocator bytes)
are one figure per side, compared directly.
"""

import math
import random
import statistics
from dataclasses import dataclass

BOOTSTRAP_SAMPLES = 2000
INTERVAL = 0.90  # two-sided, so the lower end is a one-sided 95 % bound


@dataclass
class Verdict:
    key: tuple              # (benchmark, case, params, metric)
    status: str             # regressed, improved, ok, new, failed
    against: str = ""       # "base <commit>" or "baseline"
    base: float | None = None   # the base's figure (the median of its rounds when timed)
    head: float | None = None
    worse: float | None = None  # the median per-round factor, > 1 when head is worse
    low: float | None = None    # the interval of that median (timed rows only)
    high: float | None = None
    rounds_worse: str = ""      # "5/7": rounds whose factor exceeded the limit
    limit: float | None = None  # the largest factor allowed
    note: str = ""              # why a row is new or failed


def worse_factor(base: float, head: float, better: str) -> float:
    if base == head:
        return 1.0
    num, den = (head, base) if better == "lower" else (base, head)
    return num / den if den else math.inf


def bootstrap_median(values: list[float], seed: int = 0) -> tuple[float, float]:
    """The INTERVAL percentile interval of the median of values, by resampling them."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(values, k=len(values)))
                     for _ in range(BOOTSTRAP_SAMPLES))
    tail = (1 - INTERVAL) / 2
    return medians[int(tail * BOOTSTRAP_SAMPLES)], medians[int((1 - tail) * BOOTSTRAP_SAMPLES) - 1]


def judge_rounds(key: tuple, against: str, base: list[float], head: list[float], better: str,
                 max_worse: float) -> Verdict:
    """base[i] and head[i] were measured in the same round."""
    limit = 1 + max_worse
    logs = [math.log(worse_factor(b, h, better)) for b, h in zip(base, head)]
    low, high = (math.exp(x) for x in bootstrap_median(logs))
    status = "regressed" if low > limit else "improved" if high < 1 / limit else "ok"
    over = sum(x > math.log(limit) for x in logs)
    return Verdict(key, status, against, statistics.median(base), statistics.median(head),
                   math.exp(statistics.median(logs)), low, high, f"{over}/{len(logs)}", limit)


def judge_value(key: tuple, against: str, base: float, head: float, better: str,
                max_worse: float) -> Verdict:
    limit = 1 + max_worse
    worse = worse_factor(base, head, better)
    status = "regressed" if worse > limit else "improved" if worse < 1 / limit else "ok"
    return Verdict(key, status, against, base, head, worse, limit=limit)


ORDER = ("failed", "regressed", "improved", "ok", "new")


def number(v) -> str:
    """A figure for a table: counts exactly, measurements to 4 significant digits."""
    if v is None:
        return ""
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else f"{v:.4g}"


def percent(factor: float | None) -> str:
    if factor is None:
        return ""
    return "worse, from 0" if factor == math.inf else f"{(factor - 1) * 100:+.1f} %"


def markdown(verdicts: list[Verdict], title: str) -> str:
    """A table a CI system can post as a comment: failures and regressions first."""
    lines = [title, "",
             "| status | benchmark | case | params | metric | against | base | head "
             "| change (+ worse) | 90 % interval | rounds worse | allowed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for v in sorted(verdicts, key=lambda v: (ORDER.index(v.status), v.key)):
        status = f"**{v.status}**" if v.status in ("failed", "regressed") else v.status
        interval = f"{percent(v.low)} .. {percent(v.high)}" if v.low is not None else ""
        allowed = f"+{(v.limit - 1) * 100:.0f} %" if v.limit is not None else ""
        cells = [status, *v.key, v.against, number(v.base), number(v.head),
                 percent(v.worse) or v.note, interval, v.rounds_worse, allowed]
        lines.append("| " + " | ".join(cells) + " |")
    counts = {s: sum(v.status == s for v in verdicts) for s in ORDER}
    lines += ["", ", ".join(f"{n} {s}" for s, n in counts.items())]
    return "\n".join(lines)
