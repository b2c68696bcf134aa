"""How many boundary points each part gets: where the problem's conditions read them, and
where they are aimed (`problem.boundary_points`).

    counts = boundary_counts(problem, 400)                        # {part: count}, sum 400
    counts = boundary_counts(problem, 400, {"hole": 300})         # 300 on the hole
    counts = boundary_counts(problem, 400, {"hole": 0.75})        # the same, as a share
    points = PointSampler(problem.domain, 2000, counts, "sobol", generator)

Only the parts some condition reads get points (`Condition.boundary_parts`: a Dirichlet's `on`,
an Initial's `<time>_min`, a Periodic's first face; every part for "boundary" or a predicate;
none for observations); a problem without boundary terms (its conditions hard constraints)
draws none. Unaimed parts share what the aimed ones leave by measure, exactly as the whole
boundary's points were shared before: with every part used and none aimed, the draw is the
one `domain.sample_boundary(n_boundary)` gives.
"""

from __future__ import annotations

from collections.abc import Mapping

from pinn.errors import ConfigError, require_int
from pinn.problem.problem import Problem

KEY = "problem.boundary_points"


def used_parts(problem: Problem) -> tuple[str, ...]:
    """The domain's boundary parts that some condition of `problem` reads, in the domain's
    order. A part name the domain lacks is left to the condition to refuse at its first step."""
    names = problem.domain.part_names
    used = {part for c in problem.conditions for part in c.boundary_parts(names)}
    return tuple(part for part in names if part in used)


def boundary_counts(
    problem: Problem, n_boundary: int, aimed: Mapping[str, int | float] | None = None
) -> dict[str, int]:
    """{part: count}: the boundary points of one draw, per part, for `PointSampler`.

    Args:
        problem: whose conditions say which parts need points (`used_parts`).
        n_boundary: the points of a draw, over the used parts; may be 0 when none is used.
        aimed: {part: count (a whole number >= 1) or share of n_boundary (in (0, 1), rounded
            to a count)}; the used parts not named share the remaining points by measure. When
            every used part is named, the draw holds the named counts only.

    Returns:
        {part: count} for each used part ({} when no condition reads boundary points).

    Raises:
        ConfigError: an aimed part unknown to the domain or read by no condition, a count or
            share out of range, more points aimed than n_boundary, none left for the parts not
            aimed, or n_boundary 0 where some condition needs boundary points.
    """
    require_int("problem.n_boundary", n_boundary, minimum=0)
    parts = used_parts(problem)
    aimed_counts = _aimed_counts(problem, parts, n_boundary, dict(aimed or {}))
    if not parts:
        return {}
    if n_boundary == 0:
        names = problem.domain.part_names
        readers = [c.name for c in problem.conditions if c.boundary_parts(names)]
        raise ConfigError(
            f"problem.n_boundary=0 draws no boundary points, but the conditions {readers} "
            "hold on the boundary: give problem.n_boundary >= 1"
        )
    left = n_boundary - sum(aimed_counts.values())
    rest = [part for part in parts if part not in aimed_counts]
    if left < 0 or (rest and left == 0):
        raise ConfigError(
            f"{KEY} aims {sum(aimed_counts.values())} of problem.n_boundary={n_boundary} points "
            f"({aimed_counts}), leaving {max(left, 0)} for {rest or 'no other part'}: raise "
            "problem.n_boundary or lower the counts"
        )
    counts = aimed_counts | problem.domain.share_boundary(left, rest)
    return {part: counts[part] for part in parts}


def _aimed_counts(
    problem: Problem, parts: tuple[str, ...], n_boundary: int, aimed: dict
) -> dict[str, int]:
    """{part: count} of the aimed parts, each checked; shares rounded to counts."""
    for part in aimed:
        if part not in problem.domain.part_names:
            raise ConfigError(
                f"{KEY} names {part!r}, not a boundary part of this domain: its parts are "
                f"{list(problem.domain.part_names)}"
            )
        if part not in parts:
            raise ConfigError(
                f"{KEY} aims points at {part!r}, which no condition of the problem reads (they "
                f"read {list(parts)}): remove it from {KEY}"
            )
    return {part: _count(part, value, n_boundary) for part, value in aimed.items()}


def _count(part: str, value: object, n_boundary: int) -> int:
    """An aimed value as a count: a whole number >= 1 as it is, a share in (0, 1) of
    n_boundary rounded (refused where it rounds to none)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, float) and 0 < value < 1:
        count = round(value * n_boundary)
        if count == 0:
            raise ConfigError(
                f"{KEY}.{part}={value} is a share of problem.n_boundary={n_boundary} that "
                f"rounds to no point: give a count instead, {KEY}.{part}=1 or more"
            )
        return count
    raise ConfigError(
        f"{KEY}.{part}={value!r}: give a count of points (a whole number >= 1, e.g. 600) or a "
        "share of problem.n_boundary (a number between 0 and 1, e.g. 0.25)"
    )
