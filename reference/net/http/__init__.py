"""The reference broker over HTTP: an OpenAPI 3 front that any implementation can also serve.

``mqtck conform --target http://host:port`` drives whatever answers this API, so a broker written in
another language can be gated by implementing it. ``models`` holds the request and response bodies
(the schema), ``routes`` the handlers (one router per domain), ``errors`` the status of every refusal and
``app`` the application that puts them together; none holds semantics, which stay in the sans-I/O broker.
"""
