"""One module per ``mqtck`` subcommand (see ``conformance.cli``), and ``conform_client``, the ``--client`` half of
``mqtck conform`` (the client check it runs lives below, in ``conformance.client_check``)."""
