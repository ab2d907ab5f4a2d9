"""confluent-kafka (librdkafka) over TLS to a Gregor SASL_SSL listener.

Usage: python confluent_tls.py BOOTSTRAP TOPIC_PREFIX
BOOTSTRAP is a SASL_SSL listener with a SCRAM-SHA-512 credential for the
user ck (ck-secret), which the Go test creates; GREGOR_TLS_CA names the PEM
file of the broker's certificate. The AdminClient, Producer and group
Consumer trust it through ssl.ca.location; a client trusting only the
system's roots must fail the handshake. Prints a VERSION line and a RESULT
line for the tls feature (see compatlib).
"""

import os

from confluent_kafka import KafkaError

from compatlib import check
from confluent_sasl import login, refusal, report, roundtrip


def test_tls():
    trusting = {**login("SCRAM-SHA-512", "ck", "ck-secret", "SASL_SSL"), "ssl.ca.location": os.environ["GREGOR_TLS_CA"]}
    msg = roundtrip("tls", trusting, trusting, trusting)
    refused = refusal(login("SCRAM-SHA-512", "ck", "ck-secret", "SASL_SSL"), KafkaError._SSL)
    check("certificate verify failed" in refused, "an untrusted certificate refused with %s" % refused)
    return "SCRAM-SHA-512 over SASL_SSL, the certificate trusted from PEM: %s; untrusted: %s" % (msg, refused)


if __name__ == "__main__":
    report("tls", test_tls)
