package compat

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/compat/harness"
)

const (
	cliTokensTopic  = "cli-tokens"
	cliTokensSecret = "some-secret"
)

// cliTokenCreated reads the token id kafka-delegation-tokens --create prints.
var cliTokenCreated = regexp.MustCompile(`(?m)^Created delegation token with tokenId : (\S+)$`)

// cliTokenNewExpiry reads the expiry --renew and --expire print.
var cliTokenNewExpiry = regexp.MustCompile(`Completed (renew|expire) operation\. New expiry date : (\d{4}-\d\d-\d\dT\d\d:\d\d)`)

// cliTokenHeader is the header line of the tool's token table.
var cliTokenHeader = regexp.MustCompile(`^TOKENID\s+HMAC\s+OWNER\s+REQUESTER\s+RENEWERS\s+ISSUEDATE\s+EXPIRYDATE\s+MAXDATE$`)

// cliToken is one row of kafka-delegation-tokens' token table. The dates
// are printed to the minute, in the JVM's time zone (UTC here).
type cliToken struct {
	id, hmac, owner, requester, renewers string
	issue, expiry, max                   time.Time
}

const cliTokenDate = "2006-01-02T15:04"

// cliParseTokens parses the table that --create and --describe print
// after their first lines.
func cliParseTokens(t *testing.T, out string) []cliToken {
	t.Helper()
	var toks []cliToken
	header := false
	for _, l := range cliLines(out) {
		if !header {
			header = cliTokenHeader.MatchString(l)
			continue
		}
		f := strings.Fields(l)
		if len(f) < 8 {
			t.Fatalf("unexpected token line %q in:\n%s", l, out)
		}
		tok := cliToken{id: f[0], hmac: f[1], owner: f[2], requester: f[3],
			renewers: strings.Join(f[4:len(f)-3], " ")} // [User:a, User:b] has spaces
		for i, d := range []*time.Time{&tok.issue, &tok.expiry, &tok.max} {
			var err error
			if *d, err = time.Parse(cliTokenDate, f[len(f)-3+i]); err != nil {
				t.Fatalf("token line %q: %v", l, err)
			}
		}
		toks = append(toks, tok)
	}
	if !header {
		t.Fatalf("no token table in:\n%s", out)
	}
	return toks
}

// cliNear reports whether got is want to the minute the tool prints
// (one minute either way for a broker that reads its clock twice).
func cliNear(got, want time.Time) bool {
	d := got.Sub(want.Truncate(time.Minute))
	return d >= -time.Minute && d <= time.Minute
}

// testDelegationTokens runs a broker like testSASL's (one SASL_PLAINTEXT
// listener, a PLAIN admin, SCRAM users alice, bob and carol) with
// delegation.token.secret.key set, and drives kafka-delegation-tokens
// through a token's life as Kafka's docs show it (KIP-48): alice creates
// a token with bob as renewer, the broker's default lifetimes apply
// (expiry in a day, maximum in a week) and its HMAC is Kafka's
// HMAC-SHA512 of the token id under the secret; --describe filters by
// owner or renewer and lets owner, renewer and (with no authorizer)
// anyone with Describe see it; the console producer and consumer log in
// with the token (SCRAM with tokenauth=true), which may not create
// tokens itself; bob renews it for an hour, carol may not; alice expires
// it, after which it is gone from --describe and no longer logs in. A
// PLAINTEXT listener and a broker without the secret refuse token
// requests with Kafka's errors.
func (e *cliEnv) testDelegationTokens(t *testing.T) {
	// Dates in the tool's output are in the JVM's zone: make it UTC.
	e = e.withOpts("-Duser.timezone=UTC")
	jaas := []string{
		"listeners=SASL_PLAINTEXT://127.0.0.1:0",
		"security.inter.broker.protocol=SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol=PLAIN",
		"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";`,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
	}
	p := harness.Start(t, t.TempDir(), append(jaas, "delegation.token.secret.key="+cliTokensSecret)...)
	props := func(name, mechanism, module, user, password, extra string) string {
		return cliProperties(t, name, fmt.Sprintf("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=%s\n"+
			"sasl.jaas.config=org.apache.kafka.common.security.%s required username=\"%s\" password=\"%s\"%s;\n",
			mechanism, module, user, password, extra))
	}
	scram := func(user string) string {
		return props(user, "SCRAM-SHA-256", "scram.ScramLoginModule", user, user+"-secret", "")
	}
	admin := props("admin", "PLAIN", "plain.PlainLoginModule", "admin", "admin-secret", "")
	alice, bob, carol := scram("alice"), scram("bob"), scram("carol")
	as := func(config string, args ...string) []string {
		return append([]string{"--bootstrap-server", p.Addr, "--command-config", config}, args...)
	}
	for _, user := range []string{"alice", "bob", "carol"} {
		out := e.run(t, "", e.cls.configs, as(admin, "--alter", "--entity-type", "users", "--entity-name", user,
			"--add-config", "SCRAM-SHA-256=[iterations=8192,password="+user+"-secret]")...)
		if strings.TrimSpace(out) != "Completed updating config for user "+user+"." {
			t.Fatalf("alter %s said %q", user, out)
		}
	}
	tokens := func(config string, args ...string) string {
		t.Helper()
		return e.run(t, "", e.cls.tokens, as(config, args...)...)
	}
	tokensFail := func(config string, args ...string) string {
		t.Helper()
		r := e.try(t, "", e.cls.tokens, as(config, args...)...)
		if r.err == nil {
			t.Fatalf("kafka-delegation-tokens %v succeeded, want a failure:\n%s", args, r.stdout)
		}
		return r.stdout + r.stderr
	}
	describe := func(config string, owners ...string) []cliToken {
		t.Helper()
		args := []string{"--describe"}
		for _, o := range owners {
			args = append(args, "--owner-principal", o)
		}
		out := tokens(config, args...)
		toks := cliParseTokens(t, out)
		if want := fmt.Sprintf("Total number of tokens : %d", len(toks)); !strings.Contains(out, want+"\n") {
			t.Fatalf("--describe %v lacks %q:\n%s", owners, want, out)
		}
		return toks
	}

	// alice creates a token for herself with bob as renewer, with the
	// broker's maximum lifetime (-1).
	before := time.Now().UTC()
	out := tokens(alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
	after := time.Now().UTC()
	m := cliTokenCreated.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("--create printed no token id:\n%s", out)
	}
	created := cliParseTokens(t, out)
	if len(created) != 1 {
		t.Fatalf("--create printed %d tokens:\n%s", len(created), out)
	}
	tok := created[0]
	if tok.id != m[1] || tok.owner != "User:alice" || tok.requester != "User:alice" || tok.renewers != "[User:bob]" {
		t.Fatalf("created token %+v, want id %s, owner and requester User:alice, renewers [User:bob]", tok, m[1])
	}
	if tok.issue.Before(before.Truncate(time.Minute)) || tok.issue.After(after) {
		t.Errorf("token issued %v, between %v and %v", tok.issue, before, after)
	}
	// delegation.token.expiry.time.ms and delegation.token.max.lifetime.ms
	// at their defaults: a day and a week.
	if !cliNear(tok.expiry, tok.issue.Add(24*time.Hour)) || !cliNear(tok.max, tok.issue.Add(7*24*time.Hour)) {
		t.Errorf("token issued %v expires %v, max %v: want a day and a week later", tok.issue, tok.expiry, tok.max)
	}
	// Kafka's HMAC is HmacSHA512 of the token id keyed by the secret.
	mac := hmac.New(sha512.New, []byte(cliTokensSecret))
	mac.Write([]byte(tok.id))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); tok.hmac != want {
		t.Errorf("token %s has HMAC %s, Kafka's would be %s", tok.id, tok.hmac, want)
	}

	// The tool sends --describe without --owner-principal as an empty
	// owner list, for which Kafka answers no tokens (an absent list, which
	// the tool never sends, would mean every token the requester may see).
	if got := describe(alice); len(got) != 0 {
		t.Errorf("--describe with no owners lists %+v, Kafka lists none", got)
	}
	// Owners filter on owner or renewer; the requester sees the tokens it
	// owns or renews, and others where it has Describe, which every
	// principal has with no authorizer.
	for _, c := range []struct {
		who, config, owner string
		listed             bool
	}{
		{"alice", alice, "User:alice", true},
		{"alice", alice, "User:bob", true}, // bob renews it
		{"alice", alice, "User:carol", false},
		{"bob", bob, "User:alice", true},
		{"carol", carol, "User:alice", true},
	} {
		got := describe(c.config, c.owner)
		if !c.listed {
			if len(got) != 0 {
				t.Errorf("%s: --describe --owner-principal %s lists %+v, want none", c.who, c.owner, got)
			}
			continue
		}
		if len(got) != 1 || got[0] != tok {
			t.Errorf("%s: --describe --owner-principal %s lists %+v, want %+v", c.who, c.owner, got, tok)
		}
	}

	// The token logs in: SCRAM-SHA-256 with the id as user name and the
	// HMAC as password.
	token := props("token", "SCRAM-SHA-256", "scram.ScramLoginModule", tok.id, tok.hmac, ` tokenauth="true"`)
	e.run(t, "", e.cls.topics, as(admin, "--create", "--topic", cliTokensTopic, "--partitions", "2")...)
	e.consoleRoundTrip(t, cliTokensTopic, "tokens", 20, []string{"--bootstrap-server", p.Addr, "--command-config", token},
		[]string{"--bootstrap-server", p.Addr, "--command-config", token})
	out = tokensFail(token, "--create", "--max-life-time-period", "-1")
	if !strings.Contains(out, "UnsupportedByAuthenticationException") || !strings.Contains(out,
		"Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.") {
		t.Errorf("creating a token over a token-authenticated connection failed without DELEGATION_TOKEN_REQUEST_NOT_ALLOWED:\n%s", out)
	}

	// bob, the renewer, renews it for an hour; carol may not.
	before = time.Now().UTC()
	out = tokens(bob, "--renew", "--hmac", tok.hmac, "--renew-time-period", "3600000")
	after = time.Now().UTC()
	m = cliTokenNewExpiry.FindStringSubmatch(out)
	if m == nil || m[1] != "renew" {
		t.Fatalf("--renew printed no new expiry:\n%s", out)
	}
	renewed, err := time.Parse(cliTokenDate, m[2])
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Before(before.Add(time.Hour).Truncate(time.Minute)) || renewed.After(after.Add(time.Hour)) {
		t.Errorf("renewed for an hour between %v and %v: expires %v", before, after, renewed)
	}
	want := tok
	want.expiry = renewed
	if got := describe(alice, "User:alice"); len(got) != 1 || got[0] != want {
		t.Errorf("after --renew, --describe lists %+v, want %+v", got, want)
	}
	out = tokensFail(carol, "--renew", "--hmac", tok.hmac, "--renew-time-period", "3600000")
	if !strings.Contains(out, "DelegationTokenOwnerMismatchException") || !strings.Contains(out, "Specified Principal is not valid Owner/Renewer.") {
		t.Errorf("carol's renewal failed without DELEGATION_TOKEN_OWNER_MISMATCH:\n%s", out)
	}

	// alice expires it at once (-1): it is gone, and no longer logs in.
	before = time.Now().UTC()
	out = tokens(alice, "--expire", "--hmac", tok.hmac, "--expiry-time-period", "-1")
	after = time.Now().UTC()
	m = cliTokenNewExpiry.FindStringSubmatch(out)
	if m == nil || m[1] != "expire" {
		t.Fatalf("--expire printed no new expiry:\n%s", out)
	}
	if expired, err := time.Parse(cliTokenDate, m[2]); err != nil || expired.Before(before.Truncate(time.Minute)) || expired.After(after) {
		t.Errorf("expired between %v and %v: expiry %s", before, after, m[2])
	}
	if got := describe(alice, "User:alice"); len(got) != 0 {
		t.Errorf("after --expire, --describe lists %+v", got)
	}
	r := e.try(t, "", e.cls.topics, as(token, "--list")...)
	if r.err == nil {
		t.Fatalf("kafka-topics with the expired token succeeded:\n%s", r.stdout)
	}
	if want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"; !strings.Contains(r.stdout+r.stderr, want) {
		t.Errorf("expired token: output lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
	}

	// Token requests over PLAINTEXT (the suite's main broker) are not
	// allowed; without the secret a broker has no tokens.
	r = e.try(t, "", e.cls.tokens, "--bootstrap-server", e.p.Addr, "--command-config", cliProperties(t, "plaintext", ""), "--describe")
	if r.err == nil || !strings.Contains(r.stderr, "UnsupportedByAuthenticationException") {
		t.Errorf("--describe over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED:\n%s\n%s", r.err, r.stdout, r.stderr)
	}
	off := harness.Start(t, t.TempDir(), jaas...)
	r = e.try(t, "", e.cls.tokens, "--bootstrap-server", off.Addr, "--command-config", admin, "--create", "--max-life-time-period", "-1")
	if r.err == nil || !strings.Contains(r.stderr, "DelegationTokenDisabledException") || !strings.Contains(r.stderr, "Delegation Token feature is not enabled.") {
		t.Errorf("--create without delegation.token.secret.key: %v, want DELEGATION_TOKEN_AUTH_DISABLED:\n%s\n%s", r.err, r.stdout, r.stderr)
	}
}
