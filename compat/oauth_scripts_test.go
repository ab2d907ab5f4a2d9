package compat

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

// The script clients log in with OAUTHBEARER (oauthbearer feature) the
// way their users configure them: kafkajs with an oauthBearerProvider
// (compat/js/kafkajs_oauth.js), kafka-python with a token provider
// (compat/python/kafka_python_oauth.py), confluent-kafka with librdkafka's
// OIDC and unsecured JWT logins (compat/python/confluent_oauth.py). A
// script is run once against each OAUTHBEARER listener of an oauthBroker;
// GREGOR_OAUTH tells it, in JSON, how to log in there (oauthLogin).

// oauthLogin is how a script logs in to one listener: to UNSECURED with
// an unsecured token for Subject; to SECURED with a token from the
// identity provider's client credentials grant, where ExpiredToken (a
// token of the provider that has expired) must be refused.
type oauthLogin struct {
	Listener     string `json:"listener"`
	Subject      string `json:"subject,omitempty"`
	Token        string `json:"token,omitempty"`
	TokenURL     string `json:"token_url,omitempty"`
	ClientID     string `json:"client_id,omitempty"`
	ClientSecret string `json:"client_secret,omitempty"`
	ExpiredToken string `json:"expired_token,omitempty"`
}

// oauthScriptRecords is how many records a script writes through each
// listener.
const oauthScriptRecords = 100

// runOAuthScript runs a script against both OAUTHBEARER listeners of a
// fresh oauthBroker, with the client prefix-app (secret prefix-secret)
// registered at the identity provider. Each run's RESULT goes in the
// matrix; the broker must then hold, in <prefix>-<listener>-oauthbearer,
// exactly the records the script wrote (read through PLAINTEXT), and have
// refused a token. A failed check here fails the matrix cell too.
func runOAuthScript(t *testing.T, prefix, name string, args ...string) {
	t.Helper()
	idp := startIdentityProvider(t, map[string]string{prefix + "-app": prefix + "-secret"})
	b := startOAuthBroker(t, idp)
	var rep scriptReport
	defer func() {
		if t.Failed() && rep.client != "" {
			record(rep.client, rep.version, "oauthbearer", false, failedNote(t))
		}
	}()
	logins := []struct {
		addr  string
		login oauthLogin
	}{
		{b.unsecuredAddr, oauthLogin{Listener: "unsecured", Subject: prefix + "-dev", Token: UnsecuredToken(prefix + "-dev")}},
		{b.securedAddr, oauthLogin{Listener: "secured", TokenURL: idp.TokenURL, ClientID: prefix + "-app", ClientSecret: prefix + "-secret",
			ExpiredToken: idp.Token(prefix+"-app", -time.Hour)}},
	}
	for _, l := range logins {
		env, err := json.Marshal(l.login)
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("GREGOR_OAUTH", string(env))
		runPrefix := prefix + "-" + l.login.Listener
		rep = runScript(t, 3*time.Minute, l.addr, runPrefix, name, args...)
		recordReport(t, rep, "oauthbearer")
		checkStored(t, b.plainAddr, runPrefix+"-oauthbearer", scriptRecords("oauthbearer", oauthScriptRecords), 0)
	}
	b.expectRefusedToken(t)
}

// TestJSKafkajsOAuthBearer: kafkajs's admin client, producer and group
// consumer log in with an oauthBearerProvider's tokens.
func TestJSKafkajsOAuthBearer(t *testing.T) {
	node := kafkajsNode(t)
	runOAuthScript(t, "jso", node, filepath.Join("js", "kafkajs_oauth.js"))
}

// TestPythonKafkaPythonOAuthBearer: kafka-python's KafkaAdminClient,
// KafkaProducer and KafkaConsumer log in with a token provider's tokens.
func TestPythonKafkaPythonOAuthBearer(t *testing.T) {
	python := venvPython(t)
	runOAuthScript(t, "kpo", python, filepath.Join("python", "kafka_python_oauth.py"))
}

// TestPythonConfluentOAuthBearer: confluent-kafka's AdminClient, Producer
// and group Consumer log in with librdkafka's OIDC and unsecured JWT.
func TestPythonConfluentOAuthBearer(t *testing.T) {
	python := venvPython(t)
	runOAuthScript(t, "cko", python, filepath.Join("python", "confluent_oauth.py"))
}
