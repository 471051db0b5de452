"""An argparse CLI with subcommands: `argparse_todo.py add "buy milk" --priority 2`."""

import argparse


def build_parser():
    parser = argparse.ArgumentParser(prog="todo")
    parser.add_argument("--list", dest="todo_list", default="inbox")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add")
    add.add_argument("text")
    add.add_argument("--priority", type=int, choices=range(1, 4), default=3)
    done = sub.add_parser("done")
    done.add_argument("index", type=int)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.command == "add":
        entry = {"list": args.todo_list, "text": args.text, "priority": args.priority}  # breakpoint
        print(f"added to {entry['list']}: {entry['text']} (p{entry['priority']})")
    else:
        print(f"done: #{args.index}")


main()
