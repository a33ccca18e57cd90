"""The CP-SAT kit specs compile into: the assignment model builder, integer forms, convex
pieces, packing and assignment bounds. No spec names, no orchestration."""
