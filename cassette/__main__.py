"""``python -m cassette``: the command line (docs/cli.md)."""

from cassette.cli.main import main

if __name__ == "__main__":
    main()
