"""What the judge pays beyond the base score, and which rounds an agreement may take for free.

A plan earns each bonus in proportion to its base (`base / 10`), so a feasible plan that tests
little is paid little, however quickly it agreed.
"""

from __future__ import annotations

ALL_CHECKS_BONUS = 1.0
"""The judge's bonus to a plan that passes all seven checks, at a perfect base; a plan earns it in
proportion to its base (`base / 10`), so a feasible plan that tests little is paid little."""
EFFICIENCY_BONUS = 0.25
"""The judge's bonus per round saved (`saved_rounds`) to a plan that earns `ALL_CHECKS_BONUS`, at
a perfect base, and likewise in proportion to its base."""
FREE_ROUNDS = 3
"""Rounds an agreement may take at no cost to the efficiency bonus: one question, one proposal,
one acceptance. The lab's prices are private, so a Scientist that asks before it proposes needs
three; only rounds beyond them are charged, and information worth having is never taxed away."""
PAID_ROUNDS = 3
"""Rounds after `FREE_ROUNDS` whose saving the efficiency bonus pays for. A fixed window, not the
rounds left before the limit: a bonus that grew with `max_rounds` would, at a long limit, outweigh
the plan it is paid on."""


def saved_rounds(rounds_used: int) -> int:
    """Rounds the efficiency bonus pays for: those of the `PAID_ROUNDS` after `FREE_ROUNDS` that an
    agreement in `rounds_used` rounds leaves unused."""
    return max(0, FREE_ROUNDS + PAID_ROUNDS - max(rounds_used, FREE_ROUNDS))
