"""Client conformance: the reference remoting broker observes a client program and judges it.

``mqtck conform --client "CMD"`` (docs/client-conformance.md) runs CMD through the scenarios of
:mod:`.scenarios` against an in-process reference broker (:mod:`.broker`), and the checkers of
:mod:`.checks` judge each CCLIENT requirement from the broker's trace (:mod:`.harness` ties them together).
:mod:`.subjects` holds client programs to check, starting with the official C++ client's PushConsumer.
"""
