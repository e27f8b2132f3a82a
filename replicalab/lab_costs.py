"""The lab's cost and staff formulas, in one place for validation, the Lab Manager and the judge."""

from __future__ import annotations

from replicalab.models import CostRates, Protocol

CLASSIC_RATES = CostRates()
"""The classic terms: 10 per sample, 50 per day, 25 per control, 100 per equipment item, 75 per
reagent. Easy labs charge them; medium and hard labs charge their own (`LabFacts.rates`)."""


def estimate_protocol_cost(
    protocol: Protocol, sample_size: int | None = None, rates: CostRates | None = None
) -> float:
    """Credits a protocol consumes under `rates` (the classic terms by default), or would consume
    with `sample_size` samples instead of its own (what the fixer's halving asks)."""
    terms = CLASSIC_RATES if rates is None else rates
    items = sum(terms.price_of(name, "equipment") for name in protocol.required_equipment)
    items += sum(terms.price_of(name, "reagent") for name in protocol.required_reagents)
    return float(
        (protocol.sample_size if sample_size is None else sample_size) * terms.per_sample
        + protocol.duration_days * terms.per_day
        + len(protocol.controls) * terms.per_control
        + items
    )


def estimate_staff_load(protocol: Protocol) -> int:
    """People a protocol needs at once: one, plus one each for over 20 samples, over two
    controls, over five days and over two equipment items."""
    return (
        1
        + (1 if protocol.sample_size > 20 else 0)
        + (1 if len(protocol.controls) > 2 else 0)
        + (1 if protocol.duration_days > 5 else 0)
        + (1 if len(protocol.required_equipment) > 2 else 0)
    )
