"""One module per `mpiopt` subcommand.

Each module defines `register(subparsers)`, which adds its subcommand (or a group of them) to the
argparse sub-parser collection and sets `func` on the parser it adds: `func(args) -> int` runs
the command and returns the exit status. Modules are found by name, so adding a command is
adding a file here."""
