"""mpiopt: fast MPI reductions and collectives, and the tools around them."""
__version__ = "0.1.0"
