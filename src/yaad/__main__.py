"""``python -m yaad``: ``--version``, and ``demo`` (see :mod:`yaad.demo`)."""

from __future__ import annotations

import argparse
import sys

import yaad


def main(argv: list[str] | None = None) -> int:
    """The command line: ``python -m yaad [--version] demo [options]``."""
    parser = argparse.ArgumentParser(prog="python -m yaad", description=yaad.__doc__.split(
        "\n")[0])
    parser.add_argument("--version", action="version", version=f"yaad {yaad.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="command")
    from . import demo

    demo.build_parser(commands.add_parser("demo", help="run the demo (python -m yaad demo "
                                                       "--help for its options)"))
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo.run(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
