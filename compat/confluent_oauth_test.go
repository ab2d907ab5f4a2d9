package compat

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestConfluentOAuthBearer: librdkafka, in confluent-kafka-go, logs in
// with OAUTHBEARER as its users configure it: on the JWKS-checked listener
// with its OIDC method, which fetches tokens from the identity provider's
// client credentials grant, on the unsecured listener with its builtin
// unsecured JWT. Through each it produces what the broker stores and
// reads it back. Its unsecured JWT on the JWKS-checked listener is
// refused.
func TestConfluentOAuthBearer(t *testing.T) {
	feature(t, confluentClientName, confluentVersion(t), "oauthbearer", func(t *testing.T) {
		idp := startIdentityProvider(t, map[string]string{"confluent-app": "confluent-secret"})
		b := startOAuthBroker(t, idp)
		login := []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=OAUTHBEARER"}
		oidc := slices.Concat(login, []string{"sasl.oauthbearer.method=oidc", "sasl.oauthbearer.client.id=confluent-app",
			"sasl.oauthbearer.client.secret=confluent-secret", "sasl.oauthbearer.token.endpoint.url=" + idp.TokenURL,
			"sasl.oauthbearer.scope=kafka"})
		unsecured := slices.Concat(login, []string{"enable.sasl.oauthbearer.unsecure.jwt=true",
			"sasl.oauthbearer.config=principal=confluent-dev scope=kafka"})
		for _, l := range []struct {
			name, addr string
			settings   []string
		}{{"secured", b.securedAddr, oidc}, {"unsecured", b.unsecuredAddr, unsecured}} {
			topic := "confluent-oauth-" + l.name
			createTopic(t, b.adm, topic)
			recs := makeRecords(topic, 50)
			confluentProduce(t, l.addr, topic, recs, l.settings...)
			checkStored(t, b.plainAddr, topic, recs, 0)
			sameRecords(t, l.name+" consumed", confluentConsumeTo(t, l.addr, topic, endOffsets(t, b.adm, topic), l.settings...), recs)
		}

		prod, err := kafka.NewProducer(confluentConfig(t, b.securedAddr, unsecured...))
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		if err := confluentError(t, prod.Events(), kafka.ErrAuthentication); !strings.Contains(err.Error(), `{"status":"invalid_token"}`) {
			t.Fatalf("an unsecured JWT on the JWKS listener: %v, want the broker's invalid_token", err)
		}
		b.expectRefusedToken(t)
	})
}

// confluentError waits for librdkafka's error of that code (such as
// ErrAuthentication or ErrSsl) among a client's events.
func confluentError(t *testing.T, events <-chan kafka.Event, code kafka.ErrorCode) kafka.Error {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if err, ok := ev.(kafka.Error); ok && err.Code() == code {
				return err
			}
			t.Logf("event before the %v error: %T %v", code, ev, ev)
		case <-timeout:
			t.Fatalf("no %v error after 30 s", code)
		}
	}
}
