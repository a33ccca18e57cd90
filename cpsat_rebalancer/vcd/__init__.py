"""VMware Cloud Director placement: the input format (:mod:`.inputs`), the exact model
(:mod:`.exact`) and the generator (:mod:`.generate`); the ``vcd`` command line is
:mod:`cpsat_rebalancer.cli.vcd`. The engine itself is :mod:`cpsat_rebalancer.vcd.engine`."""
