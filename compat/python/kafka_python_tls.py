"""kafka-python over TLS to a Gregor SASL_SSL listener.

Usage: python kafka_python_tls.py BOOTSTRAP TOPIC_PREFIX
BOOTSTRAP is a SASL_SSL listener with a SCRAM-SHA-512 credential for the
user py (py-secret), which the Go test creates; GREGOR_TLS_CA names the PEM
file of the broker's certificate. The admin client, producer and consumer
trust it through ssl_cafile; a client trusting only the system's roots must
fail to start. Prints a VERSION line and a RESULT line for the tls feature
(see compatlib).
"""

import logging
import os

from compatlib import check
from kafka_python_sasl import refusal, report, roundtrip


def login(cafile):
    return {"security_protocol": "SASL_SSL", "ssl_cafile": cafile, "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "py", "sasl_plain_password": "py-secret"}


class HandshakeFailures(logging.Handler):
    """The failed certificate checks kafka-python logs while it retries."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen = []

    def emit(self, record):
        if "CERTIFICATE_VERIFY_FAILED" in record.getMessage():
            self.seen.append(record.getMessage())


def test_tls():
    trusting = login(os.environ["GREGOR_TLS_CA"])
    msg = roundtrip("tls", trusting, trusting, trusting)
    failures = HandshakeFailures()
    kafka_logger = logging.getLogger("kafka")
    kafka_logger.addHandler(failures)
    level = kafka_logger.level
    kafka_logger.setLevel(logging.DEBUG)
    try:
        refused = refusal(login(None))
    finally:
        kafka_logger.removeHandler(failures)
        kafka_logger.setLevel(level)
    check(refused is not None, "a client that does not trust the broker's certificate started")
    check(failures.seen, "no failed certificate check was logged: %s" % refused)
    refused += "; %s" % failures.seen[0]
    return "SCRAM-SHA-512 over SASL_SSL, the certificate trusted from PEM: %s; untrusted: %s" % (msg, refused)


if __name__ == "__main__":
    report("tls", test_tls)
