"""Transports: decode a request, call the core, encode the answer. No semantics live here."""
