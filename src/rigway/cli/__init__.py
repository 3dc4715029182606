"""The `rigway` command: one module per command group."""
