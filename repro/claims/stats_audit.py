"""Audit of the statistics the paper prints, and the seeds each claim needs for power.

Wherever the text gives a gap's mean, s.d., n, p or d together (Section 4.1 states
the convention: paired t-tests and Cohen's d over 10 or 5 seeds), one of them
follows from the others. Each printed number stands for the interval it rounds
from: 1.28 -> [1.275, 1.285], p=.011 -> [0.0105, 0.0115], 1.2×10^-4 ->
[1.15e-4, 1.25e-4], and "p<10^-5" is the bound (0, 1e-5]. A check passes when
some point of those intervals reproduces the other number.

Everything here is a function of the ratio r = mean / sd (d_z = r, t = r sqrt(n)),
which is monotone in mean and sd, so the corners of the (mean, sd) box bound r
and every check is an overlap of intervals of |r|. By Helly's theorem in one
dimension, pairwise agreement of the (mean, sd), d and p rows implies one point
reproduces all of them at once. d is compared as a magnitude (a negative gap's
d is often printed unsigned); p is two-sided.

"All n seeds positive" is checked with a sound necessary condition: for n
non-negative differences, sum x^2 <= (sum x)^2, so sd <= sum x / sqrt(n) and
mean / sd >= 1 / sqrt(n). A reported (mean, sd), d or p whose |r| cannot reach
1/sqrt(n), or a mean of the wrong sign, contradicts it. A mix of signs
constrains nothing and is not checked.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable

from repro.spec.paper import PaperValue
from repro.claims.stats import Record, p_from_t, paper_effect, power_at, seeds_for_power, states_a_test, t_from_p


@dataclass(frozen=True)
class Interval(Record):
    lo: float
    hi: float

    def overlaps(self, other: Interval) -> bool:
        return self.lo <= other.hi and other.lo <= self.hi

    def text(self) -> str:
        return f"[{_g(self.lo)}, {_g(self.hi)}]"

    def magnitude(self) -> Interval:
        """The interval of |x| for x in this interval."""
        lo = 0.0 if self.lo <= 0 <= self.hi else min(abs(self.lo), abs(self.hi))
        return Interval(lo, max(abs(self.lo), abs(self.hi)))


def _g(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


# ---------------------------------------------------------------------------
# Reading printed numbers.

_MANT = r"\d*\.?\d+"
_NUM = rf"(?:{_MANT}\s*[×x*]\s*)?10\^[-+]?\d+|{_MANT}(?:[eE][-+]?\d+)?"  # 1.2×10^-4, 10^-5, .011, 1e-5
_SCI = re.compile(rf"(?:(?P<m>{_MANT})\s*[×x*]\s*)?10\^(?P<e>[-+]?\d+)|(?P<m2>{_MANT})(?:[eE](?P<e2>[-+]?\d+))?")


def _normalise(text: str) -> str:
    for old, new in (("$", ""), ("{", ""), ("}", ""), ("\\times", "×"), ("\\pm", "±"), ("−", "-"),
                     ("\\%", "%"), ("\\,", ""), ("≤", "<")):  # fmt: skip
        text = text.replace(old, new)
    return text


def parse_number(token: str) -> tuple[float, float]:
    """(value, half unit of the last printed digit) of ".011", "1.28", "10^-5", "1.2×10^-4", "1.2e-4"."""
    match = _SCI.fullmatch(_normalise(token).strip().lstrip("+-"))
    if match is None:
        raise ValueError(f"not a printed number: {token!r}")
    mantissa = match["m"] or match["m2"] or "1"
    exponent = int(match["e"] or match["e2"] or 0)
    places = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(mantissa) * 10.0**exponent, 0.5 * 10.0 ** (exponent - places)


def _float_half_unit(x: float) -> float:
    """Half unit of the coarsest rounding a stored float is compatible with (1.0 -> 0.5)."""
    exponent = Decimal(repr(abs(float(x)))).normalize().as_tuple().exponent
    return 0.5 * 10.0 ** min(int(exponent), 0)


@dataclass(frozen=True)
class Printed:
    """The number tokens of a PaperValue's ``printed`` text, where present."""

    mean: str | None = None
    sd: str | None = None
    p: str | None = None  # e.g. "<10^-5", "=.011"
    d: str | None = None


def read_printed(printed: str) -> Printed:
    text = _normalise(printed)
    p = re.search(rf"(?<![A-Za-z])p\s*([<=])\s*({_NUM})", text)
    d = re.search(rf"(?<![A-Za-z])d\s*=\s*([-+]?{_NUM})", text)
    sd = re.search(rf"±\s*({_NUM})", text)
    rest = text
    for m in (p, d):
        if m:
            rest = rest.replace(m.group(0), " ")
    mean = re.search(rf"[-+]?(?:{_NUM})", rest.split("±")[0])
    return Printed(
        mean=mean.group(0) if mean else None,
        sd=sd.group(1) if sd else None,
        p=(p.group(1) + p.group(2)) if p else None,
        d=d.group(1) if d else None,
    )


def rounding_interval(stored: float, token: str | None, approx: bool = False) -> Interval:
    """Interval a stored number was rounded from: the printed token's precision when it
    matches the stored value, else the coarsest precision the float allows."""
    half = None
    if token is not None:
        value, token_half = parse_number(token)
        if abs(value - abs(stored)) <= token_half * 1.000001:
            half = token_half
    if half is None:
        half = _float_half_unit(stored)
    if approx:
        half *= 2
    return Interval(stored - half, stored + half)


def p_interval(p: float, relation: str, token: str | None = None) -> Interval:
    """Interval of a reported p: "=" rounds like any number, "<" is the bound (0, p]."""
    if relation == "<":
        return Interval(0.0, p)
    iv = rounding_interval(p, token.lstrip("=<") if token else None)
    return Interval(max(iv.lo, 0.0), min(iv.hi, 1.0))


# ---------------------------------------------------------------------------
# |r| = |mean| / sd intervals and the p they imply.


def abs_ratio(mean: Interval, sd: Interval) -> Interval:
    """|mean| / sd over the box; monotone, so the corners bound it."""
    m = mean.magnitude()
    sd_lo = max(sd.lo, 0.0)
    return Interval(m.lo / sd.hi, m.hi / sd_lo if sd_lo > 0 else math.inf)


def ratio_from_p(p: Interval, n: int) -> Interval:
    return Interval(t_from_p(p.hi, n - 1) / math.sqrt(n), t_from_p(p.lo, n - 1) / math.sqrt(n))


def p_from_ratio(r: Interval, n: int) -> Interval:
    return Interval(p_from_t(r.hi * math.sqrt(n), n - 1), p_from_t(r.lo * math.sqrt(n), n - 1))


# ---------------------------------------------------------------------------
# The audit.


@dataclass(frozen=True)
class AuditRow(Record):
    key: str
    section: str
    check: str  # e.g. "p from mean, sd, n"
    reported: str  # the reported number as printed (or as stored, when not printed)
    reported_interval: str  # what rounding allows it to be, or what the check requires
    recomputed: str  # what the other numbers imply, an interval
    verdict: str  # "consistent", "inconsistent" or "not checkable: <why>"


@dataclass(frozen=True)
class _Read:
    """A PaperValue's statistics as intervals; d as a magnitude."""

    mean: Interval | None
    sd: Interval | None
    n: int | None
    p: Interval | None
    p_text: str
    d: Interval | None
    d_text: str

    def given(self) -> list[str]:
        fields = (("mean", self.mean), ("sd", self.sd), ("n", self.n), ("p", self.p), ("d", self.d))
        return [name for name, x in fields if x is not None]


def _read(v: PaperValue) -> _Read:
    tok = read_printed(v.printed)
    mean = rounding_interval(v.value, tok.mean, v.approx) if v.value is not None else None
    sd = rounding_interval(v.sd, tok.sd, v.approx) if v.sd is not None else None
    p = p_interval(v.p, v.p_relation, tok.p) if v.p is not None else None
    p_text = f"p{tok.p}" if tok.p else f"p{v.p_relation}{v.p:g}" if v.p is not None else ""
    d = rounding_interval(v.d, tok.d).magnitude() if v.d is not None else None
    d_text = f"d={tok.d or f'{v.d:g}'}" if v.d is not None else ""
    return _Read(mean, sd, v.n, p, p_text, d, d_text)


def _verdict(ok: bool) -> str:
    return "consistent" if ok else "inconsistent"


def _sign_rows(v: PaperValue, r: _Read, row) -> list[AuditRow]:
    """ "k of n seeds positive" against the sign of the mean and |d_z| >= 1/sqrt(n)."""
    k, n = v.positive_seeds, v.n
    if k is None:
        return []
    claim = f"{k} of {n} seeds positive" if n is not None else f"{k} seeds positive"
    if n is None:
        return [row(claim, str(k), "", "", "not checkable: n not given")]
    if not 0 <= k <= n:
        return [row(claim, str(k), f"0..{n}", "", "inconsistent")]
    if 0 < k < n:
        return [row(claim, str(k), "", "", "not checkable: a mix of signs constrains neither mean nor spread")]
    positive = k == n
    sign_ok = r.mean is None or (r.mean.hi > 0 if positive else r.mean.lo < 0)
    if r.mean is not None and r.sd is not None:
        ratio, source = abs_ratio(r.mean, r.sd), "mean, sd"
    elif r.d is not None:
        ratio, source = r.d, "d"
    elif r.p is not None and n >= 2:
        ratio, source = ratio_from_p(r.p, n), "p, n"
    elif r.mean is not None:
        required = f"mean {'>' if positive else '<'} 0"
        return [row(f"{claim} vs sign of mean", str(k), required, f"mean in {r.mean.text()}", _verdict(sign_ok))]
    else:
        return [row(claim, str(k), "", "", "not checkable: no mean, sd, d or p to compare with")]
    bound = 1 / math.sqrt(n)
    required = f"|d_z| >= 1/sqrt({n}) = {bound:.4g}"
    if r.mean is not None:
        required += f", mean {'>' if positive else '<'} 0"
    ok = sign_ok and ratio.hi >= bound
    return [row(f"{claim} vs {source}", str(k), required, f"|d_z| in {ratio.text()}", _verdict(ok))]


def audit_value(v: PaperValue) -> list[AuditRow]:
    """Audit rows for one paper value; [] when it states no test (repro.claims.stats.states_a_test)."""
    if not states_a_test(v):
        return []
    r = _read(v)

    def row(check: str, reported: str, reported_interval: str, recomputed: str, verdict: str) -> AuditRow:
        return AuditRow(v.key, v.section, check, reported, reported_interval, recomputed, verdict)

    def compare(check: str, reported: str, printed: Interval, implied: Interval) -> AuditRow:
        return row(check, reported, printed.text(), implied.text(), _verdict(implied.overlaps(printed)))

    rows: list[AuditRow] = []
    box = abs_ratio(r.mean, r.sd) if r.mean is not None and r.sd is not None else None
    n = r.n if r.n is not None and r.n >= 2 else None  # seeds enough for a test
    if box is not None and r.d is not None:
        rows.append(compare("d from mean and sd", r.d_text, r.d, box))
    if box is not None and r.p is not None and n is not None:
        rows.append(compare("p from mean, sd, n", r.p_text, r.p, p_from_ratio(box, n)))
    if r.d is not None and r.p is not None and n is not None:
        rows.append(compare("p from d, n", r.p_text, r.p, p_from_ratio(r.d, n)))
    over_determined = bool(rows)
    rows += _sign_rows(v, r, row)
    if not over_determined:
        given = ", ".join(r.given()) or "seed signs"
        implied = ""
        if box is not None and n is not None:
            implied = f"p in {p_from_ratio(box, n).text()}"
        elif r.p is not None and n is not None:
            implied = f"|d_z| in {ratio_from_p(r.p, n).text()}"
        why = f"not checkable: only {given} given, nothing over-determined"
        rows.append(row("statistics given", given, "", implied, why))
    return rows


def audit(values: Iterable[PaperValue]) -> list[AuditRow]:
    """Recompute every reported statistic that follows from the others, within rounding."""
    return [row for v in values for row in audit_value(v)]


# ---------------------------------------------------------------------------
# Seeds for power at the paper's effect size.


@dataclass(frozen=True)
class PowerRow(Record):
    key: str
    section: str
    effect_size: float  # |d_z| the paper's numbers give (a lower bound when from "p<")
    source: str  # "d", "mean/sd" or "p, n"
    n_paper: int | None
    power_at_paper_n: float | None  # at least this much when the effect size is a bound
    target_power: float
    seeds_needed: int | None  # smallest n reaching target_power; at most this when a bound
    bound: bool  # effect size is a lower bound (from "p<"), so seeds_needed is an upper bound
    note: str = ""


def power_plan(values: Iterable[PaperValue], power: float = 0.8, alpha: float = 0.05) -> list[PowerRow]:
    """For each value stating a test, the seeds a two-sided paired t-test needs for
    ``power`` at the paper's effect size, and the power the paper's own n had.

    Effect sizes estimated from few seeds tend to be inflated by selection, so these
    counts are optimistic; they rank which claims are cheap to re-test.
    """
    rows = []
    for v in values:
        effect = paper_effect(v)
        if effect is None:
            continue
        d, source, bound = effect.d, effect.source, effect.bound
        note, needed = "", None
        if d == 0:
            note = "zero effect size: no n reaches the target power"
        else:
            try:
                needed = seeds_for_power(d, power, alpha)
            except ValueError as exc:
                note = str(exc)
        at_n = power_at(d, v.n, alpha) if v.n is not None and v.n >= 2 else None
        rows.append(PowerRow(v.key, v.section, d, source, v.n, at_n, power, needed, bound, note))
    return rows
