"""Pure domain: GPU catalog values, the inference performance model and the fleet solver.

Nothing in this package performs I/O, reads the environment or the clock, or imports a web,
database or cache library. "Now" and the price snapshot are parameters.
"""
