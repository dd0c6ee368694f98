"""The RocketMQ 4.x "remoting" transport: the TCP protocol the official clients speak.

Modules, one job each (protocols/rocketmq-remoting.md is the specification they follow):

* :mod:`.command`: the RemotingCommand (JSON header + body) and the request / response codes;
* :mod:`.frame`: length-prefixed framing, and a streaming decoder that refuses malformed input;
* :mod:`.message_codec`: the byte layouts inside bodies (properties string, stored-message records,
  batch bodies, message ids);
* :mod:`.connection`, :mod:`.namesrv`, :mod:`.broker_handlers`, :mod:`.server`: the asyncio name server
  and broker that decode, call :class:`reference.broker.broker.Broker`, and encode.
"""
