"""Compile a model: the hard parts of every constraint into the CP-SAT model, and per tuple
position the forms its goals and soft constraints add up to."""

from __future__ import annotations

import contextlib
from fractions import Fraction

import numpy as np

from ..context import EvalContext
from ..cpsat.atoms import shown_magnitude
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import OBJECTIVE_LIMIT
from ..cpsat.linear import Lin, lin_sum
from ..errors import InputError, InternalError
from ..evaluate import split_policy
from ..primitives import Restrictions
from ..problem import Problem
from ..scenario import ConstraintEntry, Model
from .accelerate.symmetry import interchangeable_containers, order_key_dimension
from .positions import Bucket

Guards = list[tuple[object, str, str]]  # (literal, spec name, what it guards)


@contextlib.contextmanager
def where(path: str):
    """Give an InputError raised while compiling a spec (numbers out of range) its path; a
    float overflow there is such a number too."""
    try:
        yield
    except InputError as error:
        if error.path:
            raise
        raise InputError(path, error.problem, error.value) from None
    except OverflowError:
        raise InputError(path, "numbers too large to model exactly (beyond a float's range)"
                         ) from None


def _text(magnitude: Fraction) -> str:
    shown = shown_magnitude(magnitude)
    return f"{shown:.3g}" if isinstance(shown, float) else shown


def check_term(builder: CpBuilder, term: Lin, path: str, what: str, multiplier: float) -> None:
    """A weighted term (a goal times its weight, a violation times its cost) too large for
    an objective even in coarse units, as an InputError naming the multiplier's field."""
    magnitude = builder.magnitude(term)
    if magnitude >= OBJECTIVE_LIMIT:
        raise InputError(path, f"too large to model exactly: {what} reaches "
                         f"{_text(magnitude)} (at most about {float(OBJECTIVE_LIMIT):.3g})",
                         multiplier)


def check_buckets(builder: CpBuilder, buckets: dict[int, Bucket],
                  owners: dict[int, list[tuple[str, Lin]]]) -> None:
    """Each position's objective (the sum of its terms) within what coarse units can count
    (see IntegerForms.integerize_all); else an InputError naming the field of its largest
    term."""
    for position, bucket in buckets.items():
        magnitude = builder.magnitude(lin_sum(bucket.terms))
        if magnitude >= OBJECTIVE_LIMIT and owners.get(position):
            path, _ = max(owners[position], key=lambda owner: builder.magnitude(owner[1]))
            raise InputError(path, f"too large to model exactly: the objective at tuple "
                             f"position {position} reaches {_text(magnitude)} (lower the "
                             "weights or costs at this position, or move some to another)")


def classes_may_span_containers(model: Model) -> bool:
    """Whether identical objects from different initial containers may share a class: only
    when no goal or constraint could gain from swapping them (see Spec.prefers_staying)."""
    return (all(g.spec.prefers_staying() and g.weight >= 0 for g in model.goals)
            and all(c.spec.prefers_staying() and c.invalid_cost >= 0 and c.invalid_state >= 0
                    for c in model.constraints))


def compile_model(problem: Problem, model: Model, aggregate: bool = True,
                  guards: Guards | None = None, leximin: bool = True,
                  accelerate: bool = True, seconds: float | None = None,
                  deadline: float | None = None,
                  scalar_positions: frozenset[int] = frozenset()
                  ) -> tuple[CpBuilder, dict[int, Bucket]]:
    """Build the CP-SAT model: hard parts of constraints, and one objective form per bucket.
    ``aggregate=False`` keeps each initial container's objects in classes of their own;
    ``leximin=False`` compiles IDEAL alone in its bucket to its scalar too, and
    ``scalar_positions`` does so at those positions (a blended sum, an allowed worsening:
    both read the position's value);
    ``accelerate=False`` leaves out the redundant bounds and the symmetry breaking (the
    optimum is the same; tests compare both); ``seconds``, the solve's time limit, sizes
    the searches that compiling runs (a packing dive); past ``deadline`` (the time limit's
    end, ``time.monotonic()``) building stops with OutOfTime.
    With ``guards`` (a list to fill), every hard rule and restriction holds only under a
    literal of its own, recorded as (literal, spec name, what), to explain infeasibility."""
    fixed, non_accepting = model.fixed_objects, model.non_accepting
    # the accelerators count moves and stays from the start, which moves in flight part
    # from where the definitions count (Problem.origin)
    accelerate = accelerate and problem.origin is None
    aggregate = aggregate and classes_may_span_containers(model)
    held = model.held
    named = model.named_objects() | fixed | set(held)
    # objects differing only in dimensions no spec reads share a class
    dims = model.dimensions()
    if guards is None:
        builder = CpBuilder(problem, fixed, non_accepting, named, aggregate, dims,
                            accelerate=accelerate, seconds=seconds, deadline=deadline,
                            held=held)
        if accelerate:
            builder.break_symmetry(interchangeable_containers(problem, model, fixed,
                                                              non_accepting),
                                   order_key_dimension(problem, builder.class_dims))
    else:  # only the hard rules matter, each under its guard: no unguarded redundant bounds
        builder = CpBuilder(problem, frozenset(), frozenset(), named, aggregate, dims,
                            accelerate=False)
        for spec, restriction in model.restrictions:
            if restriction.fixed_objects or restriction.non_accepting:
                guard = builder.cp.new_bool_var(f"restriction {spec.name}")
                with builder.guarded(guard):
                    builder.forbid(restriction.fixed_objects, restriction.non_accepting)
                guards.append((guard, spec.name, restriction_label(problem, restriction)))
    ctx0 = EvalContext(problem, problem.initial, problem.initial)
    buckets: dict[int, Bucket] = {}
    floors = model.floors()

    def bucket(position: int) -> Bucket:
        return buckets.setdefault(position, Bucket(position, floor=floors[position]))

    def since(before: tuple[dict[str, float], dict[str, float]]) -> tuple[float, float]:
        """The error and over-estimate noted since ``before``."""
        return tuple(sum(v - earlier.get(k, 0.0) for k, v in noted.items())
                     for noted, earlier in zip((builder.errors, builder.overs), before))

    def noted() -> tuple[dict[str, float], dict[str, float]]:
        return dict(builder.errors), dict(builder.overs)

    owners: dict[int, list[tuple[str, Lin]]] = {}  # per position: (field, term)
    for index, entry in enumerate(model.constraints):
        builder.check_time()
        before = noted()
        with where(f"constraints[{index}].spec.{entry.spec.arm}"):
            soft_terms = compile_constraint(builder, entry, ctx0, guards)
        if soft_terms is not None:
            for key, term in soft_terms:
                check_term(builder, term, f"constraints[{index}].{key}", "the cost of a "
                           "violation", entry.invalid_cost if key == "invalidCost"
                           else entry.invalid_state)
                owners.setdefault(entry.position, []).append((f"constraints[{index}].{key}",
                                                              term))
            target = bucket(entry.position)
            target.terms.extend(term for _, term in soft_terms)
            error, over = since(before)
            scale = max(entry.invalid_cost, 1.0)
            target.error += error * scale
            target.over += over * scale

    soft_positions = set(buckets)
    leximin_positions = {p: g for p, g in (model.leximin_positions(soft_positions)
                                           if leximin else {}).items()
                         if p not in scalar_positions}
    for entry in model.goals:
        builder.check_time()
        target = bucket(entry.position)
        if entry.position in leximin_positions:
            before = noted()
            with where(f"{entry.path}.spec.{entry.spec.arm}"):
                target.leximin = entry.spec.compile_leximin(builder)
                if accelerate and guards is None:
                    target.scalar.append(entry.spec)
            target.error += since(before)[0]  # forms rounded: the order is not exact
            continue
        before, probes = noted(), len(builder.target_probes)
        with where(f"{entry.path}.spec.{entry.spec.arm}"):
            value = entry.spec.compile_goal(builder).value
        target.probes.extend(builder.target_probes[probes:])
        if entry.weight < 0 and builder.minimization_only(value):  # parse_model rules it out
            raise InternalError(f"{entry.path}: {entry.spec.arm} claims to be linear in the "
                                "assignment but compiled to bounding variables")
        term = value * entry.weight
        check_term(builder, term, f"{entry.path}.weight", "the weighted goal", entry.weight)
        owners.setdefault(entry.position, []).append((f"{entry.path}.weight", term))
        target.terms.append(term)
        error, over = since(before)
        target.error += error * abs(entry.weight)
        # a negative weight turns an under-estimate into an over-estimate
        target.over += (over if entry.weight >= 0 else error) * abs(entry.weight)
    check_buckets(builder, buckets, owners)
    builder.compiled = True
    return builder, dict(sorted(buckets.items()))


def compile_constraint(builder: CpBuilder, entry: ConstraintEntry, ctx0: EvalContext,
                        guards: Guards | None) -> list[tuple[str, Lin]] | None:
    """Hard rules of one constraint, and its soft terms, each with the field of the cost it
    is weighted by (None when it has no soft term).
    Policies as in Rebalancer: DEFAULT keeps initially broken parts soft and no worse than
    they were, the others hard; SOFT all soft; HARD all hard."""
    spec = entry.spec
    infos = spec.compile_infos(builder)
    initial = np.asarray(spec.infos(ctx0), dtype=float)
    split = split_policy(entry, initial)
    labels = spec.info_labels(builder.problem) if guards is not None else None
    penalties = spec.compile_penalties(builder, infos) if split.has_soft_term else None
    soft_terms = []
    for k, info in enumerate(infos):
        rhs = None
        if split.hard[k]:
            rhs = Fraction(0)
            if split.soft[k]:  # initially broken (DEFAULT): no worse than initially
                try:
                    rhs = builder.initial_value(info.expr)
                except ValueError:  # the form involves auxiliaries: use the evaluator's value
                    rhs = Fraction(float(initial[k]))
            if guards is None:
                builder.require(info.expr, rhs, gate=info.gate)
            else:
                guard = builder.cp.new_bool_var(f"hard {spec.name} {k}")
                what = labels[k] if labels else ""
                if split.soft[k]:
                    what = f"{what} (no worse than initially)".strip()
                guards.append((guard, spec.name, what))
                with builder.guarded(guard):
                    builder.require(info.expr, rhs, gate=info.gate)
        if split.soft[k]:
            violation = builder.positive_part(info.expr, gate=info.gate, what=spec.name,
                                              below=True,
                                              at_most=rhs if guards is None else None)
            soft_terms.append(("invalidCost", violation * entry.invalid_cost))
            if penalties is not None:  # P_k where the expression is broken
                soft_terms.append(("invalidCost", penalties[k] * entry.invalid_cost))
            if entry.invalid_state != 0:
                soft_terms.append(("invalidState", builder.step(info.expr, gate=info.gate)
                                   * entry.invalid_state))
    return soft_terms if split.has_soft_term else None


def restriction_label(problem: Problem, restriction: Restrictions) -> str:
    parts = []
    if restriction.fixed_objects:
        parts.append("fixed " + ", ".join(problem.objects[o]
                                          for o in sorted(restriction.fixed_objects)))
    if restriction.non_accepting:
        parts.append("closed " + ", ".join(problem.containers[c]
                                           for c in sorted(restriction.non_accepting)))
    return "; ".join(parts)
