"""The placement tools' one error (its own module: the light users, such as the launch of
`mpiopt run` under Slurm, need it without the numpy that the grid code imports)."""


class PlacementError(ValueError):
    """Bad user input to a placement tool (grid, cell, order file, hosts): the message says what."""
