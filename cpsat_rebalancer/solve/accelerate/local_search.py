"""A move-based floor under the exact search: single moves, then swaps, each kept when the
evaluator finds the whole tuple lexicographically better and every hard rule kept.

Where CP-SAT's proof does not close in time, a search of this kind (Rebalancer's own local
search is one) can still walk below the chain's incumbent: judged by the evaluator itself,
it has no compiled approximation in the way. It keeps the answer when it finds nothing
better. Where every spec prices candidates in a batch (``evaluate.batchable``), one
evaluation prices many destinations of an object (or swap partners) at once, least loaded
first, and each step takes the best of the first batch that improves; otherwise moves are
priced one evaluation each, first improvement in random order (``single_moves``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from ...context import EvalContext, MoveBatch
from ...cpsat.classes import object_classes
from ...evaluate import (
    Evaluation,
    batchable,
    evaluate,
    evaluate_moves,
    guides_by_position,
    policy_splits,
    soft_cost,
)
from ...primitives import TOLERANCE
from ...problem import OUT_OF_SCOPE, Problem
from ...scenario import Model
from ..positions import FLOAT_NOISE
from . import departures, homecoming
from .exchanges import PARTNERS, exchange_candidates, load_spread, relative_loads
from .single_moves import first_improvements
from .tuples import (
    NOISE,
    at_lowest,
    below,
    best_below,
    better,
    first_difference,
    flat_key,
    rows_below,
    tuple_key,
)

BATCH = 512  # candidates priced in one batched evaluation at most
# an object's destinations (or swap partners) are priced in the order given, first this
# many, then the rest BATCH at a time, and the best of the first chunk that improves is
# taken: a batch costs about its size times the scope's items, and an object that improves
# mostly does so among its first (least loaded) destinations
FIRST_CHUNK = 64
# a step the batch prices is kept on that price (its tuple, and its hard rules' excess while
# they are repaired), but the evaluator judges every this many steps (a disagreement ends
# the trust for the rest of the search)
JUDGED_EVERY = 16
# a swap pass first pairs each object with this many partners on the least loaded
# containers (where a hot container's swaps that help mostly are), and only when none
# helps with every partner
NEAR_PARTNERS = FIRST_CHUNK + BATCH
TRADES = FIRST_CHUNK  # the best blocked moves a pass of trades prices
# steps in a row that lower only the load's spread (the tuple and every guide as they were)
# before the spread stops ranking steps, until a step lowers the tuple or a guide again: a
# walk along a plateau makes room for a flat term, an endless one only spends the time
SIDEWAYS_STEPS = 100
# a repair alone (``run``'s ``until_feasible``) ends once this many seconds passed since the
# hard rules' excess last fell: a repair that single moves and swaps cannot finish stalls
# (a start no assignment repairs included), and CP-SAT may still repair or refute it
REPAIR_PATIENCE = 2.0
# a near-swap pass that kept one hands back to the moves after this many seconds: a swap
# changes two containers, where moves may pay now; a pass over 10,000 objects takes minutes
SWAP_SECONDS = 2.0


class BatchedDescent:
    """Moves priced in batches: for each object in turn (one per class of interchangeable
    objects on a container), its destinations least loaded first, the best of the first
    batch that improves taken; where a pass leaves the hottest container hottest,
    exchanges of up to two objects each way with the coolest (``exchanges``); sets of
    objects whose leaving lowers a spec moved out whole (``departures``); once a pass
    lowers no more than the guides, swaps from the most loaded containers with partners
    on the least loaded first (a few hundred each, all when none of those helps). The
    evaluator judges what the search returns and every JUDGED_EVERY-th step, a repair's
    included; the others are kept on the batch's price (the same).

    Steps are ranked by each position's value and then its specs' guides (``Spec.guide``:
    where a value is flat until a group's last object leaves, say), position by position,
    as Rebalancer's local search values such specs by continuous forms; then by the load's
    spread (a lower sum of squared relative loads over the containers): the tuple's MAX and
    LEGACY terms are flat for most moves, and a spread load leaves room for the moves that
    lower them later. A guided walk may pass its best tuple; the best is what the search
    keeps (``kept``), and it ends by the tuple alone (``run``). A goal's rewarded containers
    for an object (``Spec.suggested_containers``) are its first destinations."""

    def __init__(self, problem: Problem, model: Model, x: np.ndarray, current: Evaluation,
                 seed: int, hot_first: bool = False):
        self.problem, self.model, self.x = problem, model, x
        self.hot_first = hot_first  # each pass from the most loaded containers down
        self.rng = np.random.default_rng(seed)
        self.splits = policy_splits(problem, model)
        fixed = model.fixed_objects | set(model.held)
        self.classes = object_classes(problem, model.named_objects() | set(fixed),
                                      by_initial_container=True).of_object
        self.movable = np.ones(problem.num_objects, dtype=bool)
        self.movable[sorted(fixed)] = False
        self.closed = np.zeros(problem.num_containers, dtype=bool)
        self.closed[sorted(model.non_accepting)] = True
        self.kept: np.ndarray | None = None  # the best assignment kept that keeps the rules
        self.kept_key: np.ndarray | None = None  # its (flattened) tuple
        self.dims = sorted(problem.scalar_dimensions(model.dimensions())
                           & set(problem.object_dims))
        self.suggested: dict[int, np.ndarray] = {}  # containers tried first, per object
        for entry in model.goals:
            for obj, containers in entry.spec.suggested_containers(problem).items():
                self.suggested[obj] = np.concatenate([self.suggested.get(obj, []),
                                                      containers]).astype(np.int64)
        # constraints whose budget moves spend (``Spec.budget``), with their policy splits
        at_start = EvalContext(problem, problem.initial, x)
        self.budgets = [(entry, split) for entry, split in zip(model.constraints, self.splits)
                        if entry.spec.budget(at_start) is not None]
        # per object its relative size, per departure its last try's version and failures
        self.sizes = departures.relative_sizes(problem, self.dims)
        self.departed: dict[bytes, tuple[int, int]] = {}
        # per object, its best move that would lower the tuple but breaks a hard rule
        self.blocked: dict[int, tuple[int, np.ndarray]] = {}
        self.mates: dict[int, list[np.ndarray]] | None = None  # per object, its groups'
        self.guided = True  # whether specs' guides order the steps (see run)
        self.sideways = 0  # steps in a row that lowered only the spread (SIDEWAYS_STEPS)
        self.exchanged: dict[tuple[str, int], int] = {}  # (dim, container) -> version none helped
        self.rank: np.ndarray | None = None  # the walk's place in its order (``ranked``)
        self.steps = 0  # steps kept
        self.until_feasible = False  # whether the search ends once the hard rules hold
        self.fell_at = time.monotonic()  # when the hard rules' excess last fell
        self.trusted = True  # whether a step may be kept on the batch's price alone
        # "don't look" marks: per container, the version of the assignment (one per step
        # kept) at which it last changed; per object, the version at which its moves were
        # last priced and none was kept (-1: not since the search last resynced)
        self.version = 0
        self.judged_at = -1  # the version the evaluator last found not at the floors
        self.changed_at = np.zeros(problem.num_containers, dtype=np.int64)
        self.idle_since = np.full(problem.num_objects, -1, dtype=np.int64)
        self.swap_idle_since = np.full(problem.num_objects, -1, dtype=np.int64)  # as swapped
        start = tuple_key(current)
        ends = np.cumsum([len(part) for part in start])
        positions = sorted(set(current.positions) | set(current.leximin))
        self.segments = list(zip(positions, ends - [len(part) for part in start], ends))
        # the lowest value each entry of the tuple can take (Model.floors; an IDEAL order
        # none, as ``at_lowest``): once all are reached, no step lowers the tuple
        self.column = {position: begin for position, begin, _ in self.segments
                       if position not in current.leximin}  # a scalar position's column
        self.lowest = np.full(int(ends[-1]) if len(ends) else 0, -np.inf)
        floors = model.floors()
        for position, begin, end in self.segments:
            if position not in current.leximin:
                self.lowest[begin:end] = floors.get(position, -np.inf)
        self._keep(x, flat_key(start), current.hard_excess, first=True)

    def restart(self, x: np.ndarray, current: Evaluation) -> None:
        """Go on from ``x`` (evaluated ``current``) with what this walk learned: the "don't
        look" marks of the containers ``x`` leaves as they were still hold, so a pass prices
        only the objects around what changed. What it kept before is forgotten."""
        self.kept, self.kept_key, self.judged_at = None, None, -1
        self._keep(x, flat_key(tuple_key(current)), current.hard_excess, first=True)

    def _keep(self, x: np.ndarray, key: np.ndarray, excess: float, first: bool = False
              ) -> None:
        """``x`` is the assignment now, at the (flattened) tuple ``key``, ``excess`` above
        the hard rules (above 0: repairing them first); the best such assignment that keeps
        them, other than the start, is ``kept``."""
        moved = self.x != x
        if first or excess < self.excess:
            self.fell_at = time.monotonic()
        self.version += 1
        self.changed_at[self.x[moved]] = self.changed_at[x[moved]] = self.version
        self.x[:] = x
        self.key, self.excess = key, excess
        self.context = EvalContext(self.problem, self.problem.initial, self.x)
        before, self.rank = self.rank, self.ranked(key[None, :], self.context)[0]
        if not first and excess <= 0:  # sideways: below only in the last column, the spread
            spreading = self.sideways < SIDEWAYS_STEPS
            sideways = before is not None and not below(self.rank[:-1], before[:-1])
            self.sideways = self.sideways + 1 if sideways else 0
            if spreading != (self.sideways < SIDEWAYS_STEPS):  # ranked with it, or without
                self.rank = self.ranked(key[None, :], self.context)[0]
        if not first and excess <= 0 and (self.kept_key is None or below(key, self.kept_key)):
            self.kept, self.kept_key = x.copy(), key
        # destinations in the order a move tries them: least loaded first (where a load
        # term improves, its best destination is among them), ties in random order
        self.coolest = np.lexsort((self.rng.random(self.problem.num_containers),
                                   self.relative_loads()))
        self.place = np.argsort(self.coolest)  # each container's place in that order

    def over(self, deadline: float) -> bool:
        """Whether the search ends: the deadline passed, the hard rules hold or their
        excess stopped falling (REPAIR_PATIENCE) where only they were to be repaired
        (``until_feasible``), or the tuple is at its lowest (as the evaluator finds it: a
        step kept on the batch's price is judged first)."""
        now = time.monotonic()
        if now >= deadline or self.until_feasible and (
                self.excess <= 0 or now - self.fell_at > REPAIR_PATIENCE):
            return True
        if (self.excess > 0 or self.judged_at == self.version
                or not (self.key <= self.lowest + FLOAT_NOISE).all()):
            return False
        if at_lowest(self.model, evaluate(self.problem, self.model, self.x)):
            return True
        self._distrust()
        self.judged_at = self.version  # judged not there: not again until a step is kept
        return False

    def ranked(self, keys: np.ndarray, context: EvalContext) -> np.ndarray:
        """The order the search walks in, per row of ``keys`` (tuples at ``context``'s
        assignments): each position's value, then its specs' guides (``Spec.guide``), as
        Rebalancer's local search values such a position by its continuous form; after
        every position, the guides of specs at no position of the tuple, then the load's
        spread."""
        size = len(keys)
        guides = guides_by_position(self.model, context) if self.guided else {}
        columns = []
        for position, start, end in self.segments:
            columns += [keys[:, start:end],
                        np.broadcast_to(guides.pop(position, 0.0), (size,))[:, None]]
        spread = (load_spread(self.problem, self.dims, context)
                  if self.sideways < SIDEWAYS_STEPS else 0.0)
        for value in (sum(guides.values(), 0.0), spread):
            columns.append(np.broadcast_to(value, (size,))[:, None])
        return np.concatenate(columns, axis=1)

    def representatives(self) -> np.ndarray:
        """One movable object per (class, container)."""
        keys = self.classes.astype(np.int64) * self.problem.num_containers + self.x
        _, first = np.unique(keys, return_index=True)
        return first[self.movable[first]]

    def _allowed(self, objects: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """Candidates that keep the restrictions: nothing new into a closed container."""
        home = self.problem.initial[objects]
        return ~self.closed[targets] | (targets == home)

    def _try(self, objects: np.ndarray, targets: np.ndarray, deadline: float) -> bool:
        """Price the candidates (rows of objects, targets) a chunk at a time, in the order
        given, and take the best improving one of the first chunk that has one."""
        starts = [0, *range(FIRST_CHUNK, len(objects), BATCH)] if len(objects) else []
        for start, end in zip(starts, [*starts[1:], len(objects)]):
            if self.over(deadline):
                return False
            chunk = slice(start, end)
            batch = MoveBatch(self.context, objects[chunk], targets[chunk])
            keys, excess = evaluate_moves(self.problem, self.model, batch, self.splits)
            if self.excess > 0:  # less broken first, then the tuple
                row = best_below(np.column_stack([excess, keys]), np.ones(batch.size, bool),
                                 np.append(self.excess, self.key))
            else:
                ranked = self.ranked(keys, batch)
                row = best_below(ranked, excess <= TOLERANCE, self.rank)
                if row is None and batch.objects.shape[1] == 1:
                    self._block(batch, keys, excess)
            if row is None:
                continue
            candidate = self.x.copy()
            for o, c in zip(batch.objects[row], batch.targets[row]):
                if o >= 0:
                    candidate[o] = c
            self.steps += 1
            if not self.trusted or self.steps % JUDGED_EVERY == 0:
                kept = self._judged(candidate, keys[row])
            else:  # priced exactly as the evaluator prices it (tests/test_move_batch.py)
                kept = True
                self._keep(candidate, keys[row],
                           float(excess[row]) if excess[row] > TOLERANCE else 0.0)
            if kept:
                return True
        return False

    def _judged(self, candidate: np.ndarray, priced: np.ndarray) -> bool:
        """Whether the evaluator keeps the step the batch priced at ``priced`` (kept then).
        Where the two disagree, the search stands where the evaluator says it does, and no
        later step is kept on the batch's price alone."""
        evaluation = evaluate(self.problem, self.model, candidate)
        key = flat_key(tuple_key(evaluation))
        if key.shape != priced.shape or not np.allclose(key, priced, rtol=1e-9, atol=1e-12):
            self._distrust()
        if self.excess > 0:
            kept = not evaluation.restriction_violations and below(
                np.append(evaluation.hard_excess, key), np.append(self.excess, self.key))
        else:
            context = EvalContext(self.problem, self.problem.initial, candidate)
            kept = evaluation.feasible and below(self.ranked(key[None, :], context)[0],
                                                 self.rank)
        if kept:
            self._keep(candidate, key, evaluation.hard_excess)
        return kept

    def _distrust(self) -> None:
        """The batch priced a step other than the evaluator does: the search stands where
        the evaluator says it does, and no later step is kept on the batch's price alone."""
        self.trusted = False
        self.idle_since[:] = self.swap_idle_since[:] = -1
        here = evaluate(self.problem, self.model, self.x)
        self.kept, self.kept_key = None, None  # what the batch ranked best may not be
        self._keep(self.x.copy(), flat_key(tuple_key(here)), here.hard_excess)

    def moves(self, deadline: float, lazy: bool = False) -> bool:
        """One pass of best moves over the representatives; whether any was kept.
        ``lazy``: only objects whose container changed since their moves were last priced
        and none was kept (the others' best moves are mostly still not worth taking), each
        to its FIRST_CHUNK first destinations only (a pass over every destination of
        10,000 objects takes longer than most limits)."""
        improved = False
        self.blocked = {}
        order = self.representatives()
        if lazy:
            order = order[self.idle_since[order] < self.changed_at[self.x[order]]]
        order = self.rng.permutation(order)
        if self.hot_first and self.excess <= 0:
            order = order[np.argsort(-self.relative_loads()[self.x[order]], kind="stable")]
        order = self._most_promising_first(order, deadline)
        for o in order:
            if self.over(deadline):
                break
            targets = self.coolest[self.coolest != self.x[o]]
            targets = targets[self._rewarded_first(o, targets)]
            if lazy:
                targets = targets[:FIRST_CHUNK]
            objects = np.full(len(targets), o)
            allowed = self._allowed(objects, targets)
            if self._try(objects[allowed, None], targets[allowed, None], deadline):
                improved = True
            elif not self.over(deadline):
                self.idle_since[o] = self.version
        return improved

    def _block(self, batch: MoveBatch, keys: np.ndarray, excess: np.ndarray) -> None:
        """Note the best of the batch's single moves that would lower the tuple but break
        a hard rule or overspend a soft budget (lowering it but for that budget's cost),
        for ``trades``."""
        blocked, relieved = excess > TOLERANCE, keys.copy()
        for entry, split in self.budgets:
            used, most = entry.spec.budget(batch)
            blocked |= np.asarray(used) > most * (1 + NOISE) + TOLERANCE
            column = self.column.get(entry.position)
            if split.has_soft_term and column is not None:  # the tuple but for its cost
                relieved[:, column] -= soft_cost(entry, split, batch) - self.context.memo(
                    (entry.spec, "soft cost"), partial(soft_cost, entry, split, self.context))
        row = best_below(relieved, blocked, self.key)
        if row is not None:
            self.blocked[int(batch.objects[row, 0])] = (int(batch.targets[row, 0]),
                                                        relieved[row])

    def trades(self, deadline: float) -> bool:
        """One pass of trades: each of the TRADES best moves the last pass of moves found
        blocked by a hard rule or a soft budget (``blocked``), with one moved object's
        return home, which gives back what its move spent (of a movement allowance, a
        group's move limit, the destination's room); whether any was kept. A move that
        pays at a later position may hold what a better one at an earlier position needs.
        Returns are priced from the destination's objects and the object's group mates
        on, NEAR_PARTNERS of them."""
        improved = False
        blocked, self.blocked = self.blocked, {}
        objects = np.fromiter(blocked, dtype=np.int64, count=len(blocked))
        if not len(objects):
            return False
        keys = np.array([blocked[o][1] for o in objects])
        for o in objects[np.lexsort(keys.T[::-1])][:TRADES]:
            target = blocked[int(o)][0]
            if self.over(deadline):
                break
            if self.x[o] == target:
                continue
            moved = np.flatnonzero((self.x != self.problem.initial) & self.movable)
            moved = self.rng.permutation(moved[moved != o])
            moved = moved[np.lexsort((~self._mated(int(o), moved),
                                      self.x[moved] != target))][:NEAR_PARTNERS]
            pairs = np.column_stack([np.full(len(moved), o), moved])
            targets = np.column_stack([np.full(len(moved), target),
                                       self.problem.initial[moved]])
            improved |= self._try(pairs, targets, deadline)
        return improved

    def returns(self, deadline: float) -> bool:
        """One pass of returns home that make room there (``homecoming``): the TRADES moved
        objects whose return most lowers the soft costs; whether one was kept."""
        moved = np.flatnonzero((self.x != self.problem.initial) & self.movable)
        relief = homecoming.relief(self.model, self.splits, self.context, moved, BATCH)
        improved, open_ = False, self.coolest[~self.closed[self.coolest]]
        for o in moved[np.argsort(-relief, kind="stable")][:TRADES]:
            if relief[np.searchsorted(moved, o)] <= TOLERANCE or self.over(deadline):
                break
            if self.x[o] == self.problem.initial[o]:  # taken home by an earlier one
                continue
            for candidate, key in homecoming.chain(
                    self.problem, self.model, self.splits, self.ranked, self.x, int(o),
                    self.movable, open_, BATCH):
                if below(key, self.key):
                    improved |= self._judged(candidate, key)
                    break
        return improved

    def exchanges(self, deadline: float) -> bool:
        """Per dimension read, the most promising exchanges between its most loaded
        container and the PARTNERS least loaded (``exchange_candidates``), unless none
        helped on that container as it is now; whether one was kept."""
        for dim, (relative, _) in zip(self.dims, relative_loads(self.problem, self.dims, self.x)):
            hot = int(np.argmax(relative))
            if self.exchanged.get((dim, hot)) == self.changed_at[hot] or self.over(deadline):
                continue
            partners = np.argsort(relative, kind="stable")
            objects, targets = exchange_candidates(
                self.problem, dim, self.x, relative, hot, self.movable, self.closed,
                partners[~self.closed[partners]][:PARTNERS], FIRST_CHUNK + BATCH)
            if self._try(objects, targets, deadline):
                return True
            self.exchanged[(dim, hot)] = int(self.changed_at[hot])
        return False

    def _mated(self, obj: int, objects: np.ndarray) -> np.ndarray:
        """Per object of ``objects``, whether it shares a group with ``obj`` (read once)."""
        if self.mates is None:
            self.mates = {}
            for members in (m for groups in self.problem.partitions.values()
                            for m in groups.values()):
                for member in members.tolist():
                    self.mates.setdefault(member, []).append(members)
        mated = np.zeros(self.problem.num_objects, dtype=bool)
        mated[np.concatenate(self.mates.get(obj, [np.empty(0, np.int64)]))] = True
        return mated[objects]

    def relative_loads(self) -> np.ndarray:
        """Per container, the largest of its relative loads in the dimensions read, each in
        multiples of that dimension's mean (so dimensions of any scale compare)."""
        largest = np.zeros(self.problem.num_containers)
        for relative, mean in relative_loads(self.problem, self.dims, self.x):
            largest = np.maximum(largest, relative / (mean if mean > 0 else 1.0))
        return largest

    def _probes(self, sources: np.ndarray) -> np.ndarray:
        """Per container of ``sources``, two destinations a pass probes: the least loaded
        other open container, and the least loaded one that shares no item with it in any
        scope (another rack, another row; the first again where there is none)."""
        ranked = np.argsort(self.relative_loads(), kind="stable")
        ranked = ranked[~self.closed[ranked]] if not self.closed.all() else ranked
        top = ranked[:FIRST_CHUNK]
        unique, of = np.unique(sources, return_inverse=True)
        other = unique[:, None] != top[None, :]
        apart = other.copy()
        for scope in self.problem.scopes.values():
            item = scope.container_item
            here, there = item[unique][:, None], item[top][None, :]
            apart &= (here != there) | (here == OUT_OF_SCOPE)
        nearest = other.argmax(axis=1)
        farthest = np.where(apart.any(axis=1), apart.argmax(axis=1), nearest)
        return np.stack([top[nearest][of], top[farthest][of]])

    def _most_promising_first(self, objects: np.ndarray, deadline: float) -> np.ndarray:
        """``objects`` ordered by what moving each to its probes (``_probes``) does: while
        repairing, by the least hard-rule excess a probe leaves; else the objects whose
        move lowers the tuple first, by the lowest tuple a probe reaches (under a budget
        that moves spend, the tuple or a guide, by the most gain per share of the budget at
        the first column gained: a greedy by the largest steps spends it on a few large
        objects, and where the value is flat a walk led by its guide spends it too), then
        the others in the order given. Among thousands of objects, the few that break a
        rule or a soft constraint are where a pass should start."""
        probes = self._probes(self.x[objects])
        n = len(objects)
        movers = np.concatenate([objects, objects])
        targets = probes.reshape(-1)
        excess = np.full(2 * n, self.excess)
        keys = np.tile(self.key, (2 * n, 1))
        # under a budget, the probes as the walk ranks them (guides too, not the spread)
        ranked = np.tile(self.rank[:-1], (2 * n, 1)) if self.budgets else keys
        spent = np.zeros((len(self.budgets), 2 * n))  # each budget's share each probe spends
        now = [entry.spec.budget(self.context)[0] for entry, _ in self.budgets]
        for start in range(0, 2 * n, BATCH):
            if self.over(deadline):
                break
            chunk = slice(start, start + BATCH)
            batch = MoveBatch(self.context, movers[chunk, None], targets[chunk, None])
            keys[chunk], excess[chunk] = evaluate_moves(self.problem, self.model, batch,
                                                        self.splits)
            if self.budgets and self.excess <= 0:
                ranked[chunk] = self.ranked(keys[chunk], batch)[:, :-1]
            for b, (entry, _) in enumerate(self.budgets):
                used, most = entry.spec.budget(batch)
                spent[b, chunk] = (np.asarray(used) - now[b]) / most
        if self.excess > 0:
            return objects[np.argsort(np.minimum(excess[:n], excess[n:]), kind="stable")]
        if self.budgets:  # guides too: a flat value's way down spends the budgets as well
            keys, key = ranked, self.rank[:-1]
            at = {position: begin + index  # a position's column among the ranked
                  for index, (position, begin, _) in enumerate(self.segments)}
        else:
            key = self.key
        rows = np.flatnonzero(rows_below(keys, key) & (excess <= TOLERANCE))
        if not len(rows):
            return objects
        if self.budgets:  # the most gain per share of the budgets, at the first column gained
            column = first_difference(keys[rows], key)[1]
            gain = key[column] - keys[rows, column]
            # a soft budget costs at its position: a gain before it does not pay for it
            counts = np.array([[at.get(entry.position, -1) if split.has_soft_term
                                else -1] for entry, split in self.budgets]) <= column
            rate = gain / np.maximum((spent[:, rows] * counts).sum(axis=0), NOISE)
            rows = rows[np.lexsort((-rate, column))] % n
        else:  # each object at its best probe
            rows = rows[np.lexsort(keys[rows].T[::-1])] % n
        _, first = np.unique(rows, return_index=True)
        promising = rows[np.sort(first)]
        rest = np.ones(n, dtype=bool)
        rest[promising] = False
        return np.concatenate([objects[promising], objects[rest]])

    def swaps(self, deadline: float, partners: int | None = None) -> bool:
        """One pass of best swaps: each representative (first those a goal rewards
        elsewhere, then from the most loaded containers down) with the representatives of
        other classes on other containers: on the containers a goal rewards it first, then
        on its own container where it has moved, then its group mates (a swap within a
        group keeps its count in both items, where either move alone may not), then least
        loaded first (``partners``: only that many). With the near partners only, the
        pass skips the objects whose container is unchanged since their swaps last found
        nothing, and ends SWAP_SECONDS after it began once it has kept one."""
        improved, began = False, time.monotonic()
        order = self._hottest_first(self.representatives())
        if partners is not None:
            order = order[self.swap_idle_since[order] < self.changed_at[self.x[order]]]
        rewarded = np.fromiter((o in self.suggested and self.x[o] not in self.suggested[o]
                                for o in order), dtype=bool, count=len(order))
        ranked_at, ranked = -1, order
        for o in np.concatenate([order[rewarded], order[~rewarded]]):
            if self.over(deadline) or (improved and partners is not None
                                       and time.monotonic() - began > SWAP_SECONDS):
                break
            if ranked_at != self.version:  # the partners least loaded first, ties at random
                ranked_at, ranked = self.version, self.rng.permutation(self.representatives())
                ranked = ranked[np.argsort(self.place[self.x[ranked]], kind="stable")]
            others = ranked[(self.x[ranked] != self.x[o])
                            & (self.classes[ranked] != self.classes[o])]
            mated = self._mated(o, others)
            others = np.concatenate([others[mated], others[~mated]])
            others = others[self._rewarded_first(o, self.x[others])][:partners]
            objects = np.column_stack([np.full(len(others), o), others])
            targets = np.column_stack([self.x[others], np.full(len(others), self.x[o])])
            allowed = self._allowed(objects[:, 0], targets[:, 0]) & self._allowed(
                objects[:, 1], targets[:, 1])
            if self._try(objects[allowed], targets[allowed], deadline):
                improved = True
            elif not self.over(deadline):
                self.swap_idle_since[o] = self.version
        return improved

    def driving(self) -> float:
        """The first position above its lowest value (``Model.floors``)."""
        return next((position for position, begin, end in self.segments
                     if (self.key[begin:end] > self.lowest[begin:end] + FLOAT_NOISE).any()),
                    np.inf)

    def departs(self, deadline: float, up_to: float = np.inf) -> bool:
        """The sets of objects the specs at a position up to ``up_to`` name, each moved
        out where that lowers the tuple, or the hard rules' excess while they are repaired
        (``departures``), until TRIES were of no use and SECONDS passed or only sets tried
        since they last changed are left (a set with no destination at all costs no try);
        whether one was."""
        improved, useless, until = False, 0, time.monotonic() + departures.SECONDS
        offered = departures.offered(self.model, self.context, up_to)
        for departure, stale in departures.ordered(offered, self.movable, self.departed,
                                                   self.changed_at, self.version, self.sizes):
            if (useless >= departures.TRIES and (stale or time.monotonic() >= until)
                    or self.over(deadline)):
                break
            key = departures.key(departure)
            failures = self.departed.get(key, (-1, 0))[1]
            self.departed[key] = (self.version, failures + 1)
            targets = departures.destinations(self.problem, departure, self._allowed)
            if targets is None:
                continue
            found = departures.departed(self.problem, self.model, self.splits, self.x,
                                        departure, targets, self.sizes, self.ranked, deadline,
                                        self.excess)
            if found is not None and (self.excess > 0 or below(found[1], self.key)):
                self.departed[key] = (self.version, failures)
                useless = 0 if self.excess > 0 else useless  # a repair goes on while they do
                self._keep(*found)
                improved = True
            else:
                useless += 1
        return improved

    def _rewarded_first(self, obj: int, containers: np.ndarray) -> np.ndarray:
        """The order that puts the containers where a goal rewards ``obj``
        (``Spec.suggested_containers``) first, in the order suggested, then its own
        container where it has moved (going back gives back what the move cost: a
        movement goal's, a pinned object's), the others after them in the order given."""
        suggested = self.suggested.get(obj, np.empty(0, np.int64))
        if self.x[obj] != self.problem.initial[obj]:
            suggested = np.append(suggested, self.problem.initial[obj])
        if not len(suggested):
            return np.arange(len(containers))
        rank = np.full(self.problem.num_containers, len(suggested))
        rank[suggested[::-1]] = np.arange(len(suggested))[::-1]  # a container's first place
        return np.argsort(rank[containers], kind="stable")

    def _hottest_first(self, objects: np.ndarray) -> np.ndarray:
        """``objects`` from the most loaded container down, in random order on each."""
        objects = self.rng.permutation(objects)
        return objects[np.argsort(-self.relative_loads()[self.x[objects]], kind="stable")]

    def run(self, deadline: float, touch_up: bool = False, until_feasible: bool = False
            ) -> None:
        """Steps until none helps or the deadline. A guided walk that ends past its best
        tuple goes on from the best by the tuple alone: where it stops, no step lowers it.
        ``touch_up``: only passes over the objects around what changed since the walk last
        stood still (moves, trades, returns home), until none helps: a few seconds where
        another search moved a few containers' objects, not the minutes of a full pass.
        ``until_feasible``: only until the hard rules hold, or their excess stops falling."""
        self.until_feasible, self.fell_at = until_feasible, time.monotonic()
        while touch_up and not self.over(deadline):
            if not (self.moves(deadline, lazy=True) | self.trades(deadline)
                    or self.returns(deadline)):
                return
        while not self.over(deadline):
            before, repairing, hottest = self.key, self.excess > 0, self.coolest[-1]
            departed = self.departs(deadline, self.driving())
            if departed and repairing:  # a set's departure repairs more than a pass's moves
                continue
            moved = departed | self.moves(deadline, lazy=True) | self.trades(deadline)
            if not repairing and self.coolest[-1] == hottest:  # the pass left it the hottest
                moved |= self.exchanges(deadline)
            if moved and (repairing or below(self.key, before)):  # the tuple fell: more moves
                continue
            if (self.departs(deadline) or self.returns(deadline)
                    or self.swaps(deadline, NEAR_PARTNERS) or moved
                    or self.moves(deadline) or self.trades(deadline)
                    or self.swaps(deadline)):  # all, before an end
                continue
            if not self.guided:
                return
            self.guided = False
            self.idle_since[:] = self.swap_idle_since[:] = -1  # by the tuple alone, again
            if self.kept is not None:
                self._keep(self.kept.copy(), self.kept_key, 0.0)


@dataclass
class Carried:
    """A solve's descents' walk: each goes on where the last ended, not pricing anew."""

    search: BatchedDescent | None = None


def descend(problem: Problem, model: Model, start: np.ndarray, deadline: float,
            seed: int = 0, on_interrupt: Callable[[], None] | None = None,
            hot_first: bool = False, carried: Carried | None = None,
            touch_up: bool = False, until_feasible: bool = False
            ) -> tuple[np.ndarray, Evaluation] | None:
    """Moves and swaps (``BatchedDescent`` where a batch prices moves; else single moves in
    random order, each to the first container that improves the tuple, then random swaps)
    until none helps or the deadline. Returns the better assignment and its evaluation, or
    None. Ctrl-C ends it with the best found (and calls ``on_interrupt``). A start that
    breaks hard rules is repaired first, where a batch prices moves. ``hot_first``: a pass
    takes the objects of the most loaded containers first. ``carried``: the walk an earlier
    search of the same problem and model left, which this one goes on (and leaves on).
    ``touch_up``: only the moves around what changed since (``BatchedDescent.run``).
    ``until_feasible``: a start that breaks hard rules is only repaired, its answer the
    first assignment that keeps them (None for a start that keeps them)."""
    x = start.copy()
    current = evaluate(problem, model, x)
    repair = not current.feasible  # a start that breaks hard rules: repaired by a batch only
    if current.restriction_violations or (repair and not batchable(problem, model)):
        return None
    if problem.num_objects == 0 or problem.num_containers < 2 or (
            until_feasible and not repair):  # nothing can move, or nothing to repair
        return None
    if batchable(problem, model):
        search = None if carried is None else carried.search
        if search is None or search.hot_first != hot_first:
            search = BatchedDescent(problem, model, x, current, seed, hot_first)
        else:
            search.restart(x, current)
        if carried is not None:
            carried.search = search
        try:
            search.run(deadline, touch_up, until_feasible)
        except KeyboardInterrupt:
            if on_interrupt is not None:
                on_interrupt()
        if search.kept is None:
            return None
        # evaluated again: Ctrl-C may have landed between keeping a step and its evaluation
        evaluation = evaluate(problem, model, search.kept)
        return (search.kept, evaluation) if evaluation.feasible and (
            repair or better(tuple_key(evaluation), tuple_key(current))) else None
    return first_improvements(problem, model, x, current, deadline, random.Random(seed),
                              on_interrupt)
