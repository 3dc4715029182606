"""`python -m rigway`: the `rigway` command, for machines where pip's scripts directory
is not on PATH (a per-user install on Windows)."""

from rigway.cli.main import main

if __name__ == "__main__":
    main()
