"""The command line: ``python -m cassette trace|profile`` (docs/cli.md)."""
