"""VMware Cloud Director placement: the input format (:mod:`.inputs`), the exact model
(:mod:`.exact`), the generator (:mod:`.generate`) and the ``vcd`` CLI (:mod:`.cli`). The
engine itself is :mod:`cpsat_rebalancer.heuristics.vcd`."""
