"""Profiles written by libmpiopt-profile (mpiopt-profile.json): loading and checking them,
the Cray-style summary tables, comparisons of two runs, the dominating ranks and calls, the
communication matrix and the pictures. No MPI here; `mpiopt profile` / `mpiopt report` print."""
from .data import PROFILE_NAME, Profile, ProfileError, load
from .tables import (Line, compare, compare_sites, node_split, sections, site_rows, top_calls,
                     top_ranks)

__all__ = ["PROFILE_NAME", "Profile", "ProfileError", "load", "Line", "compare", "sections",
           "top_calls", "top_ranks", "site_rows", "compare_sites", "node_split"]
