"""Child traits: inheritance, then mutation, then clamping.

* ``overrides`` (only with mutation ``none``) replace the six traits outright.
* ``mate`` crosses over trait by trait: trait *i* (order ``length, girth, curl, hue, gait, temper``) comes
  from parent A when bit *i* of the nonce is 0 and from parent B when it is 1.
* every other recipe starts from the parents' mean, rounded toward zero (``body`` keeps its one parent's).
* ``drift`` adds ``draw("drift", trait) mod 101 − 50`` (−50..50) to each trait; ``leap`` re-draws the trait
  number ``draw("leap") mod 6`` as ``draw("leap-value") mod 2001 − 1000``. ``draw(labels…)`` is the first
  8 bytes (big-endian) of ``SHA-256("quineling-offspring:" + labels joined by ":" + ":" + nonce)``, nonce in
  decimal.
* every trait is finally clamped to −1000..1000.
"""

from __future__ import annotations

import hashlib

from quineling.runtime.program import TRAIT_MAX, TRAIT_MIN, TRAITS
from stores.jsontypes import JSON


def draw(nonce: int, *labels: str) -> int:
    text = "quineling-offspring:" + ":".join(labels) + f":{nonce}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _mean_toward_zero(values: list[int]) -> int:
    total = sum(values)
    magnitude = abs(total) // len(values)
    return magnitude if total >= 0 else -magnitude


def _clamp(value: int) -> int:
    return max(TRAIT_MIN, min(TRAIT_MAX, value))


def derive_traits(recipe: str, parents: list[dict[str, int]], offspring: JSON) -> dict[str, int]:
    """``parents`` are the parents' trait maps in input order; ``offspring`` is the complete input."""
    if "overrides" in offspring:
        return {name: _clamp(offspring["overrides"][name]) for name in TRAITS}
    nonce = offspring["nonce"]
    if recipe == "mate":
        traits = {name: parents[(nonce >> i) & 1][name] for i, name in enumerate(TRAITS)}
    else:
        traits = {name: _mean_toward_zero([p[name] for p in parents]) for name in TRAITS}
    if offspring["mutation"] == "drift":
        traits = {name: value + draw(nonce, "drift", name) % 101 - 50 for name, value in traits.items()}
    elif offspring["mutation"] == "leap":
        chosen = TRAITS[draw(nonce, "leap") % len(TRAITS)]
        traits[chosen] = draw(nonce, "leap-value") % (TRAIT_MAX - TRAIT_MIN + 1) + TRAIT_MIN
    return {name: _clamp(value) for name, value in traits.items()}
