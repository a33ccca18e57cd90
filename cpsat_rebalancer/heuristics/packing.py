"""First-fit-decreasing and best-fit-decreasing on the balanced dimension.

Both rebuild the assignment from scratch, as the textbook algorithms do: objects that no spec
lets move (AvoidMoving) stay where they are; every other object, largest first in the
balanced dimension (ties in index order), goes to a container it may enter (non-accepting
containers take back only their own objects) where it fits under the container's capacity
in that dimension:

* ``first-fit-decreasing``: the first such container in container order;
* ``best-fit-decreasing``: the one it leaves with the least room (ties: container order).

An object that fits nowhere goes where its relative overload is smallest. Only the balanced
dimension is packed (see :func:`.base.balanced_target`), on the container scope, so other
constraints may break: the comparison says which.
"""

from __future__ import annotations

import numpy as np

from .base import HeuristicOptions, Instance, MoveRules, balanced_target, register

FIT_TOLERANCE = 1e-9


class _Decreasing:
    name = ""

    def choose(self, fits: np.ndarray, room_after: np.ndarray) -> int:
        raise NotImplementedError

    def assign(self, instance: Instance) -> np.ndarray:
        problem = instance.problem
        target = balanced_target(problem, instance.model)
        sizes = problem.object_dims[target.dimension]
        caps = problem.container_scope.capacity(target.dimension)
        rules = MoveRules(problem, instance.model)
        final = problem.initial.copy()
        load = np.zeros(problem.num_containers)
        np.add.at(load, problem.initial[rules.fixed], sizes[rules.fixed])
        movable = np.flatnonzero(~rules.fixed)
        order = movable[np.argsort(-sizes[movable], kind="stable")]
        for obj in order:
            allowed = rules.allowed(obj)
            room_after = caps - load - sizes[obj]
            fits = allowed & (room_after >= -FIT_TOLERANCE * np.maximum(1.0, caps))
            if fits.any():
                cont = self.choose(fits, room_after)
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    overload = np.where(caps > 0, (load + sizes[obj]) / caps, np.inf)
                overload[~allowed] = np.nan
                cont = int(np.nanargmin(overload)) if not np.isnan(overload).all() \
                    else int(problem.initial[obj])
            final[obj] = cont
            load[cont] += sizes[obj]
        return final


class FirstFitDecreasing(_Decreasing):
    name = "first-fit-decreasing"

    def choose(self, fits: np.ndarray, room_after: np.ndarray) -> int:
        return int(np.argmax(fits))


class BestFitDecreasing(_Decreasing):
    name = "best-fit-decreasing"

    def choose(self, fits: np.ndarray, room_after: np.ndarray) -> int:
        return int(np.argmin(np.where(fits, room_after, np.inf)))


@register("first-fit-decreasing")
def _first_fit(options: HeuristicOptions) -> FirstFitDecreasing:
    return FirstFitDecreasing()


@register("best-fit-decreasing")
def _best_fit(options: HeuristicOptions) -> BestFitDecreasing:
    return BestFitDecreasing()
