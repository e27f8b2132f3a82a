"""What a plan costs the lab: credits at the lab's prices, and staff.

The one home of the price formula: the classic terms (`CLASSIC_RATES`), what a protocol costs
under a lab's terms (`CostRates`, the contract of what it charges), and how many people it needs
at once.
Validation, the feasibility check, the counter-proposal, the generator's budgets and the judge all
price a plan here, and the generator draws a lab's own prices here (`draw_rates`).
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Sequence

from replicalab.models.brief import ItemKind, Substitution
from replicalab.models.rates import CLASSIC_ITEM_PRICES, CostRates


class Plan(typing.Protocol):
    """What the price and staff formulas read of a plan: a `Protocol`'s fields of those names, or
    any value that has them (the generator prices its plans from their parts alone)."""

    @property
    def sample_size(self) -> int: ...
    @property
    def controls(self) -> Sequence[str]: ...
    @property
    def duration_days(self) -> int: ...
    @property
    def required_equipment(self) -> Sequence[str]: ...
    @property
    def required_reagents(self) -> Sequence[str]: ...


CLASSIC_RATES = CostRates()
"""The classic terms: 10 per sample, 50 per day, 25 per control, 100 per equipment item, 75 per
reagent. Easy labs charge them; medium and hard labs charge their own (`LabFacts.rates`)."""


def estimate_protocol_cost(
    protocol: Plan, sample_size: int | None = None, rates: CostRates | None = None
) -> float:
    """Credits a protocol consumes under `rates` (the classic terms by default), or would consume
    with `sample_size` samples instead of its own (what the fixer's halving asks)."""
    terms = CLASSIC_RATES if rates is None else rates
    items = sum([terms.price_of(name, "equipment") for name in protocol.required_equipment])
    items += sum([terms.price_of(name, "reagent") for name in protocol.required_reagents])
    return float(
        (protocol.sample_size if sample_size is None else sample_size) * terms.per_sample
        + protocol.duration_days * terms.per_day
        + len(protocol.controls) * terms.per_control
        + items
    )


_STAFF_SAMPLES, _STAFF_CONTROLS, _STAFF_DAYS, _STAFF_EQUIPMENT = 20, 2, 5, 2
STAFF_TERMS = (
    f"sample_size > {_STAFF_SAMPLES}",
    f"controls > {_STAFF_CONTROLS}",
    f"duration_days > {_STAFF_DAYS}",
    f"equipment items > {_STAFF_EQUIPMENT}",
)
"""Each adds one person to the one a protocol needs, as `estimate_staff_load` counts."""


def estimate_staff_load(protocol: Plan) -> int:
    """People a protocol needs at once: one, plus one for each of `STAFF_TERMS` that holds."""
    return (
        1
        + (1 if protocol.sample_size > _STAFF_SAMPLES else 0)
        + (1 if len(protocol.controls) > _STAFF_CONTROLS else 0)
        + (1 if protocol.duration_days > _STAFF_DAYS else 0)
        + (1 if len(protocol.required_equipment) > _STAFF_EQUIPMENT else 0)
    )


RATE_DRAWS = 24
"""Uniforms a lab's prices draw: three rates, then one per listed item."""


def draw_rates(
    price_range: tuple[float, float],
    items: Iterable[tuple[str, ItemKind]],
    substitutions: Iterable[Substitution],
    u: list[float],
) -> CostRates:
    """What a lab charges: the classic terms when `price_range` is (1, 1); otherwise each rate and
    each listed item's price drawn in `price_range` times its classic value (whole credits,
    items in fives) from the `RATE_DRAWS` uniforms `u`, so a Scientist that does not ask prices
    its plans wrong. An allowed substitute never costs more than the item it replaces: taking the
    lab's swap never breaks the budget."""
    low, high = price_range
    if low == high == 1.0:
        return CLASSIC_RATES
    listed = list(items)
    # (classic value, step) of the three rates, then of each listed item; one draw each, in turn
    classics = [
        (CLASSIC_RATES.per_sample, 1.0),
        (CLASSIC_RATES.per_day, 1.0),
        (CLASSIC_RATES.per_control, 1.0),
    ]
    classics += [(CLASSIC_ITEM_PRICES[kind], 5.0) for _, kind in listed]
    per_sample, per_day, per_control, *drawn = [
        max(step, round(classic * (low + (high - low) * x) / step) * step)
        for (classic, step), x in zip(classics, u, strict=False)
    ]
    prices = {name.lower(): price for (name, _), price in zip(listed, drawn, strict=False)}
    for sub in substitutions:
        original, alternative = sub.original_key, sub.alternative_key
        if original in prices and alternative in prices:
            prices[alternative] = min(prices[alternative], prices[original])
    return CostRates(per_sample=per_sample, per_day=per_day, per_control=per_control, item_prices=prices)
