package compat

import (
	"slices"
	"strings"
	"testing"
)

// TestKcatOAuthBearer: librdkafka's kcat logs in with OAUTHBEARER as its
// users configure it, with librdkafka's builtin unsecured JWT, on the
// unsecured listener: it produces what the broker stores and consumes it
// back. The same JWT on the JWKS-checked listener is refused. (Debian's
// librdkafka 2.0.2 is built without libcurl, so kcat has no OIDC method
// to fetch a signed token with: "sasl.oauthbearer.method" is "not
// supported in this build".)
func TestKcatOAuthBearer(t *testing.T) {
	feature(t, kcatClientName, kcatVersion(t), "oauthbearer", func(t *testing.T) {
		b := startOAuthBroker(t, startIdentityProvider(t, nil))
		login := []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=OAUTHBEARER",
			"-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal=alice scope=kafka"}
		const topic = "kcat-oauth"
		createTopic(t, b.adm, topic)
		input, want := kcatKeyedInput("oauth", 100)
		kcat(t, b.unsecuredAddr, input, slices.Concat([]string{"-P", "-t", topic, "-K", ":"}, login)...)
		checkStored(t, b.plainAddr, topic, want, 0)
		out := kcat(t, b.unsecuredAddr, "", slices.Concat([]string{"-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n"}, login)...)
		var got []keyValue
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			k, v, _ := strings.Cut(line, ":")
			got = append(got, keyValue{k, v})
		}
		sameRecords(t, "consumed", got, want)

		out = kcatFails(t, b.securedAddr, slices.Concat([]string{"-L", "-m", "5"}, login)...)
		if want := `SASL authentication error: {"status":"invalid_token"}`; !strings.Contains(out, want) {
			t.Fatalf("an unsecured JWT on the JWKS listener: kcat said\n%s\nwithout %q", out, want)
		}
		b.expectRefusedToken(t)
	})
}
