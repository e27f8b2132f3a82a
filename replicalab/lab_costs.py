"""The lab's cost and staff formulas, in one place for validation, the Lab Manager and the judge."""

from __future__ import annotations

from replicalab.models import Protocol


def estimate_protocol_cost(protocol: Protocol, sample_size: int | None = None) -> float:
    """Credits a protocol consumes (10 per sample, 50 per day, 25 per control, 100 per equipment
    item, 75 per reagent), or would consume with
    `sample_size` samples instead of its own (what the fixer's halving asks)."""
    return float(
        (protocol.sample_size if sample_size is None else sample_size) * 10
        + protocol.duration_days * 50
        + len(protocol.controls) * 25
        + len(protocol.required_equipment) * 100
        + len(protocol.required_reagents) * 75
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
