"""confluent-kafka (librdkafka) logging in to a Gregor SASL_PLAINTEXT listener.

Usage: python confluent_sasl.py BOOTSTRAP TOPIC_PREFIX
BOOTSTRAP is a SASL_PLAINTEXT listener with the PLAIN user admin
(admin-secret) and SCRAM-SHA-256 and SCRAM-SHA-512 credentials for the
user ck (ck-secret), which the Go test creates. Prints a VERSION line and a
RESULT line for the sasl feature (see compatlib). confluent_tls.py runs the
same round trip over SASL_SSL, confluent_oauth.py with OAUTHBEARER.
"""

import importlib.metadata

import confluent_kafka
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from compatlib import args, check, check_roundtrip, records, run, wait_until
from confluent_compat import CLIENT, TIMEOUT, consume_all, consumer, produce

BOOTSTRAP, PREFIX = args()


def login(mechanism, user, password, protocol="SASL_PLAINTEXT"):
    return {"security.protocol": protocol, "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def roundtrip(feature, admin, producer, reader):
    """Creates PREFIX-<feature> with an AdminClient logged in with admin,
    writes records(feature, 100) to it with a Producer logged in with
    producer and reads them back, byte for byte and at offsets 0..99, with a
    group Consumer logged in with reader."""
    topic = "%s-%s" % (PREFIX, feature)
    a = AdminClient({"bootstrap.servers": BOOTSTRAP, **admin})
    a.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
    recs = records(feature, 100)
    acks = produce(topic, recs, **producer)
    c = consumer(topic + "-reader", **reader)
    try:
        c.subscribe([topic])
        got = consume_all(c, len(recs))
    finally:
        c.close()
    return check_roundtrip(recs, acks, got)


def refusal(conf, code):
    """The error of that code librdkafka reports to the error callback of an
    AdminClient configured with conf, as it connects to BOOTSTRAP."""
    errors = []
    a = AdminClient({"bootstrap.servers": BOOTSTRAP, "error_cb": errors.append, **conf})

    def refused():
        a.poll(0.1)
        return next((e for e in errors if e.code() == code), None)
    return str(wait_until(refused, "error %s" % code, timeout=TIMEOUT))


def test_sasl():
    msg = roundtrip("sasl", login("PLAIN", "admin", "admin-secret"), login("SCRAM-SHA-256", "ck", "ck-secret"),
                    login("SCRAM-SHA-512", "ck", "ck-secret"))
    refused = refusal(login("SCRAM-SHA-256", "ck", "wrong"), KafkaError._AUTHENTICATION)
    check("invalid credentials with SASL mechanism SCRAM-SHA-256" in refused, "a wrong password refused with %s" % refused)
    return "PLAIN admin, SCRAM-SHA-256 producer, SCRAM-SHA-512 group consumer: %s; wrong password: %s" % (msg, refused)


def report(feature, test):
    """Prints the VERSION line and feature's RESULT line (see compatlib)."""
    print("VERSION %s %s (librdkafka %s)" % (CLIENT, importlib.metadata.version("confluent-kafka"),
                                             confluent_kafka.libversion()[0]), flush=True)
    run(feature, test)


if __name__ == "__main__":
    report("sasl", test_sasl)
