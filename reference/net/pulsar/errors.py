"""Every refusal of the Pulsar front, mapped in one place to the wire's ServerError.

A handler raises :class:`reference.rules.errors.InvalidRequest`; a command with a ``request_id`` is answered
``ERROR{request_id, error, message="field: rule"}``, a SEND with ``SEND_ERROR`` (the client drops the one message on
ChecksumError and closes its connection on any other, pulsar-binary §3), lookups with their own response type set
to Failed (a CommandError would leave the client's lookup hanging, §6). Commands without a request id (FLOW, ACK,
REDELIVER_UNACKNOWLEDGED_MESSAGES) have no error reply in the protocol: the Java broker logs and ignores a bad one,
and so does this front.
"""

from __future__ import annotations

from reference.broker.permits.service import CONSUMER_BUSY, CONSUMER_NOT_FOUND, SUBSCRIPTION_MISMATCH
from reference.net.pulsar.schema import pb
from reference.rules.errors import InvalidRequest

#: InvalidRequest code -> ServerError. Anything else is NotAllowedError: fatal for the client, so a refused
#: request fails at once with its message instead of being retried until the operation timeout.
SERVER_ERRORS = {
    CONSUMER_BUSY: pb.ServerError_.ConsumerBusy,
    SUBSCRIPTION_MISMATCH: pb.ServerError_.ConsumerBusy,
    CONSUMER_NOT_FOUND: pb.ServerError_.ConsumerNotFound,
    "ChecksumError": pb.ServerError_.ChecksumError,
    "InvalidTopicName": pb.ServerError_.InvalidTopicName,
    "TOPIC_NOT_EXIST": pb.ServerError_.TopicNotFound,
    "ProducerBusy": pb.ServerError_.ProducerBusy,
}


def server_error(exc: InvalidRequest) -> int:
    return SERVER_ERRORS.get(exc.code, pb.ServerError_.NotAllowedError)


def error_command(request_id: int, exc: InvalidRequest) -> object:
    cmd = pb.BaseCommand(type=pb.Type_.ERROR)
    cmd.error.request_id = request_id
    cmd.error.error = server_error(exc)
    cmd.error.message = f"{exc.field}: {exc.rule}"
    return cmd


def send_error_command(producer_id: int, sequence_id: int, exc: InvalidRequest) -> object:
    cmd = pb.BaseCommand(type=pb.Type_.SEND_ERROR)
    cmd.send_error.producer_id = producer_id
    cmd.send_error.sequence_id = sequence_id
    cmd.send_error.error = server_error(exc)
    cmd.send_error.message = f"{exc.field}: {exc.rule}"
    return cmd
