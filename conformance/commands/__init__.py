"""One module per ``mqtck`` subcommand; see ``conformance.cli``."""
