"""kafka-python logging in to a Gregor OAUTHBEARER listener with a token
provider, as kafka-python users do.

Usage: python kafka_python_oauth.py BOOTSTRAP TOPIC_PREFIX
BOOTSTRAP is a SASL_PLAINTEXT listener with OAUTHBEARER; GREGOR_OAUTH
(JSON, from compat/oauth_scripts_test.go) says how to log in to it: with a
ready token ("token", an unsecured JWT), or with a token from the identity
provider's client credentials grant ("token_url", "client_id",
"client_secret"), in which case "expired_token" must be refused. Prints a
VERSION line and a RESULT line for the oauthbearer feature (see compatlib).
"""

import base64
import json
import os
import time
import urllib.parse
import urllib.request

from kafka.net.sasl.oauth import AbstractTokenProvider

from compatlib import check
from kafka_python_sasl import refusal, report, roundtrip  # which read BOOTSTRAP and TOPIC_PREFIX

LOGIN = json.loads(os.environ.get("GREGOR_OAUTH", "{}"))


class GivenToken(AbstractTokenProvider):
    """Always the same token."""

    def __init__(self, token):
        super().__init__()
        self._token = token

    def token(self):
        return self._token


class ClientCredentials(AbstractTokenProvider):
    """Asks the token endpoint for an access token with the client
    credentials grant (the client's id and secret in HTTP basic
    authentication) and reuses it until a minute before it expires."""

    def __init__(self, url, client_id, client_secret):
        super().__init__()
        self._url = url
        self._basic = base64.b64encode(("%s:%s" % (client_id, client_secret)).encode()).decode()
        self._token, self._renew_at = None, 0.0

    def token(self):
        if self._token is None or time.monotonic() >= self._renew_at:
            form = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": "kafka"}).encode()
            req = urllib.request.Request(self._url, data=form, headers={"Authorization": "Basic " + self._basic})
            with urllib.request.urlopen(req, timeout=10) as resp:
                body = json.load(resp)
            self._token, self._renew_at = body["access_token"], time.monotonic() + body["expires_in"] - 60
        return self._token


def bearer(provider):
    return {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER",
            "sasl_oauth_token_provider": provider}


def test_oauthbearer():
    if LOGIN.get("token_url"):
        how = "token from the client credentials grant"
        provider = ClientCredentials(LOGIN["token_url"], LOGIN["client_id"], LOGIN["client_secret"])
    else:
        how, provider = "unsecured token", GivenToken(LOGIN["token"])
    msg = "%s: admin, producer, consumer: %s" % (how, roundtrip("oauthbearer", bearer(provider), bearer(provider),
                                                                 bearer(provider)))
    if not LOGIN.get("expired_token"):
        return msg
    refused = refusal(bearer(GivenToken(LOGIN["expired_token"])))
    check(refused is not None, "an expired token was accepted")
    # kafka-python reads the broker's SASL_AUTHENTICATION_FAILED answer
    # only when it sees it before the connection's close, which follows
    # it at once (as from Kafka); otherwise it reports the lost connection
    # and, in the end, a bootstrap timeout. The Go side checks the broker
    # refused the token (expectRefusedToken) either way.
    told = "SaslAuthenticationFailedError" in refused and "invalid_token" in refused
    check(told or "Unable to bootstrap" in refused, "an expired token refused with %s" % refused)
    return "%s; expired token: %s" % (msg, refused)


if __name__ == "__main__":
    report("oauthbearer", test_oauthbearer)
