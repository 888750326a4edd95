"""Inputs and outputs of the fleet solver.

Units are in the names: ``*_qps`` is requests per second, ``usd_per_hour`` is US dollars per
hour, ``time_limit_s`` is wall-clock seconds. A *replica* is one model instance (one copy of the
weights, possibly tensor-parallel over several cards). A *unit* is what the planner buys and is
billed for: one unit of a :class:`FleetOption` has ``cards_per_unit`` *cards* (GPUs) and hosts
``replicas_per_unit`` replicas (e.g. an 8-GPU cloud instance hosting 4 replicas at
tensor-parallel degree 2). The solver chooses a whole number of units per option; counts of
units and counts of replicas are kept apart in every name and docstring below. Every value is
frozen; collections are tuples so equal inputs hash and compare equal.

Construction validates the values (finite, non-negative, consistent lengths, unique keys) and
raises :class:`service.domain.errors.InvalidInput` naming the offending field.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from service.domain.errors import InvalidInput


def _finite_non_negative(value: float, field: str) -> None:
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"{field} must be finite and >= 0, got {value!r}", field=field)


@dataclass(frozen=True, slots=True)
class Bucket:
    """One request shape of the workload.

    ``demand_qps`` is the offered load of this shape in requests/s *before* headroom.
    """

    key: str
    demand_qps: float

    def __post_init__(self) -> None:
        if not self.key:
            raise InvalidInput("bucket key must be non-empty", field="key")
        _finite_non_negative(self.demand_qps, "demand_qps")


@dataclass(frozen=True, slots=True)
class FleetOption:
    """One billed unit the planner can buy: a GPU type, a price offer and what runs on it.

    * ``cards_per_unit``: cards one unit holds (for a whole cloud instance, its card count
      ``n``, not the model's tensor-parallel degree ``t``). A fleet of ``x`` units uses
      ``x * cards_per_unit`` cards of ``gpu_id``: that is what ``FleetProblem.max_cards`` caps
      and what the equal-cost tie-break minimises.
    * ``replicas_per_unit``: model replicas one unit hosts (>= 1; ``n // t`` for an instance of
      ``n`` cards running replicas of degree ``t``). ``FleetProblem.min_replicas`` counts these.
    * ``usd_per_hour``: the price of ONE unit per hour (the whole instance: units are billed
      whole). It must be > 0: a free option would make "the most load a budget buys" unbounded.
    * ``capacity_qps[s]``: the largest request rate of bucket ``s`` (same order as
      ``FleetProblem.buckets``) that ONE unit (all its replicas together) sustains within the
      latency SLO when it serves only that shape; ``0.0`` means the unit cannot serve the shape
      at all. A unit that serves several shapes time-shares: rates ``r_s`` fit iff
      ``sum_s r_s / capacity_qps[s] <= 1``.
    * ``max_units``: caps how many UNITS of this offer can be bought (offer availability;
      ``None``: unbounded).

    * ``provider``, ``region``: where the unit runs (a region is a provider's, so two
      providers' regions of one name are different regions); ``FleetProblem.min_providers`` /
      ``min_regions`` count and survive losing them. Empty: one unnamed place.

    With ``replicas_per_unit == 1`` (the default) a unit is one replica on ``cards_per_unit``
    cards (its tensor-parallel degree).
    """

    key: str
    gpu_id: str
    cards_per_unit: int
    usd_per_hour: float
    capacity_qps: tuple[float, ...]
    max_units: int | None = None
    replicas_per_unit: int = 1
    provider: str = ""
    region: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            raise InvalidInput("option key must be non-empty", field="key")
        if not self.gpu_id:
            raise InvalidInput(f"option {self.key!r}: gpu_id must be non-empty", field="gpu_id")
        if self.cards_per_unit < 1:
            raise InvalidInput(
                f"option {self.key!r}: cards_per_unit must be >= 1, got {self.cards_per_unit}",
                field="cards_per_unit",
            )
        if not math.isfinite(self.usd_per_hour) or self.usd_per_hour <= 0:
            raise InvalidInput(
                f"option {self.key!r}: usd_per_hour must be finite and > 0, "
                f"got {self.usd_per_hour!r}",
                field="usd_per_hour",
            )
        for qps in self.capacity_qps:
            _finite_non_negative(qps, "capacity_qps")
        if self.max_units is not None and self.max_units < 0:
            raise InvalidInput(
                f"option {self.key!r}: max_units must be >= 0, got {self.max_units}",
                field="max_units",
            )
        if self.replicas_per_unit < 1:
            raise InvalidInput(
                f"option {self.key!r}: replicas_per_unit must be >= 1, "
                f"got {self.replicas_per_unit}",
                field="replicas_per_unit",
            )


@dataclass(frozen=True, slots=True)
class FleetProblem:
    """Everything one solve needs.

    * ``headroom``: every bucket's demand is multiplied by ``1 + headroom`` before it is served
      (0.2 = plan for 20 % more load than offered).
    * ``min_replicas``: the fleet hosts at least this many MODEL REPLICAS in total
      (redundancy): ``sum_g replicas_per_unit[g] * units[g] >= min_replicas``. Only options that
      can serve at least one demanded shape count (see :func:`prune.usable_options`).
    * ``max_cards``: ``(gpu_id, cards)`` pairs; the fleet uses at most ``cards`` cards of that
      GPU, summed over all its options (``units * cards_per_unit``). GPUs not listed are
      unbounded.
    * ``allow_mix``: ``False`` forces every unit onto ONE ``gpu_id`` (several offers and
      tensor-parallel degrees of that GPU remain allowed).
    * ``max_gpu_types``: the fleet uses at most this many distinct ``gpu_id`` (0: no limit;
      1 is the same as ``allow_mix=False``). Each extra GPU type is another pool, image and
      runbook to run, so a plan may cap them.
    * ``budget_usd_per_hour``: when the cheapest fleet costs more, the solve says
      ``over_budget`` and reports how much load the budget would buy.
    * ``time_limit_s``: wall-clock limit of EACH HiGHS call (a solve makes at most three:
      see :func:`service.domain.solver.min_cost.solve_fleet`).
    * ``line_min_replicas``: every option the fleet uses hosts at least this many model
      replicas (``replicas_per_unit[g] * units[g] >= line_min_replicas`` whenever
      ``units[g] > 0``), so losing one replica of a line leaves the line serving.
    * ``min_providers``, ``min_regions``: the fleet uses at least this many distinct providers
      (regions); from 2 up it also survives losing any one of them: the options outside the
      lost provider (region) still carry every bucket's demand (headroom included). 0 or 1:
      no condition.
    * ``shared``: every unit bought serves the whole request mix (no shape is sent to a subset
      of the options): each option carries the same fraction of every bucket's demand, so one
      unit of ``g`` carries ``1 / sum_s (share[s] / capacity_qps[s])`` requests/s of the mix
      (time-sharing, as above) and an option that cannot serve some demanded shape cannot be
      used at all. ``False`` (the default): the solver may split shapes across options.

    The order of ``buckets`` and ``options`` does not matter: the solver sorts both by key, so
    shuffled inputs give identical results.
    """

    buckets: tuple[Bucket, ...]
    options: tuple[FleetOption, ...]
    headroom: float = 0.0
    min_replicas: int = 0
    max_cards: tuple[tuple[str, int], ...] = ()
    allow_mix: bool = True
    budget_usd_per_hour: float | None = None
    time_limit_s: float = 2.0
    max_gpu_types: int = 0
    shared: bool = False
    line_min_replicas: int = 0
    min_providers: int = 0
    min_regions: int = 0

    def __post_init__(self) -> None:
        bucket_keys = [b.key for b in self.buckets]
        if len(set(bucket_keys)) != len(bucket_keys):
            raise InvalidInput("bucket keys must be unique", field="buckets")
        option_keys = [o.key for o in self.options]
        if len(set(option_keys)) != len(option_keys):
            raise InvalidInput("option keys must be unique", field="options")
        for option in self.options:
            if len(option.capacity_qps) != len(self.buckets):
                raise InvalidInput(
                    f"option {option.key!r} has {len(option.capacity_qps)} capacities for "
                    f"{len(self.buckets)} buckets",
                    field="options.capacity_qps",
                )
        _finite_non_negative(self.headroom, "headroom")
        if self.min_replicas < 0:
            raise InvalidInput("min_replicas must be >= 0", field="min_replicas")
        if self.max_gpu_types < 0:
            raise InvalidInput("max_gpu_types must be >= 0", field="max_gpu_types")
        for name in ("line_min_replicas", "min_providers", "min_regions"):
            if getattr(self, name) < 0:
                raise InvalidInput(f"{name} must be >= 0", field=name)
        gpu_ids = [gpu for gpu, _ in self.max_cards]
        if len(set(gpu_ids)) != len(gpu_ids):
            raise InvalidInput("max_cards lists a gpu_id twice", field="max_cards")
        for gpu, cards in self.max_cards:
            if cards < 0:
                raise InvalidInput(f"max_cards[{gpu!r}] must be >= 0", field="max_cards")
        if self.budget_usd_per_hour is not None:
            _finite_non_negative(self.budget_usd_per_hour, "budget_usd_per_hour")
        if not math.isfinite(self.time_limit_s) or self.time_limit_s <= 0:
            raise InvalidInput("time_limit_s must be finite and > 0", field="time_limit_s")

    @property
    def type_limit(self) -> int:
        """Most distinct GPU types the fleet may use: 1 without mixing, else
        ``max_gpu_types`` (0: no limit)."""
        return 1 if not self.allow_mix else self.max_gpu_types

    @property
    def total_demand_qps(self) -> float:
        """Sum of bucket demands in requests/s, before headroom."""
        return math.fsum(b.demand_qps for b in self.buckets)


class SolveStatus(enum.StrEnum):
    """How a solve ended.

    * ``optimal``: the cheapest fleet, proven (MIP gap 0), within budget if one is set.
    * ``over_budget``: the cheapest fleet (proven) costs more than the budget; it is returned
      anyway, with ``max_qps_within_budget``.
    * ``infeasible``: no fleet meets the demand under the caps; ``reasons`` say why.
    * ``time_limit``: HiGHS stopped at the time limit; the best fleet found is returned with its
      ``mip_gap`` (it may be dearer than optimal, and may exceed the budget: see ``reasons``).
    """

    OPTIMAL = "optimal"
    OVER_BUDGET = "over_budget"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time_limit"


class ReasonCode(enum.StrEnum):
    """Machine-readable cause attached to a non-optimal outcome.

    ``subject`` of a :class:`Reason` is, per code:

    * ``unservable_bucket``: the bucket key no option can serve (every capacity is 0).
    * ``gpu_cannot_serve``: a gpu_id (single-type solves) that cannot serve ``buckets``.
    * ``no_single_type``: empty; with ``allow_mix=False`` no one GPU serves every bucket.
    * ``single_type``: empty; the single-type rule is what makes the demand unreachable (a mix
      of GPU types would meet it).
    * ``single_vendor``: empty; only a fleet mixing GPU vendors meets the demand and the
      planner's one-vendor rule forbids it (set by the planner, not the solver).
    * ``shared_routing``: empty, or a gpu_id (single-type solves); every shape is servable
      but no option (of that GPU) serves all of them, which ``shared`` needs.
    * ``max_cards``: the gpu_id whose card cap is too low; ``shortfall`` = missing cards.
    * ``max_units``: the option key whose unit cap (``FleetOption.max_units``) is too
      low; ``shortfall`` = missing UNITS of that option.
    * ``min_replicas``: empty; the caps allow fewer model replicas than ``min_replicas``;
      ``shortfall`` = missing model replicas.
    * ``line_min_replicas``: empty, or a gpu_id (single-type solves); the caps leave no
      option able to host ``line_min_replicas`` replicas on its own.
    * ``spread``: ``min_providers`` or ``min_regions``, the setting no fleet can meet: too
      few providers (regions) offer a usable option (``shortfall`` = how many more are
      needed), or losing one leaves a shape nobody else serves.
    * ``budget``: empty; ``shortfall`` = USD/hour above the budget.
    * ``time_limit``: empty; HiGHS stopped before finding (or proving) a fleet.
    * ``solver_error``: empty; HiGHS failed (numerical trouble); not expected in practice.
    """

    UNSERVABLE_BUCKET = "unservable_bucket"
    GPU_CANNOT_SERVE = "gpu_cannot_serve"
    NO_SINGLE_TYPE = "no_single_type"
    SINGLE_TYPE = "single_type"
    SINGLE_VENDOR = "single_vendor"
    SHARED_ROUTING = "shared_routing"
    MAX_CARDS = "max_cards"
    MAX_UNITS = "max_units"
    MIN_REPLICAS = "min_replicas"
    LINE_MIN_REPLICAS = "line_min_replicas"
    SPREAD = "spread"
    BUDGET = "budget"
    TIME_LIMIT = "time_limit"
    SOLVER_ERROR = "solver_error"


@dataclass(frozen=True, slots=True)
class Reason:
    """One cause, precise enough for the planner to phrase a sentence from.

    ``shortfall`` is in the unit the code names (cards, units of an option, model replicas,
    USD/hour; see :class:`ReasonCode`); ``buckets`` lists
    bucket keys where relevant (``gpu_cannot_serve``). ``message`` is an English fallback.
    """

    code: ReasonCode
    subject: str = ""
    shortfall: float | None = None
    buckets: tuple[str, ...] = ()
    message: str = ""

    @property
    def label(self) -> str:
        """``code`` or ``code:subject``: the same spelling as the binding labels."""
        return f"{self.code}:{self.subject}" if self.subject else str(self.code)


@dataclass(frozen=True, slots=True)
class FleetSolution:
    """The outcome of one solve.

    * ``usd_per_hour``: cost of the returned fleet (0.0 when there is none).
    * ``units``: ``(option key, units)``: how many UNITS of each option to buy (not model
      replicas: a unit hosts ``replicas_per_unit`` of them), only counts > 0, sorted by key.
      :attr:`total_units` sums it.
    * ``model_replicas``: ``(option key, model replicas)``: the same options in the same order,
      ``units * replicas_per_unit``. :attr:`total_replicas` sums it.
    * ``cards``: ``(gpu_id, cards)``, only counts > 0, sorted by gpu_id.
    * ``served_qps``: ``(bucket key, option key, requests/s)`` sorted by keys; rates include
      headroom, so per bucket they add up to ``demand_qps * (1 + headroom)``.
    * ``utilization``: ``(option key, share)``: the fraction of the option's unit-time the
      served load uses, in [0, 1] (``sum_s served[s] / capacity[s] / units``).
    * ``binding``: labels of the constraints active at this fleet, sorted: ``demand:<bucket>``
      (always, for demanded buckets), ``max_cards:<gpu_id>``, ``max_units:<option>``,
      ``min_replicas``, ``budget``. Active means tight, not necessarily costly:
      :func:`service.domain.solver.whatif.relaxation_savings` prices each one.
    * ``max_qps_within_budget``: total offered load in requests/s, BEFORE headroom, that the
      budget can serve with the same shape mix (``None`` when not computed).
    * ``mip_gap``: relative gap HiGHS reported (0.0 when proven optimal).
    * ``reasons``: why the status is not plain ``optimal``.
    """

    status: SolveStatus
    usd_per_hour: float = 0.0
    units: tuple[tuple[str, int], ...] = ()
    cards: tuple[tuple[str, int], ...] = ()
    served_qps: tuple[tuple[str, str, float], ...] = ()
    utilization: tuple[tuple[str, float], ...] = ()
    binding: tuple[str, ...] = ()
    max_qps_within_budget: float | None = None
    mip_gap: float = 0.0
    reasons: tuple[Reason, ...] = ()
    model_replicas: tuple[tuple[str, int], ...] = ()

    @property
    def has_fleet(self) -> bool:
        """True when a fleet is returned (every status but ``infeasible``)."""
        return self.status is not SolveStatus.INFEASIBLE

    @property
    def total_replicas(self) -> int:
        """Model replicas in the fleet (what ``min_replicas`` counts): sum of
        ``model_replicas``, i.e. ``units * replicas_per_unit`` over the options."""
        return sum(n for _, n in self.model_replicas)

    @property
    def total_units(self) -> int:
        """Units (billed instances, or owned replicas) in the fleet: sum of ``units``."""
        return sum(n for _, n in self.units)

    @property
    def total_cards(self) -> int:
        """Cards (GPUs) in the fleet."""
        return sum(n for _, n in self.cards)
