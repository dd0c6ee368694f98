"""The conformance suite: each test is marked with the requirement IDs it proves and the target
capabilities it needs. Run it with ``mqtck conform`` or ``pytest --mqtck-target T``."""
