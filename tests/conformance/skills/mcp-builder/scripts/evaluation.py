"""Ask the questions of an evaluation file through a server."""
import argparse

from connections import create_connection


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-t", "--transport", default="stdio")
    parser.add_argument("-c", "--command", default="")
    parser.add_argument("-a", "--args", default="")
    parser.add_argument("eval_file")
    args = parser.parse_args()
    print(f"{create_connection(args.transport, args.command).describe()} {args.eval_file}")


if __name__ == "__main__":
    main()
