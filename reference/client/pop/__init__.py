"""POP consumers (RocketMQ 5, seed 004): the client side of pop, ack and change of invisible time.

* :mod:`.connection` – one client's connection to the broker's POP side (errors, held pops, timeouts);
* :mod:`.simple_consumer` – SimpleConsumer: receive, ack, change_invisible_duration, driven by the app;
* :mod:`.push_consumer` – a push consumer over POP: assignment from the broker, pop loops, a
  listener, and retry back-off through change of invisible time;
* :mod:`.backoff` – the retry back-off by reconsume times.
"""
