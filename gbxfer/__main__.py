"""``gbxfer`` and ``python -m gbxfer``: the command line, loaded here so that a Ctrl-C while it
loads (about a second of imports) ends quietly too."""
import sys


def main() -> int:
    try:
        from .cli import main as run

        return run()  # (which reports an interrupt of the command itself)
    except KeyboardInterrupt:  # while loading, or parsing the arguments
        print("gbxfer: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
