package delegation

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var cfg = Config{SecretKey: "secret", MaxLifetimeMs: 10_000, ExpiryTimeMs: 1_000}

func create(t *testing.T, now int64, requester string, maxLifetime int64, renewers ...string) Token {
	t.Helper()
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.MaxLifetimeMillis = maxLifetime
	for _, r := range renewers {
		req.Renewers = append(req.Renewers, kmsg.CreateDelegationTokenRequestRenewer{PrincipalType: "User", PrincipalName: r})
	}
	resp, ch := Create(cfg, now, requester, req)
	if resp.ErrorCode != 0 || ch == nil || ch.Set == nil {
		t.Fatalf("create: %+v", resp)
	}
	return *ch.Set
}

// TestLifetimes: a token lasts delegation.token.expiry.time.ms, at most
// its maximum lifetime (the broker's, or a shorter one asked for); renew
// moves the expiry by the period asked for, at most the default period and
// never past the maximum.
func TestLifetimes(t *testing.T) {
	tok := create(t, 100, "User:alice", -1)
	if tok.IssueMs != 100 || tok.ExpiryMs != 1_100 || tok.MaxMs != 10_100 {
		t.Fatalf("default lifetimes: %+v", tok)
	}
	if short := create(t, 100, "User:alice", 500); short.ExpiryMs != 600 || short.MaxMs != 600 {
		t.Fatalf("max lifetime 500: %+v", short)
	}
	if long := create(t, 100, "User:alice", 1_000_000); long.MaxMs != 10_100 {
		t.Fatalf("max lifetime above the broker's: %+v", long)
	}
	tokens := Applied(nil, Change{Set: &tok})
	for _, c := range []struct {
		now, period, want int64
	}{
		{now: 500, period: 300, want: 800},        // the period asked for
		{now: 500, period: 5_000, want: 1_500},    // at most the default period
		{now: 500, period: -1, want: 1_500},       // the default period
		{now: 9_800, period: 1_000, want: 10_100}, // never past the maximum
	} {
		tokens[tok.ID] = Token{ID: tok.ID, Owner: tok.Owner, HMAC: tok.HMAC, ExpiryMs: c.now + 1, MaxMs: tok.MaxMs}
		resp, ch := Renew(cfg, tokens, c.now, "User:alice", &kmsg.RenewDelegationTokenRequest{HMAC: tok.HMAC, RenewTimeMillis: c.period})
		if resp.ErrorCode != 0 || resp.ExpiryTimestamp != c.want || ch.Set.ExpiryMs != c.want {
			t.Errorf("renew at %d by %d: %+v", c.now, c.period, resp)
		}
	}
}

// TestRenewAndExpireChecks: Kafka's order of refusals, and expire's two
// forms.
func TestRenewAndExpireChecks(t *testing.T) {
	tok := create(t, 0, "User:alice", -1, "bob")
	tokens := Applied(nil, Change{Set: &tok})
	renew := func(c Config, now int64, who string, mac []byte) int16 {
		resp, _ := Renew(c, tokens, now, who, &kmsg.RenewDelegationTokenRequest{HMAC: mac, RenewTimeMillis: 10})
		return resp.ErrorCode
	}
	for name, c := range map[string]struct {
		got, want int16
	}{
		"disabled":      {renew(Config{}, 0, "User:alice", tok.HMAC), kerr.DelegationTokenAuthDisabled.Code},
		"unknown HMAC":  {renew(cfg, 0, "User:alice", []byte("x")), kerr.DelegationTokenNotFound.Code},
		"expired":       {renew(cfg, 1_001, "User:carol", tok.HMAC), kerr.DelegationTokenExpired.Code},
		"not a renewer": {renew(cfg, 0, "User:carol", tok.HMAC), kerr.DelegationTokenOwnerMismatch.Code},
		"renewer":       {renew(cfg, 0, "User:bob", tok.HMAC), 0},
		"owner":         {renew(cfg, 0, "User:alice", tok.HMAC), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", name, kerr.ErrorForCode(c.got), kerr.ErrorForCode(c.want))
		}
	}
	resp, ch := Expire(cfg, tokens, 50, "User:bob", &kmsg.ExpireDelegationTokenRequest{HMAC: tok.HMAC, ExpiryPeriodMillis: -1})
	if resp.ErrorCode != 0 || resp.ExpiryTimestamp != 50 || ch.Remove != tok.ID {
		t.Fatalf("expire now: %+v %+v", resp, ch)
	}
	resp, ch = Expire(cfg, tokens, 50, "User:alice", &kmsg.ExpireDelegationTokenRequest{HMAC: tok.HMAC, ExpiryPeriodMillis: 20})
	if resp.ErrorCode != 0 || resp.ExpiryTimestamp != 70 || ch.Set.ExpiryMs != 70 {
		t.Fatalf("expire in 20: %+v %+v", resp, ch)
	}
	if tokens[tok.ID].ExpiryMs != 1_000 {
		t.Fatal("Expire changed the tokens it was given")
	}
}

// TestLogins: a token logs in as its owner with the credentials derived
// from the base64 of its HMAC, until it expires; Expired lists it then.
func TestLogins(t *testing.T) {
	tok := create(t, 0, "User:alice", -1)
	tokens := Applied(nil, Change{Set: &tok})
	login, ok := LoginFor(tokens, tok.ID, sasl.Sha512, time.UnixMilli(1_000))
	if !ok || login.Owner != "alice" || login.Expiry.UnixMilli() != 1_000 || login.Credential.Iterations != Iterations {
		t.Fatalf("login at the expiry: %+v %v", login, ok)
	}
	if _, ok := LoginFor(tokens, tok.ID, sasl.Sha256, time.UnixMilli(1_001)); ok {
		t.Fatal("login after the expiry")
	}
	if _, ok := LoginFor(tokens, "other", sasl.Sha256, time.UnixMilli(0)); ok {
		t.Fatal("login with an unknown token")
	}
	if got := Expired(tokens, 1_000); len(got) != 0 {
		t.Fatalf("expired at its expiry: %v", got)
	}
	if got := Expired(tokens, 1_001); len(got) != 1 || got[0].Remove != tok.ID {
		t.Fatalf("expired after: %v", got)
	}
}

// TestDescribe: the owners filter matches owners and renewers; a token is
// described to its owner, requester and renewers, and to others only by
// ACL.
func TestDescribe(t *testing.T) {
	a := create(t, 0, "User:alice", -1, "bob")
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.OwnerPrincipalName = kmsg.StringPtr("dave")
	_, ch := Create(cfg, 0, "User:carol", req)
	d := *ch.Set
	tokens := Applied(nil, Change{Set: &a}, Change{Set: &d})
	none := func(string) bool { return false }
	ids := func(ts []Token) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	for name, c := range map[string]struct {
		requester string
		owners    []string
		token     func(string) bool
		owner     func(string) bool
		want      []string
	}{
		"owner":               {"User:alice", nil, none, none, []string{a.ID}},
		"renewer":             {"User:bob", nil, none, none, []string{a.ID}},
		"requester":           {"User:carol", nil, none, none, []string{d.ID}},
		"stranger":            {"User:eve", nil, none, none, nil},
		"DESCRIBE on a token": {"User:eve", nil, func(id string) bool { return id == d.ID }, none, []string{d.ID}},
		"DESCRIBE_TOKENS":     {"User:eve", nil, none, func(o string) bool { return o == "User:alice" }, []string{a.ID}},
		"owners: the renewer": {"User:alice", []string{"User:bob"}, none, none, []string{a.ID}},
		"owners: others":      {"User:alice", []string{"User:dave"}, none, none, nil},
		"owners, all allowed": {"User:eve", []string{"User:dave", "User:alice"}, func(string) bool { return true }, none, sorted(a.ID, d.ID)},
	} {
		if got := ids(Describe(tokens, c.requester, c.owners, c.token, c.owner)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// TestExpireOrderOfChecks: expire checks the owner before the expiry, and
// an expiry of now removes even an expired token, as Kafka's
// DelegationTokenControlManager.
func TestExpireOrderOfChecks(t *testing.T) {
	tok := create(t, 0, "User:alice", -1)
	tokens := Applied(nil, Change{Set: &tok})
	expire := func(who string, period int64) (*kmsg.ExpireDelegationTokenResponse, *Change) {
		return Expire(cfg, tokens, 5_000, who, &kmsg.ExpireDelegationTokenRequest{HMAC: tok.HMAC, ExpiryPeriodMillis: period})
	}
	if resp, ch := expire("User:carol", -1); resp.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code || ch != nil {
		t.Errorf("an expired token's stranger: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp)
	}
	if resp, ch := expire("User:alice", 10); resp.ErrorCode != kerr.DelegationTokenExpired.Code || ch != nil {
		t.Errorf("expiring an expired token later: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp)
	}
	if resp, ch := expire("User:alice", -1); resp.ErrorCode != 0 || resp.ExpiryTimestamp != 5_000 || ch == nil || ch.Remove != tok.ID {
		t.Errorf("expiring an expired token now: %v %+v", kerr.ErrorForCode(resp.ErrorCode), ch)
	}
}

// TestLifetimesSaturate: a lifetime or period that would overflow ends at
// the largest timestamp, as Kafka's DelegationTokenControlManager sums.
func TestLifetimesSaturate(t *testing.T) {
	huge := Config{SecretKey: "secret", MaxLifetimeMs: math.MaxInt64, ExpiryTimeMs: math.MaxInt64}
	resp, ch := Create(huge, 100, "User:alice", kmsg.NewPtrCreateDelegationTokenRequest())
	if resp.ErrorCode != 0 || resp.MaxTimestamp != math.MaxInt64 || resp.ExpiryTimestamp != math.MaxInt64 {
		t.Fatalf("create with the longest lifetimes: %+v", resp)
	}
	tok := create(t, 100, "User:alice", -1)
	tokens := Applied(nil, Change{Set: &tok}, *ch)
	er, _ := Expire(cfg, tokens, 200, "User:alice", &kmsg.ExpireDelegationTokenRequest{HMAC: tok.HMAC, ExpiryPeriodMillis: math.MaxInt64})
	if er.ErrorCode != 0 || er.ExpiryTimestamp != tok.MaxMs {
		t.Fatalf("expire in the longest period: %+v, want %d", er, tok.MaxMs)
	}
}

// TestRefusalTimestamps: renew and expire refused answer an expiry
// timestamp of 0, as the responses Kafka's DelegationTokenControlManager
// leaves unset.
func TestRefusalTimestamps(t *testing.T) {
	tok := create(t, 0, "User:alice", -1)
	tokens := Applied(nil, Change{Set: &tok})
	for name, mac := range map[string][]byte{"unknown": []byte("x"), "known": tok.HMAC} {
		rr, _ := Renew(cfg, tokens, 0, "User:carol", &kmsg.RenewDelegationTokenRequest{HMAC: mac})
		er, _ := Expire(cfg, tokens, 0, "User:carol", &kmsg.ExpireDelegationTokenRequest{HMAC: mac})
		if rr.ErrorCode == 0 || rr.ExpiryTimestamp != 0 || er.ErrorCode == 0 || er.ExpiryTimestamp != 0 {
			t.Errorf("%s token: renew %+v, expire %+v", name, rr, er)
		}
	}
}

// TestTokenIDs: token ids are Kafka Uuids' text, which never starts with
// '-' (Uuid.randomUuid draws again), so that tools do not take one for an
// option.
func TestTokenIDs(t *testing.T) {
	for range 2000 {
		if id := newTokenID(); len(id) != 22 || strings.HasPrefix(id, "-") {
			t.Fatalf("token id %q", id)
		}
	}
}
