"""Is a shown confidence a probability? Measure it, and fit the map that makes it one.

Measures, over (confidence, right) pairs of predicted values: AUROC (does a right value get more
confidence than a wrong one: the ranking), ECE (ten equal-width bins: how far the confidence is from
the share of right values, weighted by the values in each bin), and the accuracy of the most
confident half. ECE comes with a 95% bootstrap interval that resamples whole programs, not single
values: the values of one program are not independent (one misunderstood loop makes many wrong),
so resampling values would make the interval too narrow. Ten-bin ECE is biased upwards on few
values (a perfectly calibrated model scores about 0.035 on 285), so the ECE such a model would
score on the same confidences is reported beside it (`ece_if_calibrated`).

Fits (`format.calibration`): per kind of part, weighted isotonic regression (pool adjacent
violators) of right-or-wrong on the raw probability, with blocks weighing at least `MIN_BLOCK` values
of real code so that a few lucky values cannot claim certainty, each block's share smoothed by one right and one
wrong pseudo-value (never 0 or 1 from finite data), and knots at the blocks' mean raw
probabilities. Isotonic rather than temperature (Platt) scaling: the model's over-confidence is not
one slope in log-odds (`..` at 0.99 is right 97% of the time where the code run cannot change the
name, a new value at 0.3 about 5%), and on these sets the two scored alike where both fit.
Written in numpy (a few lines; scikit-learn's IsotonicRegression would be the only thing it brought).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from neural_dap.format.calibration import KINDS, Calibration, Curve

BINS = 10
MIN_BLOCK = 25  # weight (values of real code) per isotonic block
MIN_KIND = 50  # values a kind needs for a curve of its own (else its base kind's, or the pooled curve)
# The held-out generated programs' share of the fit, against the real code's: the model is already
# calibrated on code like its training corpus (raw ECE 0.02) and over-confident on real code (0.09
# to 0.13), and users debug real code. A twentieth lets the held-out programs shape the curves
# where real code has few values without pulling them toward generated code (chosen among 0.05,
# 0.1, 0.15 and 0.25 by leaving each real set fitted on out in turn; they differ by less than the
# sampling noise, 0.059 to 0.063).
HELDOUT_WEIGHT = 0.05
BOOTSTRAP_ROUNDS = 1000


def auroc(p: np.ndarray, right: np.ndarray) -> float | None:
    """The chance that a right value has more confidence than a wrong one (ties count half)."""
    n_right = int(right.sum())
    n_wrong = len(right) - n_right
    if not n_right or not n_wrong:
        return None
    order = np.argsort(p, kind="stable")
    ranks = np.empty(len(p))
    sorted_p = p[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_p, return_index=True, return_counts=True)
    mid = first + (counts - 1) / 2 + 1
    ranks[order] = np.repeat(mid, counts)
    return float((ranks[right].sum() - n_right * (n_right + 1) / 2) / (n_right * n_wrong))


def ece(p: np.ndarray, right: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error over `bins` equal-width bins of confidence."""
    if not len(p):
        return 0.0
    index = np.minimum((p * bins).astype(int), bins - 1)
    gaps = np.bincount(index, weights=p - right, minlength=bins)
    return float(np.abs(gaps).sum() / len(p))


def top_half_accuracy(p: np.ndarray, right: np.ndarray) -> float:
    top = np.argsort(-p, kind="stable")[: (len(p) + 1) // 2]
    return float(right[top].mean())


def reliability(p: np.ndarray, right: np.ndarray, bins: int = BINS) -> list[dict]:
    """Per bin: its values, their mean confidence and their share right (the reliability diagram)."""
    index = np.minimum((p * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        mask = index == b
        if mask.any():
            out.append(
                {
                    "bin": [b / bins, (b + 1) / bins],
                    "values": int(mask.sum()),
                    "confidence": round(float(p[mask].mean()), 4),
                    "accuracy": round(float(right[mask].mean()), 4),
                }
            )
    return out


def ece_interval(
    p: np.ndarray, right: np.ndarray, groups: Sequence[str], rounds: int = BOOTSTRAP_ROUNDS, seed: int = 0
) -> tuple[float, float]:
    """A 95% bootstrap interval of the ECE, resampling whole programs (`groups`)."""
    names, group_of = np.unique(np.asarray(groups), return_inverse=True)
    members = [np.flatnonzero(group_of == g) for g in range(len(names))]
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(rounds):
        picked = np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))])
        samples.append(ece(p[picked], right[picked]))
    lo, hi = np.percentile(samples, [2.5, 97.5])
    return float(lo), float(hi)


def ece_if_calibrated(p: np.ndarray, rounds: int = 200, seed: int = 0) -> float:
    """The ECE a perfectly calibrated model showing these confidences would have on this many
    values, from sampling alone (each value right with the probability shown): the floor against
    which a measured ECE is read (about 0.035 for 285 values of a real-code mix)."""
    rng = np.random.default_rng(seed)
    return float(np.mean([ece(p, rng.uniform(size=len(p)) < p) for _ in range(rounds)]))


def summary(p: Sequence[float], right: Sequence[bool], groups: Sequence[str]) -> dict:
    """The calibration figures of (confidence, right) pairs from programs `groups`."""
    n = len(p)
    if not n:
        return {"values": 0, "n": 0, "accuracy": None, "auroc": None, "ece": None, "top_half_accuracy": None}
    pa, ra = np.asarray(p, dtype=float), np.asarray(right, dtype=bool)
    area = auroc(pa, ra)
    lo, hi = ece_interval(pa, ra, groups)
    return {
        "values": n,
        "n": n,
        "programs": len(set(groups)),
        "accuracy": round(float(ra.mean()), 4),
        "auroc": round(area, 4) if area is not None else None,
        "ece": round(ece(pa, ra), 4),
        "ece_ci95": [round(lo, 4), round(hi, 4)],
        "ece_if_calibrated": round(ece_if_calibrated(pa), 4),
        "top_half_accuracy": round(top_half_accuracy(pa, ra), 4),
        "mean_confidence": round(float(pa.mean()), 4),
    }


def isotonic_blocks(
    x: np.ndarray, y: np.ndarray, w: np.ndarray | None = None, min_block: float | None = None
) -> list[tuple[float, float, float]]:
    """Pool adjacent violators on y sorted by x, each value weighing `w` (1: a value of real code;
    equal x pooled first, so no two blocks share an x), then merge blocks weighing less than
    `min_block` into a neighbour: (mean x, mean y, weight) per block, x increasing, y non-decreasing."""
    min_block = MIN_BLOCK if min_block is None else min_block
    w = np.ones(len(x)) if w is None else np.asarray(w, dtype=float)
    x, y, w = x[w > 0], y[w > 0], w[w > 0]  # a value of weight 0 is not one to fit on
    blocks: list[list[float]] = []  # [sum w*x, sum w*y, sum w]
    xs, first = np.unique(x, return_inverse=True)
    for k in range(len(xs)):
        mine = first == k
        blocks.append([float((w[mine] * x[mine]).sum()), float((w[mine] * y[mine]).sum()), float(w[mine].sum())])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1] = [a + b for a, b in zip(blocks[-1], last, strict=True)]
    # merging two adjacent blocks of a non-decreasing sequence keeps it non-decreasing
    while len(blocks) > 1:
        small = min(range(len(blocks)), key=lambda k: blocks[k][2])
        if blocks[small][2] >= min_block:
            break
        if small == 0:
            other = 1
        elif small == len(blocks) - 1:
            other = small - 1
        else:  # the neighbour whose share is closer
            share = blocks[small][1] / blocks[small][2]
            left, right = blocks[small - 1], blocks[small + 1]
            other = small - 1 if share - left[1] / left[2] <= right[1] / right[2] - share else small + 1
        a, b = sorted((small, other))
        blocks[a] = [u + v for u, v in zip(blocks[a], blocks[b], strict=True)]
        del blocks[b]
    return [(sx / sw, sy / sw, sw) for sx, sy, sw in blocks]


def fit_curve(p: Sequence[float], right: Sequence[bool], weights: Sequence[float] | None = None) -> Curve:
    """The isotonic curve of right-or-wrong on raw probability (see the module's docstring); a
    block's share is smoothed by its weight, so values that weigh little are little evidence."""
    x = np.asarray(p, dtype=float)
    y = np.asarray(right, dtype=float)
    w = None if weights is None else np.asarray(weights, dtype=float)
    xs: list[float] = []
    ys: list[float] = []
    for mean_x, share, weight in isotonic_blocks(x, y, w):
        xs.append(round(mean_x, 6))
        ys.append(round(max((share * weight + 1) / (weight + 2), ys[-1] if ys else 0.0), 4))
    return Curve(xs, ys, len(x))


def fit(
    kinds: Sequence[str],
    p: Sequence[float],
    right: Sequence[bool],
    fitted_on: dict[str, str | int | float],
    weights: Sequence[float] | None = None,
) -> Calibration:
    """A curve per kind with enough values, and the pooled curve of every value (not lines)."""
    ka, pa, ra = np.asarray(kinds), np.asarray(p, dtype=float), np.asarray(right, dtype=bool)
    wa = np.ones(len(pa)) if weights is None else np.asarray(weights, dtype=float)
    curves = {}
    for kind in KINDS:
        mask = ka == kind
        if mask.sum() >= MIN_KIND:
            curves[kind] = fit_curve(pa[mask], ra[mask], wa[mask])
    values = ka != "line"
    fallback = fit_curve(pa[values], ra[values], wa[values]) if values.any() else None
    return Calibration(curves=curves, fallback=fallback, fitted_on=fitted_on)


def plot(sets: Mapping[str, tuple[Sequence[float], Sequence[bool]]], path: str, title: str = "") -> None:
    """A reliability diagram: per confidence bin, the share of right values against the mean
    confidence, one line per set (each bin's point sized by its values), the diagonal for a
    perfectly calibrated model; each set's ECE and n in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 5.0), dpi=120)
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfectly calibrated")
    for name, (p, right) in sets.items():
        pa, ra = np.asarray(p, dtype=float), np.asarray(right, dtype=bool)
        if not len(pa):
            continue
        rows = reliability(pa, ra)
        xs, ys = [r["confidence"] for r in rows], [r["accuracy"] for r in rows]
        (line,) = ax.plot(xs, ys, linewidth=1, label=f"{name}: ECE {ece(pa, ra):.3f}, n={len(pa)}")
        # a point's area is its bin's share of the values: a bin of two values is not evidence
        sizes = [12 + 400 * r["values"] / len(pa) for r in rows]
        ax.scatter(xs, ys, s=sizes, color=line.get_color(), alpha=0.7, zorder=3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence shown (mean per bin of 0.1)")
    ax.set_ylabel("share of values right")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title or "reliability of value confidence")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
