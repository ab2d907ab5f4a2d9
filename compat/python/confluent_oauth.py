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

import json
import os

from confluent_kafka import KafkaError

from compatlib import check
from confluent_sasl import refusal, report, roundtrip

LOGIN = json.loads(os.environ.get("GREGOR_OAUTH", "{}"))
BEARER = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}


def oidc():
    return {**BEARER, "sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": LOGIN["token_url"],
            "sasl.oauthbearer.client.id": LOGIN["client_id"], "sasl.oauthbearer.client.secret": LOGIN["client_secret"],
            "sasl.oauthbearer.scope": "kafka"}


def unsecured_jwt(principal):
    return {**BEARER, "enable.sasl.oauthbearer.unsecure.jwt": True,
            "sasl.oauthbearer.config": "principal=%s scope=kafka" % principal}


def test_oauthbearer():
    if not LOGIN.get("token_url"):
        login = unsecured_jwt(LOGIN["subject"])
        return "unsecured JWT: admin, producer, group consumer: " + roundtrip("oauthbearer", login, login, login)
    login = oidc()
    msg = "OIDC: admin, producer, group consumer: " + roundtrip("oauthbearer", login, login, login)
    refused = refusal(unsecured_jwt(LOGIN["client_id"]), KafkaError._AUTHENTICATION)
    check("invalid_token" in refused, "an unsecured JWT refused with %s" % refused)
    return "%s; unsecured JWT: %s" % (msg, refused)


if __name__ == "__main__":
    report("oauthbearer", test_oauthbearer)
