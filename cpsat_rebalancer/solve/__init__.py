"""The solve stages, above the specs and the kit: compile, one session of CP-SAT solves,
each bucket (lexicographic chain, leximin), check, explain; the accelerators in their own
wing (``solve.accelerate``). ``pipeline.solve_model`` is the list of stages."""
