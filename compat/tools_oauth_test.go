package compat

import (
	"strings"
	"testing"
)

// testOAuthBearer runs the console producer and consumer with OAUTHBEARER
// logins configured as Kafka's docs show: on the unsecured listener with
// the login module's unsecured token; on the JWKS-checked listener with
// OAuthBearerLoginCallbackHandler fetching tokens from the identity
// provider's client credentials grant, the producer given the client's id
// and secret as JAAS options (deprecated since Kafka 4.1), the consumer
// as KIP-1139's configs. Kafka 4 fetches tokens only from URLs a JVM
// system property allows. Through each listener records go round, and
// the broker stores what was sent; kafka-topics with the unsecured token
// on the JWKS-checked listener is refused.
func (e *cliEnv) testOAuthBearer(t *testing.T) {
	idp := startIdentityProvider(t, map[string]string{"cli-app": "cli-secret"})
	b := startOAuthBroker(t, idp)
	const login = "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n" +
		"sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
	oidc := "sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n" +
		"sasl.oauthbearer.token.endpoint.url=" + idp.TokenURL + "\n"
	unsecured := cliProperties(t, "unsecured", login+` unsecuredLoginStringClaim_sub="alice";`+"\n")
	jaasClient := cliProperties(t, "jaas-client", login+` clientId="cli-app" clientSecret="cli-secret";`+"\n"+oidc)
	configClient := cliProperties(t, "config-client", login+";\n"+oidc+
		"sasl.oauthbearer.client.credentials.client.id=cli-app\nsasl.oauthbearer.client.credentials.client.secret=cli-secret\n")
	allowed := e.withOpts("-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=" + idp.TokenURL)

	const n = 50
	for _, l := range []struct {
		name, addr                     string
		env                            *cliEnv
		producerConfig, consumerConfig string
	}{
		{"unsecured", b.unsecuredAddr, e, unsecured, unsecured},
		{"secured", b.securedAddr, allowed, jaasClient, configClient},
	} {
		topic := "cli-oauth-" + l.name
		createTopic(t, b.adm, topic)
		l.env.consoleRoundTrip(t, topic, l.name, n, []string{"--bootstrap-server", l.addr, "--command-config", l.producerConfig},
			[]string{"--bootstrap-server", l.addr, "--command-config", l.consumerConfig})
		checkStored(t, b.plainAddr, topic, cliKeyValues(l.name, n), 0)
	}

	r := e.try(t, "", e.cls.topics, "--bootstrap-server", b.securedAddr, "--command-config", unsecured, "--list")
	if r.err == nil {
		t.Fatalf("kafka-topics with an unsecured token on the JWKS listener succeeded:\n%s", r.stdout)
	}
	if want := `SaslAuthenticationException: {"status":"invalid_token"}`; !strings.Contains(r.stdout+r.stderr, want) {
		t.Fatalf("unsecured token on the JWKS listener: output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
	}
	b.expectRefusedToken(t)
}

// cliKeyValues are the records of cliInput(prefix, n).
func cliKeyValues(prefix string, n int) []keyValue {
	var kvs []keyValue
	for _, l := range strings.Split(strings.TrimSuffix(cliInput(prefix, n), "\n"), "\n") {
		k, v, _ := strings.Cut(l, "\t")
		kvs = append(kvs, keyValue{k, v})
	}
	return kvs
}
