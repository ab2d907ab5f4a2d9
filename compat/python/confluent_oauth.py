"""confluent-kafka (librdkafka) logging in to a Gregor OAUTHBEARER listener
with librdkafka's own logins, as its users configure them: OIDC (the
client credentials grant at a token endpoint) and, for development, the
unsecured JWT it makes itself.

Usage: python confluent_oauth.py BOOTSTRAP TOPIC_PREFIX
BOOTSTRAP is a SASL_PLAINTEXT listener with OAUTHBEARER; GREGOR_OAUTH
(JSON, from compat/oauth_scripts_test.go) says how to log in to it: with
an unsecured JWT for "subject", or with OIDC ("token_url", "client_id",
"client_secret"), in which case an unsecured JWT must be refused. Prints a
VERSION line and a RESULT line for the oauthbearer feature (see compatlib).
"""

import importlib.metadata
import json
import os

import confluent_kafka
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from compatlib import args, check, check_roundtrip, records, run, wait_until
from confluent_compat import CLIENT, TIMEOUT, consume_all, consumer, produce

BOOTSTRAP, PREFIX = args()
LOGIN = json.loads(os.environ.get("GREGOR_OAUTH", "{}"))
BEARER = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}


def oidc():
    return {**BEARER, "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": LOGIN["token_url"],
            "sasl.oauthbearer.client.id": LOGIN["client_id"], "sasl.oauthbearer.client.secret": LOGIN["client_secret"],
            "sasl.oauthbearer.scope": "kafka"}


def unsecured_jwt(principal):
    return {**BEARER, "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=%s scope=kafka" % principal}


def roundtrip(login):
    """Creates PREFIX-oauthbearer with an AdminClient logged in with login,
    writes records("oauthbearer", 100) to it with a Producer and reads them
    back with a group Consumer, all logged in with login."""
    topic = PREFIX + "-oauthbearer"
    a = AdminClient({"bootstrap.servers": BOOTSTRAP, **login})
    a.create_topics([NewTopic(topic, 1, 1)], operation_timeout=TIMEOUT)[topic].result(TIMEOUT)
    recs = records("oauthbearer", 100)
    acks = produce(topic, recs, **login)
    c = consumer(topic + "-reader", **login)
    try:
        c.subscribe([topic])
        got = consume_all(c, len(recs))
    finally:
        c.close()
    return check_roundtrip(recs, acks, got)


def refusal(login):
    """The authentication error librdkafka reports to the error callback of
    an AdminClient logged in with login, as it connects to BOOTSTRAP."""
    errors = []
    a = AdminClient({"bootstrap.servers": BOOTSTRAP, "error_cb": errors.append, **login})

    def authentication_error():
        a.poll(0.1)
        return next((e for e in errors if e.code() == KafkaError._AUTHENTICATION), None)
    return str(wait_until(authentication_error, "an authentication error", timeout=TIMEOUT))


def test_oauthbearer():
    if not LOGIN.get("token_url"):
        return "unsecured JWT: admin, producer, group consumer: " + roundtrip(unsecured_jwt(LOGIN["subject"]))
    msg = "OIDC: admin, producer, group consumer: " + roundtrip(oidc())
    refused = refusal(unsecured_jwt(LOGIN["client_id"]))
    check("invalid_token" in refused, "an unsecured JWT refused with %s" % refused)
    return "%s; unsecured JWT: %s" % (msg, refused)


def main():
    print("VERSION %s %s (librdkafka %s)" % (CLIENT, importlib.metadata.version("confluent-kafka"),
                                             confluent_kafka.libversion()[0]), flush=True)
    run("oauthbearer", test_oauthbearer)


if __name__ == "__main__":
    main()
