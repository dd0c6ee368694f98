"""mqtck's user-facing side: the spec, the conformance suite, targets, reports, mutants and the CLI."""
