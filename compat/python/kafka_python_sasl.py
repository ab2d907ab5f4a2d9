"""kafka-python logging in to a Gregor SASL_PLAINTEXT listener.

Usage: python kafka_python_sasl.py BOOTSTRAP TOPIC_PREFIX
BOOTSTRAP is a SASL_PLAINTEXT listener with the PLAIN user admin
(admin-secret) and a SCRAM-SHA-256 and SCRAM-SHA-512 credential for the
user py (py-secret), which the Go test creates. Prints a VERSION line and
a RESULT line for the sasl feature (see compatlib).
"""

import importlib.metadata

from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import KafkaError

from compatlib import args, check, check_roundtrip, records, run
from kafka_python_compat import consume_all, produce

BOOTSTRAP, PREFIX = args()


def login(mechanism, user, password):
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mechanism,
            "sasl_plain_username": user, "sasl_plain_password": password}


def test_sasl():
    topic = PREFIX + "-sasl"
    a = KafkaAdminClient(bootstrap_servers=BOOTSTRAP, **login("PLAIN", "admin", "admin-secret"))
    try:
        a.create_topics({topic: {"num_partitions": 1, "replication_factor": 1}}, wait_for_metadata=True)
    finally:
        a.close()
    recs = records("sasl", 100)
    acks = produce(topic, recs, **login("SCRAM-SHA-256", "py", "py-secret"))
    c = KafkaConsumer(topic, bootstrap_servers=BOOTSTRAP, group_id=None, auto_offset_reset="earliest",
                      enable_auto_commit=False, **login("SCRAM-SHA-512", "py", "py-secret"))
    try:
        got = consume_all(c, len(recs))
    finally:
        c.close()
    msg = check_roundtrip(recs, acks, got)
    try:
        KafkaAdminClient(bootstrap_servers=BOOTSTRAP, bootstrap_timeout_ms=5000,
                         **login("SCRAM-SHA-256", "py", "wrong")).close()
    except KafkaError as e:
        refused = "%s: %s" % (type(e).__name__, e)
    else:
        refused = None
    check(refused is not None, "a wrong SCRAM password was accepted")
    return "PLAIN admin, SCRAM-SHA-256 producer, SCRAM-SHA-512 consumer: %s; wrong password: %s" % (msg, refused)


def main():
    print("VERSION kafka-python %s" % importlib.metadata.version("kafka-python"), flush=True)
    run("sasl", test_sasl)


if __name__ == "__main__":
    main()
