"""The reference broker over HTTP: an OpenAPI 3 front that any implementation can also serve.

``mqtck conform --target http://host:port`` drives whatever answers this API, so a broker written in
another language can be gated by implementing it. ``models`` holds the request and response bodies
(the schema), ``app`` the routes; neither holds semantics, which stay in the sans-I/O broker.
"""
