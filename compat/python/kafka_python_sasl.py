"""kafka-python logging in to a Gregor SASL_PLAINTEXT listener.

Usage: python kafka_python_sasl.py BOOTSTRAP TOPIC_PREFIX
BOOTSTRAP is a SASL_PLAINTEXT listener with the PLAIN user admin
(admin-secret) and a SCRAM-SHA-256 and SCRAM-SHA-512 credential for the
user py (py-secret), which the Go test creates. Prints a VERSION line and
a RESULT line for the sasl feature (see compatlib).
kafka_python_oauth.py logs in with OAUTHBEARER through its roundtrip,
refusal and report.
"""

import importlib.metadata
import logging

from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import KafkaError

from compatlib import args, check, check_roundtrip, records, run
from kafka_python_compat import consume_all, produce

BOOTSTRAP, PREFIX = args()


def login(mechanism, user, password):
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": user, "sasl_plain_password": password}


def roundtrip(feature, admin, producer, consumer):
    """Creates PREFIX-<feature> with a KafkaAdminClient logged in with
    admin, writes records(feature, 100) to it with a KafkaProducer logged
    in with producer and reads them back, byte for byte and at offsets
    0..99, with a KafkaConsumer logged in with consumer."""
    topic = "%s-%s" % (PREFIX, feature)
    a = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, **admin)
    try:
        a.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}}, wait_for_metadata=True)
    finally:
        a.close()
    recs = records(feature, 100)
    acks = produce(topic, recs, **producer)
    c = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=None, auto_offset_reset="earliest",
                      enable_auto_commit=False, **consumer)
    try:
        got = consume_all(c, len(recs))
    finally:
        c.close()
    return check_roundtrip(recs, acks, got)


class AuthFailures(logging.Handler):
    """The authentication failures kafka-python logs: a client whose login
    is refused while it bootstraps logs why and raises only a timeout."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.seen = []

    def emit(self, record):
        if "SaslAuthenticationFailedError" in record.getMessage():
            self.seen.append(record.getMessage())


def refusal(login_conf):
    """How a KafkaAdminClient logged in with login_conf failed to start
    ("<error>: <message>; logged: <authentication failure>"), or None if
    it started."""
    failures = AuthFailures()
    logging.getLogger("kafka").addHandler(failures)
    try:
        KafkaAdminClient(bootstrap_servers=BOOTSTRAP, bootstrap_timeout_ms=5000, **login_conf).close()
    except KafkaError as e:
        return "%s: %s; logged: %s" % (type(e).__name__, e, failures.seen[0] if failures.seen else "nothing")
    finally:
        logging.getLogger("kafka").removeHandler(failures)
    return None


def test_sasl():
    msg = roundtrip("sasl", login("PLAIN", "admin", "admin-secret"), login("SCRAM-SHA-256", "py", "py-secret"),
                    login("SCRAM-SHA-512", "py", "py-secret"))
    refused = refusal(login("SCRAM-SHA-256", "py", "wrong"))
    check(refused is not None, "a wrong SCRAM password was accepted")
    return "PLAIN admin, SCRAM-SHA-256 producer, SCRAM-SHA-512 consumer: %s; wrong password: %s" % (msg, refused)


def report(feature, test):
    """Prints the VERSION line and feature's RESULT line (see compatlib)."""
    print("VERSION kafka-python %s" % importlib.metadata.version("kafka-python"), flush=True)
    run(feature, test)


if __name__ == "__main__":
    report("sasl", test_sasl)
