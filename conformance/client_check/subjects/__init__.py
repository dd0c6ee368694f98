"""Client programs for ``mqtck conform --client``: each reads the MQTCK_* environment (docs/client-conformance.md)."""
