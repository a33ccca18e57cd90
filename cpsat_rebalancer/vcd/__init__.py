"""VMware Cloud Director placement: the input format (:mod:`.inputs`), the exact model
(:mod:`.exact`), the most VMs placed proven on a count model (:mod:`.placed`) and the
generator (:mod:`.generate`); the ``vcd`` command line is :mod:`cpsat_rebalancer.cli.vcd`.
The engine itself is :mod:`cpsat_rebalancer.vcd.engine`."""
