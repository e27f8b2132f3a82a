"""What a lab charges: the contract the Lab Manager knows and the Scientist learns by asking.

Its defaults are the classic terms; the formula that prices a plan with it is `replicalab.prices`.
"""

from __future__ import annotations

from pydantic import Field

from replicalab.models.base import Contract, Credits
from replicalab.models.brief import ItemKind

CLASSIC_ITEM_PRICES: dict[str, float] = {"equipment": 100.0, "reagent": 75.0}
"""An item's price when the lab states none, by kind."""


class CostRates(Contract):
    """What the lab charges, in credits: per sample, per day, per control, and per listed item
    (lower-cased name). The Lab Manager knows them; the Scientist learns them by asking. An item
    without its own price costs its kind's classic price."""

    per_sample: Credits = 10.0
    per_day: Credits = 50.0
    per_control: Credits = 25.0
    item_prices: dict[str, Credits] = Field(default_factory=dict)

    def price_of(self, name: str, kind: ItemKind) -> float:
        return self.item_prices.get(name.lower(), CLASSIC_ITEM_PRICES[kind])
