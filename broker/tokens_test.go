package broker

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const tokenSecret = "token-secret"

// tokenProps are saslProps with delegation tokens on.
func tokenProps(dir string) map[string]string {
	props := saslProps(dir)
	props["delegation.token.secret.key"] = tokenSecret
	return props
}

// scramUsers creates SCRAM-SHA-256 users, each with the password
// name+"-secret", as the PLAIN admin.
func scramUsers(t *testing.T, addr string, names ...string) {
	t.Helper()
	admin := kadm.NewClient(saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	var ups []kadm.UpsertSCRAM
	for _, n := range names {
		ups = append(ups, kadm.UpsertSCRAM{User: n, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: n + "-secret"})
	}
	res, err := admin.AlterUserSCRAMs(ctxT(t), nil, ups)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("creating SCRAM user %s: %v", r.User, r.Err)
		}
	}
}

func scramClient(t *testing.T, addr, user string) *kgo.Client {
	return saslClient(t, addr, scram.Auth{User: user, Pass: user + "-secret"}.AsSha256Mechanism())
}

func tokenClient(t *testing.T, addr string, tok *kmsg.CreateDelegationTokenResponse, opts ...kgo.Opt) *kgo.Client {
	auth := scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}
	return saslClient(t, addr, auth.AsSha512Mechanism(), opts...)
}

func createToken(t *testing.T, cl *kgo.Client, renewers ...string) *kmsg.CreateDelegationTokenResponse {
	t.Helper()
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.MaxLifetimeMillis = -1
	for _, r := range renewers {
		req.Renewers = append(req.Renewers, kmsg.CreateDelegationTokenRequestRenewer{PrincipalType: "User", PrincipalName: r})
	}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func describeTokens(t *testing.T, cl *kgo.Client, owners ...string) *kmsg.DescribeDelegationTokenResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeDelegationTokenRequest()
	for _, o := range owners {
		req.Owners = append(req.Owners, kmsg.DescribeDelegationTokenRequestOwner{PrincipalType: "User", PrincipalName: o})
	}
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func tokenIDs(resp *kmsg.DescribeDelegationTokenResponse) []string {
	var ids []string
	for _, d := range resp.TokenDetails {
		ids = append(ids, d.TokenID)
	}
	return ids
}

func renewToken(t *testing.T, cl *kgo.Client, mac []byte, period int64) *kmsg.RenewDelegationTokenResponse {
	t.Helper()
	req := kmsg.NewPtrRenewDelegationTokenRequest()
	req.HMAC, req.RenewTimeMillis = mac, period
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func expireToken(t *testing.T, cl *kgo.Client, mac []byte, period int64) *kmsg.ExpireDelegationTokenResponse {
	t.Helper()
	req := kmsg.NewPtrExpireDelegationTokenRequest()
	req.HMAC, req.ExpiryPeriodMillis = mac, period
	resp, err := req.RequestWith(ctxT(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// loginWorks reports whether a client logging in with the token can list
// the cluster's metadata.
func loginWorks(t *testing.T, addr string, tok *kmsg.CreateDelegationTokenResponse) bool {
	cl := tokenClient(t, addr, tok, kgo.RetryTimeout(time.Second))
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t), cl)
	return err == nil
}

// TestDelegationTokens: a SCRAM user creates a token; the token logs in
// as its owner (HMAC-SHA512 of the id under the secret is its password)
// and produces and consumes, but may not manage tokens; describe shows
// the token to its owner and renewer only; renew by a stranger is refused
// and by the renewer moves the expiry; the token survives a restart;
// expire removes it and it logs in no more.
func TestDelegationTokens(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, tokenProps(dir))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	scramUsers(t, addr, "alice", "bob", "carol")
	alice, bob, carol := scramClient(t, addr, "alice"), scramClient(t, addr, "bob"), scramClient(t, addr, "carol")

	before := time.Now().UnixMilli()
	tok := createToken(t, alice, "bob")
	if tok.ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(tok.ErrorCode))
	}
	mac := hmac.New(sha512.New, []byte(tokenSecret))
	mac.Write([]byte(tok.TokenID))
	if !hmac.Equal(tok.HMAC, mac.Sum(nil)) {
		t.Fatalf("HMAC is not HMAC-SHA512 of the token id under the secret")
	}
	if tok.PrincipalName != "alice" || tok.PrincipalType != "User" || tok.TokenRequesterPrincipalName != "alice" ||
		tok.IssueTimestamp < before || tok.ExpiryTimestamp != tok.IssueTimestamp+86400000 || tok.MaxTimestamp != tok.IssueTimestamp+604800000 {
		t.Fatalf("create answered %+v", tok)
	}

	// The token logs in as alice and uses the cluster.
	if err := roundTrip(t, tokenClient(t, addr, tok), "token-topic", 5); err != nil {
		t.Fatalf("round trip with the token: %v", err)
	}
	// A token's connection, a PLAINTEXT one, may not manage tokens.
	plainConn, err := kgo.NewClient(kgo.SeedBrokers(listenerAddr(t, b, "PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer plainConn.Close()
	for name, cl := range map[string]*kgo.Client{"token": tokenClient(t, addr, tok), "PLAINTEXT": plainConn} {
		if got := createToken(t, cl).ErrorCode; got != kerr.DelegationTokenRequestNotAllowed.Code {
			t.Errorf("%s connection: create answered %v", name, kerr.ErrorForCode(got))
		}
		if got := describeTokens(t, cl).ErrorCode; got != kerr.DelegationTokenRequestNotAllowed.Code {
			t.Errorf("%s connection: describe answered %v", name, kerr.ErrorForCode(got))
		}
	}

	// Describe: without an authorizer everyone may describe every token,
	// as in Kafka (TestDelegationTokenACLs has the rules with one).
	for name, want := range map[string][]string{"alice": {tok.TokenID}, "bob": {tok.TokenID}, "carol": {tok.TokenID}} {
		cl := map[string]*kgo.Client{"alice": alice, "bob": bob, "carol": carol}[name]
		if got := tokenIDs(describeTokens(t, cl)); !slices.Equal(got, want) {
			t.Errorf("%s describes %v, want %v", name, got, want)
		}
	}
	d := describeTokens(t, alice).TokenDetails[0]
	if d.PrincipalName != "alice" || len(d.Renewers) != 1 || d.Renewers[0].PrincipalName != "bob" || !hmac.Equal(d.HMAC, tok.HMAC) ||
		d.ExpiryTimestamp != tok.ExpiryTimestamp {
		t.Fatalf("describe: %+v", d)
	}
	if got := tokenIDs(describeTokens(t, alice, "carol")); got != nil {
		t.Errorf("owners [carol] lists %v", got)
	}
	if got := tokenIDs(describeTokens(t, alice, "bob")); !slices.Equal(got, []string{tok.TokenID}) {
		t.Errorf("owners [bob] (the renewer) lists %v", got)
	}

	// Renew: carol may not; bob may, never past the maximum.
	if got := renewToken(t, carol, tok.HMAC, 1000).ErrorCode; got != kerr.DelegationTokenOwnerMismatch.Code {
		t.Fatalf("carol's renew answered %v", kerr.ErrorForCode(got))
	}
	if got := renewToken(t, bob, []byte("not a token"), 1000).ErrorCode; got != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renew of an unknown HMAC answered %v", kerr.ErrorForCode(got))
	}
	now := time.Now().UnixMilli()
	renewed := renewToken(t, bob, tok.HMAC, 3600000)
	if renewed.ErrorCode != 0 || renewed.ExpiryTimestamp < now+3600000 || renewed.ExpiryTimestamp > time.Now().UnixMilli()+3600000 {
		t.Fatalf("bob's renew answered %+v", renewed)
	}

	// A restart keeps the token, renewed.
	b.Close()
	b = startBroker(t, tokenProps(dir))
	addr = listenerAddr(t, b, "SASL_PLAINTEXT")
	alice = scramClient(t, addr, "alice")
	if got := describeTokens(t, alice).TokenDetails; len(got) != 1 || got[0].ExpiryTimestamp != renewed.ExpiryTimestamp {
		t.Fatalf("after a restart: %+v", got)
	}
	if !loginWorks(t, addr, tok) {
		t.Fatal("the token does not log in after a restart")
	}

	// Expire now: the token is gone and logs in no more.
	now = time.Now().UnixMilli()
	if got := expireToken(t, alice, tok.HMAC, -1); got.ErrorCode != 0 || got.ExpiryTimestamp < now || got.ExpiryTimestamp > time.Now().UnixMilli() {
		t.Fatalf("expire: %v, expiry %d", kerr.ErrorForCode(got.ErrorCode), got.ExpiryTimestamp)
	}
	if got := tokenIDs(describeTokens(t, alice)); got != nil {
		t.Fatalf("after expire: %v", got)
	}
	if loginWorks(t, addr, tok) {
		t.Fatal("an expired token logged in")
	}
}

// TestDelegationTokenExpiry: a token whose expiry passes logs in no more,
// cannot be renewed, and is removed at the next expiry check.
func TestDelegationTokenExpiry(t *testing.T) {
	props := tokenProps(t.TempDir())
	props["delegation.token.expiry.check.interval.ms"] = "200"
	b := startBroker(t, props)
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	scramUsers(t, addr, "alice")
	alice := scramClient(t, addr, "alice")
	tok := createToken(t, alice)
	if got := expireToken(t, alice, tok.HMAC, 500); got.ErrorCode != 0 || got.ExpiryTimestamp > time.Now().UnixMilli()+500 {
		t.Fatalf("expire in 500 ms: %+v", got)
	}
	if !loginWorks(t, addr, tok) {
		t.Fatal("the token does not log in before its expiry")
	}
	time.Sleep(600 * time.Millisecond)
	if loginWorks(t, addr, tok) {
		t.Fatal("the token logged in after its expiry")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(describeTokens(t, alice).TokenDetails) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the expired token was not removed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := renewToken(t, alice, tok.HMAC, 1000).ErrorCode; got != kerr.DelegationTokenNotFound.Code {
		t.Fatalf("renewing a removed token answered %v", kerr.ErrorForCode(got))
	}
}

// TestDelegationTokensDisabled: without delegation.token.secret.key token
// requests get DELEGATION_TOKEN_AUTH_DISABLED.
func TestDelegationTokensDisabled(t *testing.T) {
	b := startBroker(t, saslProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	scramUsers(t, addr, "alice")
	alice := scramClient(t, addr, "alice")
	if got := createToken(t, alice).ErrorCode; got != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("create answered %v", kerr.ErrorForCode(got))
	}
	if got := describeTokens(t, alice).ErrorCode; got != kerr.DelegationTokenAuthDisabled.Code {
		t.Fatalf("describe answered %v", kerr.ErrorForCode(got))
	}
}

// TestDelegationTokenACLs: creating a token for another user needs
// CREATE_TOKENS on that user; a token is described to its owner, its
// requester and its renewers, and to others with DESCRIBE_TOKENS on its
// owner or DESCRIBE on the token.
func TestDelegationTokenACLs(t *testing.T) {
	props := tokenProps(t.TempDir())
	props["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	props["super.users"] = "User:admin"
	b := startBroker(t, props)
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	scramUsers(t, addr, "alice", "bob", "carol", "dave")
	alice, carol, dave := scramClient(t, addr, "alice"), scramClient(t, addr, "carol"), scramClient(t, addr, "dave")
	adminCl := saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())

	forBob := func() *kmsg.CreateDelegationTokenResponse {
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.OwnerPrincipalType, req.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr("bob")
		req.MaxLifetimeMillis = -1
		resp, err := req.RequestWith(ctxT(t), alice)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	grant := func(principal string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) {
		t.Helper()
		req := kmsg.NewPtrCreateACLsRequest()
		req.Creations = append(req.Creations, kmsg.CreateACLsRequestCreation{ResourceType: rt, ResourceName: name,
			ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: principal, Host: "*", Operation: op,
			PermissionType: kmsg.ACLPermissionTypeAllow})
		resp, err := req.RequestWith(ctxT(t), adminCl)
		if err != nil || resp.Results[0].ErrorCode != 0 {
			t.Fatalf("creating an ACL: %v %+v", err, resp)
		}
	}
	// An ACL on bob, so that bob is no longer "no ACL found".
	grant("User:nobody", kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, "User:bob")
	if got := forBob(); got.ErrorCode != kerr.DelegationTokenAuthorizationFailed.Code || got.PrincipalName != "bob" || got.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("alice creating for bob without CREATE_TOKENS: %+v", got)
	}
	grant("User:alice", kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, "User:bob")
	tok := forBob()
	if tok.ErrorCode != 0 || tok.PrincipalName != "bob" || tok.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("alice creating for bob with CREATE_TOKENS: %+v", tok)
	}
	// The token logs in as bob: bob's own describe lists it (as its
	// owner), and so does alice's (as its requester).
	if got := tokenIDs(describeTokens(t, scramClient(t, addr, "bob"))); !slices.Equal(got, []string{tok.TokenID}) {
		t.Fatalf("bob describes %v", got)
	}
	// and the token's connection is bob's: it sees the topic only bob
	// may describe, which alice may not.
	if _, err := kadm.NewClient(adminCl).CreateTopic(ctxT(t), 1, 1, nil, "bobs"); err != nil {
		t.Fatal(err)
	}
	grant("User:bob", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, "bobs")
	for who, cl := range map[string]*kgo.Client{"bob's token": tokenClient(t, addr, tok), "alice": alice} {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("bobs")}}
		resp, err := req.RequestWith(ctxT(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[string]int16{"bob's token": 0, "alice": kerr.TopicAuthorizationFailed.Code}[who]; resp.Topics[0].ErrorCode != want {
			t.Fatalf("%s: metadata of bobs answered %v", who, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
		}
	}
	if got := describeTokens(t, alice).TokenDetails; len(got) != 1 || got[0].TokenRequesterPrincipalName != "alice" {
		t.Fatalf("alice (the requester) describes %+v", got)
	}

	// carol sees it through DESCRIBE_TOKENS on bob, dave through DESCRIBE
	// on the token; each sees nothing before.
	for _, cl := range []*kgo.Client{carol, dave} {
		if got := tokenIDs(describeTokens(t, cl)); got != nil {
			t.Fatalf("describes %v before any ACL", got)
		}
	}
	grant("User:carol", kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, "User:bob")
	grant("User:dave", kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeDelegationToken, tok.TokenID)
	for name, cl := range map[string]*kgo.Client{"carol": carol, "dave": dave} {
		if got := tokenIDs(describeTokens(t, cl)); !slices.Equal(got, []string{tok.TokenID}) {
			t.Errorf("%s describes %v after the ACL", name, got)
		}
	}
}

// TestClusterDelegationTokens: in a cluster a token created through one
// broker (forwarded to the controller in an Envelope naming the
// requester) logs in on every broker; renewed and expired through
// others, every broker sees the change; a token's own connection may not
// create tokens, which the controller checks too; the tokens survive a
// controller change.
func TestClusterDelegationTokens(t *testing.T) {
	c := clusterProps(t, 3, 0, map[string]string{
		"sasl.enabled.mechanisms":                                     "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config":         plainJAAS,
		"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required;`,
		"delegation.token.secret.key":                                 tokenSecret,
	})
	for _, p := range c.props {
		p["listeners"] += ",SASL_PLAINTEXT://127.0.0.1:0"
	}
	c.startAll()
	addr := func(i int) string { return listenerAddr(t, c.nodes[i], "SASL_PLAINTEXT") }
	scramUsers(t, addr(0), "alice", "bob")
	for _, b := range c.nodes {
		c.waitFor("the users on every broker", func() bool { return len(b.scramCredentials()) == 2 })
	}
	tok := createToken(t, scramClient(t, addr(1), "alice"), "bob")
	if tok.ErrorCode != 0 || tok.PrincipalName != "alice" || tok.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("create through broker 2: %+v", tok)
	}
	for i := range c.nodes {
		c.waitFor("the token on every broker", func() bool { return c.nodes[i].tokens()[tok.TokenID].ID == tok.TokenID })
		if !loginWorks(t, addr(i), tok) {
			t.Fatalf("the token does not log in on broker %d", i+1)
		}
	}
	if got := createToken(t, tokenClient(t, addr(2), tok)).ErrorCode; got != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("create over a token's connection answered %v", kerr.ErrorForCode(got))
	}
	// The controller refuses a token-authenticated principal on its own.
	env := controller.Envelope(kmsg.NewPtrCreateDelegationTokenRequest(),
		controller.Principal{Type: "User", Name: "alice", TokenAuthenticated: true}, "test", []byte{127, 0, 0, 1})
	resp, err := c.nodes[0].cluster.client.Send(ctxT(t), env)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := controller.Unwrapped(kmsg.NewPtrCreateDelegationTokenRequest(), resp.(*kmsg.EnvelopeResponse))
	if err != nil || inner.(*kmsg.CreateDelegationTokenResponse).ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
		t.Fatalf("controller answered a token principal's create with %+v, %v", inner, err)
	}

	renewed := renewToken(t, scramClient(t, addr(2), "bob"), tok.HMAC, 60000)
	if renewed.ErrorCode != 0 {
		t.Fatalf("renew through broker 3: %v", kerr.ErrorForCode(renewed.ErrorCode))
	}
	c.waitFor("the renewed expiry on broker 1", func() bool {
		return c.nodes[0].tokens()[tok.TokenID].ExpiryMs == renewed.ExpiryTimestamp
	})

	// Stop the active controller: the token stays, and expires through
	// the new one.
	active := -1
	for i, b := range c.nodes {
		if b.cluster.ctl.Active() {
			active = i
		}
	}
	c.stop(active)
	other := (active + 1) % 3
	if got := expireToken(t, scramClient(t, addr(other), "alice"), tok.HMAC, -1); got.ErrorCode != 0 {
		t.Fatalf("expire after the controller moved: %v", kerr.ErrorForCode(got.ErrorCode))
	}
	for i, b := range c.nodes {
		if i == active {
			continue
		}
		c.waitFor("the token gone", func() bool { _, ok := b.tokens()[tok.TokenID]; return !ok })
		if loginWorks(t, addr(i), tok) {
			t.Fatalf("the expired token logs in on broker %d", i+1)
		}
	}
}

// TestCreateDelegationTokenRefusals: the broker refuses a create that is
// not allowed or names a renewer that is not a user before it looks at
// the secret key, answering the principals with timestamps of -1 and no
// token, as Kafka's KafkaApis (CreateDelegationTokenResponse.prepareResponse).
func TestCreateDelegationTokenRefusals(t *testing.T) {
	b := startBroker(t, saslProps(t.TempDir()))
	addr := listenerAddr(t, b, "SASL_PLAINTEXT")
	admin := saslClient(t, addr, plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	plaintext, err := kgo.NewClient(kgo.SeedBrokers(listenerAddr(t, b, "PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plaintext.Close)
	for name, c := range map[string]struct {
		cl      *kgo.Client
		renewer string
		want    int16
	}{
		"group renewer": {admin, "Group", kerr.InvalidPrincipalType.Code},
		"plaintext":     {plaintext, "User", kerr.DelegationTokenRequestNotAllowed.Code},
	} {
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.Renewers = []kmsg.CreateDelegationTokenRequestRenewer{{PrincipalType: c.renewer, PrincipalName: "x"}}
		resp, err := req.RequestWith(ctxT(t), c.cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != c.want || resp.IssueTimestamp != -1 || resp.ExpiryTimestamp != -1 || resp.MaxTimestamp != -1 ||
			resp.TokenID != "" || len(resp.HMAC) != 0 || resp.PrincipalType != "User" || resp.PrincipalName == "" {
			t.Errorf("%s: %v %+v", name, kerr.ErrorForCode(resp.ErrorCode), resp)
		}
	}
}
