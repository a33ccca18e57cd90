"""The room CP-SAT leaves for variable domains, and a model that keeps count of it."""

from __future__ import annotations

from ortools.sat.python import cp_model

# CP-SAT refuses a model whose variables' domain magnitudes sum to this or more (it takes
# linear combinations in 128 bits); the model's variables keep to DOMAIN_ROOM of it
INT64_MAX = 2**63 - 1
DOMAIN_ROOM = 2**62


def domain_magnitude(lo: int, hi: int) -> int:
    """A domain's share of the room, as CP-SAT's validation counts it."""
    return max(abs(lo), abs(hi), hi - lo)


class DomainCountingModel(cp_model.CpModel):
    """A CpModel that sums its integer variables' domain magnitudes as CP-SAT's validation
    does (max of |lo|, |hi| and hi - lo), so that domains can be sized to fit."""

    def __init__(self) -> None:
        super().__init__()
        self.domain_sum = 0

    def new_int_var(self, lb: int, ub: int, name: str) -> cp_model.IntVar:
        lb, ub = int(lb), int(ub)
        self.domain_sum += domain_magnitude(lb, ub)
        return super().new_int_var(lb, ub, name)

    def retire(self, var: cp_model.IntVar, constraints: list[cp_model.Constraint],
               value: int) -> None:
        """``var`` frozen at ``value`` in the linear ``constraints`` (the only ones it is in)
        and taken out of the model, its domain {0}: its room for domains is given back (a
        leximin adds a large variable per level, each frozen once solved)."""
        for constraint in constraints:
            linear = constraint.proto.linear
            terms = list(zip(linear.vars, linear.coeffs))
            shift = sum(c for v, c in terms if v == var.index) * value
            bounds = [b if b in (-INT64_MAX - 1, INT64_MAX) else b - shift  # infinite
                      for b in linear.domain]
            for repeated, kept in ((linear.vars, [v for v, _ in terms if v != var.index]),
                                   (linear.coeffs, [c for v, c in terms if v != var.index]),
                                   (linear.domain, bounds)):
                repeated.clear()
                repeated.extend(kept)
        domain = self.proto.variables[var.index].domain
        lo, hi = list(domain)[0], list(domain)[-1]  # (the field reads no negative index)
        self.domain_sum -= domain_magnitude(lo, hi)
        domain.clear()
        domain.extend([0, 0])

    def narrow(self, var: cp_model.IntVar, lo: int, hi: int) -> None:
        """``var``'s declared domain cut to [lo, hi] (a non-empty part of it): CP-SAT judges
        an objective's magnitude by the declared domains of its variables."""
        domain = self.proto.variables[var.index].domain
        bounds = list(domain)
        self.domain_sum -= domain_magnitude(bounds[0], bounds[-1])
        kept = []
        for start, end in zip(bounds[::2], bounds[1::2]):
            if start <= hi and end >= lo:
                kept += [max(start, lo), min(end, hi)]
        domain.clear()
        domain.extend(kept)
        self.domain_sum += domain_magnitude(kept[0], kept[-1])
