"""``backprop-ninja``: the course's command line."""

import argparse

from .demo import run_demo


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="backprop-ninja", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="grade a small demo class end to end and print its grades")
    demo.add_argument("--dir", default="demo", help="course folder to create (replaced if it exists)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        run_demo(args.dir)


if __name__ == "__main__":
    main()
