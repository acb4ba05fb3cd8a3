"""Frame sampling: the lifeform's surface at an animation phase.

The body is a tube around a planar spine of length ``L``; the anatomy's nodes own consecutive, equal stretches
of the spine in node order. The tube is sampled as ``R`` rings of ``M`` points, ``M = max(8, ⌊√(budget/4)⌋)``
and ``R = ⌊budget / M⌋`` (so ``R·M ≤ budget`` and within ``M`` of it; budget 4000 → 31×129 = 3999 points).
Ring ``r`` sits at ``u = r/(R−1)`` (0 = head, 1 = tail) and is owned by node ``min(n−1, ⌊u·n⌋)``. Point ``r·M + j`` is
ring ``r``, column ``j``. Ridges are the mesh edges: first every ring edge (``j`` to ``j+1 mod M``) in point
order, then every edge along the body (ring ``r`` to ``r+1``, same column) in point order.

Geometry, with traits ``t/1000`` written as ``ℓ, g, c, a, τ`` (length, girth, curl, gait, temper) and
``s = u·L``:

- spine length ``L = repeats · 2 · (1 + 0.6ℓ)``; base radius ``r0 = 0.25 · (1 + 0.8g)``;
- curl bends the spine into a circular arc in the xy plane with total turn ``1.5π·c`` (curvature ``κ = turn/L``),
  limited to ``|κ| ≤ 0.9 / (1.35·r0)`` so the tube never folds through itself;
- the travelling wave ``w = sin(θ + k·sin θ)``, ``θ = 2π(crests·u − p)``: ``crests`` crests along the body,
  moving tailward as the phase grows; temper skews the crests (``k = 0.6τ``, a steeper front for positive
  temper); ``w`` lifts the spine along z by ``A·w`` with gait setting the amplitude ``A = r0·(0.6 + 0.4a)``,
  and swells the radius: ``r = r0 · (0.4 + 0.6·sin(πu)) · (1 + 0.35w)`` (tapered head and tail);
- hue does not affect geometry. Coordinates are centred on the spine's midpoint.

Points are rounded to 6 decimals as ``round(x·10⁶)/10⁶`` (an int over 1e6, so never ``-0.0``). Normals are
analytic (cross product of the surface's partial derivatives, pointing outward), normalised, rounded the same
way and renormalised, so they are unit length to ~1e-16 and depend only on 6-decimal values. Everything is
plain float arithmetic, so identical input gives identical output.

Periodicity: ``p`` is ``phase`` reduced with ``math.fmod`` (exact) and quantised to 1/65536 of a cycle, so
``phase`` and ``phase + 1`` give identical frames (also when ``phase + 1`` is not exactly representable: their
fractions differ by at most an ulp and land on the same step unless they straddle a rounding midpoint).
"""

from __future__ import annotations

import math

from quineling.runtime.errors import QuinelingError
from quineling.runtime.program import Body
from stores.jsontypes import JSON

PHASE_LIMIT = 1e9
PHASE_STEPS = 65536
BUDGET_MIN, BUDGET_MAX = 4000, 24000
CRESTS_MIN, CRESTS_MAX = 2, 4
_TWO_PI = 2.0 * math.pi


def phase_fraction(phase: float) -> float:
    """``phase`` mod 1 on a 1/65536 grid, in [0, 1); identical for ``phase`` and ``phase + 1``."""
    step = round(math.fmod(phase, 1.0) * PHASE_STEPS) % PHASE_STEPS
    return step / PHASE_STEPS


def _check(phase: object, budget: object, crests: object) -> None:
    if isinstance(phase, bool) or not isinstance(phase, int | float):
        raise QuinelingError("invalid-request", "phase must be a number", "phase")
    if not math.isfinite(phase):
        raise QuinelingError("non-finite", "phase must be finite", "phase")
    if abs(phase) > PHASE_LIMIT:
        raise QuinelingError("invalid-request", "phase must be within ±1e9", "phase")
    for value, lo, hi, path in (
        (budget, BUDGET_MIN, BUDGET_MAX, "options.budget"),
        (crests, CRESTS_MIN, CRESTS_MAX, "options.crests"),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise QuinelingError("invalid-request", f"must be an integer in {lo}..{hi}", path)


def sample_frame(anatomy: JSON, body: Body, phase: float, budget: int, crests: int) -> JSON:
    _check(phase, budget, crests)
    node_ids = [node["id"] for node in anatomy["nodes"]]
    n_nodes = len(node_ids)
    if n_nodes == 0:
        return {"points": [], "normals": [], "owners": [], "ridges": [], "nodeIds": []}

    t = {name: value / 1000.0 for name, value in body["traits"].items()}
    spine = body["repeats"] * 2.0 * (1.0 + 0.6 * t["length"])
    r0 = 0.25 * (1.0 + 0.8 * t["girth"])
    kappa_limit = 0.9 / (1.35 * r0)
    kappa = max(-kappa_limit, min(kappa_limit, 1.5 * math.pi * t["curl"] / spine))
    amplitude = r0 * (0.6 + 0.4 * t["gait"])
    skew = 0.6 * t["temper"]
    p = phase_fraction(phase)

    cols = max(8, math.isqrt(budget // 4))
    rings = budget // cols
    circle = [(math.cos(_TWO_PI * j / cols), math.sin(_TWO_PI * j / cols)) for j in range(cols)]

    def centre(s: float) -> tuple[float, float]:
        if kappa == 0.0:
            return s, 0.0
        return math.sin(kappa * s) / kappa, (1.0 - math.cos(kappa * s)) / kappa

    mid_x, mid_y = centre(spine / 2.0)
    points: list[list[float]] = []
    normals: list[list[float]] = []
    owners: list[int] = []
    dtheta_du = _TWO_PI * crests
    add_point, add_normal, rnd, sqrt = points.append, normals.append, round, math.sqrt
    for ring in range(rings):
        u = ring / (rings - 1)
        s = u * spine
        cx, cy = centre(s)
        cx, cy = cx - mid_x, cy - mid_y
        ca, sa = math.cos(kappa * s), math.sin(kappa * s)
        theta = _TWO_PI * (crests * u - p)
        wave_arg = theta + skew * math.sin(theta)
        w = math.sin(wave_arg)
        dw = math.cos(wave_arg) * (1.0 + skew * math.cos(theta)) * dtheta_du / spine
        taper = 0.4 + 0.6 * math.sin(math.pi * u)
        dtaper = 0.6 * math.pi * math.cos(math.pi * u) / spine
        swell = 1.0 + 0.35 * w
        radius = r0 * taper * swell
        dradius = r0 * (dtaper * swell + taper * 0.35 * dw)
        lift = amplitude * w
        dlift = amplitude * dw
        owner = min(n_nodes - 1, int(u * n_nodes))
        for cos_phi, sin_phi in circle:
            rc = radius * cos_phi
            add_point(
                [
                    rnd((cx - rc * sa) * 1e6) / 1e6,
                    rnd((cy + rc * ca) * 1e6) / 1e6,
                    rnd((lift + radius * sin_phi) * 1e6) / 1e6,
                ]
            )
            # Outward normal in the (tangent, normal, binormal) frame: ∂P/∂φ × ∂P/∂s without the r factor.
            alpha = 1.0 - kappa * rc
            n_t = -(dradius * cos_phi * cos_phi + (dlift + dradius * sin_phi) * sin_phi)
            n_n = alpha * cos_phi
            nx, ny, nz = n_t * ca - n_n * sa, n_t * sa + n_n * ca, alpha * sin_phi
            norm = sqrt(nx * nx + ny * ny + nz * nz)
            nx, ny, nz = rnd(nx / norm * 1e6) / 1e6, rnd(ny / norm * 1e6) / 1e6, rnd(nz / norm * 1e6) / 1e6
            # Renormalise the rounded vector: unit length to ~1e-16, still a function of 6-decimal values.
            norm = sqrt(nx * nx + ny * ny + nz * nz)
            add_normal([nx / norm, ny / norm, nz / norm])
        owners.extend([owner] * cols)

    total = rings * cols
    around = [[i, i + 1 if (i + 1) % cols else i + 1 - cols] for i in range(total)]
    along = [[i, i + cols] for i in range(total - cols)]
    ridges = around + along
    return {"points": points, "normals": normals, "owners": owners, "ridges": ridges, "nodeIds": node_ids}
