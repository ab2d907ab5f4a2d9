// Package delegation is Kafka's delegation tokens (KIP-48): short-lived
// credentials a user authenticated some other way creates for itself (or,
// with CREATE_TOKENS on the other user, for someone else) and hands to
// processes that then log in with SCRAM as the token's owner, without the
// owner's password.
//
// A token is its id (a random UUID, as Kafka's) and its HMAC: HMAC-SHA512
// of the id under delegation.token.secret.key, which every node shares.
// The HMAC is the token's password; the broker keeps, like a SCRAM user's,
// only the SCRAM-SHA-256 and SCRAM-SHA-512 credentials derived from it
// (4096 iterations), and the HMAC itself, by which RenewDelegationToken and
// ExpireDelegationToken name the token. A token expires at its expiry
// time, which its owner or a renewer may push forward (never past its
// maximum lifetime) or bring in; an expired token no longer logs in and is
// removed by the periodic expiry check.
//
// The functions here are the rules of Kafka's DelegationTokenControlManager
// and KafkaApis' describe filter, over a map of tokens by id: they answer
// the request and return the Change to store. A single node applies it to
// its metadata file; in a cluster the controller makes it a metadata
// record every broker applies. The checks that depend on the connection
// (token requests need a SASL login not made with a token; creating a
// token for another user needs CREATE_TOKENS on it) are the broker's.
package delegation

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Token is one delegation token. Principals are "Type:name" strings, as
// Kafka prints them.
type Token struct {
	ID        string
	Owner     string
	Requester string
	Renewers  []string `json:",omitempty"`
	IssueMs   int64
	ExpiryMs  int64
	MaxMs     int64
	HMAC      []byte
	// Credentials are the SCRAM credentials derived from the HMAC, by
	// mechanism name.
	Credentials map[string]sasl.Credential
}

// Config is the brokers' delegation.token.* settings.
type Config struct {
	// SecretKey signs tokens; without one, tokens are disabled.
	SecretKey string
	// MaxLifetimeMs bounds a token's life (delegation.token.max.lifetime.ms);
	// ExpiryTimeMs is how long a token lasts when created or renewed
	// without a shorter period (delegation.token.expiry.time.ms).
	MaxLifetimeMs, ExpiryTimeMs int64
}

// Enabled reports whether tokens can be created and used.
func (c Config) Enabled() bool { return c.SecretKey != "" }

// Change sets or removes one token.
type Change struct {
	Set    *Token `json:",omitempty"`
	Remove string `json:",omitempty"`
}

// Apply makes the change in tokens, which must not be nil.
func (c Change) Apply(tokens map[string]Token) {
	if c.Set != nil {
		tokens[c.Set.ID] = *c.Set
	} else {
		delete(tokens, c.Remove)
	}
}

// Applied returns a copy of tokens with the changes made; tokens itself is
// left alone, since readers may hold it.
func Applied(tokens map[string]Token, changes ...Change) map[string]Token {
	out := maps.Clone(tokens)
	if out == nil {
		out = map[string]Token{}
	}
	for _, c := range changes {
		c.Apply(out)
	}
	return out
}

// Iterations are those of the SCRAM credentials derived from a token's
// HMAC, the smallest Kafka allows, as Kafka uses.
const Iterations = sasl.MinIterations

// Create answers a CreateDelegationToken request from requester: a token
// owned by the request's owner (v3) or else the requester.
func Create(cfg Config, now int64, requester string, req *kmsg.CreateDelegationTokenRequest) (*kmsg.CreateDelegationTokenResponse, *Change) {
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	owner := Owner(req, requester)
	resp.PrincipalType, resp.PrincipalName = SplitPrincipal(owner)
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = SplitPrincipal(requester)
	if !cfg.Enabled() {
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	}
	var renewers []string
	for _, r := range req.Renewers {
		if r.PrincipalType != "User" {
			resp.ErrorCode = kerr.InvalidPrincipalType.Code
			return resp, nil
		}
		renewers = append(renewers, r.PrincipalType+":"+r.PrincipalName)
	}
	lifetime := cfg.MaxLifetimeMs
	if req.MaxLifetimeMillis > 0 {
		lifetime = min(lifetime, req.MaxLifetimeMillis)
	}
	t := Token{
		ID:        newTokenID(),
		Owner:     owner,
		Requester: requester,
		Renewers:  renewers,
		IssueMs:   now,
		MaxMs:     after(now, lifetime),
	}
	t.ExpiryMs = min(t.MaxMs, after(now, cfg.ExpiryTimeMs))
	t.HMAC = HMAC(cfg.SecretKey, t.ID)
	t.Credentials = credentials(t.HMAC)
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
	resp.TokenID, resp.HMAC = t.ID, t.HMAC
	return resp, &Change{Set: &t}
}

// Renew answers a RenewDelegationToken request: the token's owner or a
// renewer moves its expiry to now plus the period (at most
// delegation.token.expiry.time.ms, and never past the token's maximum).
func Renew(cfg Config, tokens map[string]Token, now int64, requester string, req *kmsg.RenewDelegationTokenRequest) (*kmsg.RenewDelegationTokenResponse, *Change) {
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	t, code := find(cfg, tokens, req.HMAC)
	switch {
	case code != 0:
	case t.expired(now):
		code = kerr.DelegationTokenExpired.Code
	case !t.mayRenew(requester):
		code = kerr.DelegationTokenOwnerMismatch.Code
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	period := cfg.ExpiryTimeMs
	if req.RenewTimeMillis > 0 {
		period = min(period, req.RenewTimeMillis)
	}
	t.ExpiryMs = min(t.MaxMs, now+period)
	resp.ExpiryTimestamp = t.ExpiryMs
	return resp, &Change{Set: &t}
}

// Expire answers an ExpireDelegationToken request: a negative period
// removes the token now (and answers now as its expiry), even one already
// expired; another sets its expiry to now plus the period (never past its
// maximum). Unlike renew, the requester is checked before the expiry, as
// in Kafka.
func Expire(cfg Config, tokens map[string]Token, now int64, requester string, req *kmsg.ExpireDelegationTokenRequest) (*kmsg.ExpireDelegationTokenResponse, *Change) {
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	t, code := find(cfg, tokens, req.HMAC)
	switch {
	case code != 0:
	case !t.mayRenew(requester):
		code = kerr.DelegationTokenOwnerMismatch.Code
	case req.ExpiryPeriodMillis < 0:
		resp.ExpiryTimestamp = now
		return resp, &Change{Remove: t.ID}
	case t.expired(now):
		code = kerr.DelegationTokenExpired.Code
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	t.ExpiryMs = min(t.MaxMs, after(now, req.ExpiryPeriodMillis))
	resp.ExpiryTimestamp = t.ExpiryMs
	return resp, &Change{Set: &t}
}

// newTokenID is a random id written as Kafka writes a Uuid (base64url,
// unpadded), drawn again when it would start with '-', as Kafka's
// Uuid.randomUuid does.
func newTokenID() string {
	for {
		var id [16]byte
		rand.Read(id[:])
		if s := base64.RawURLEncoding.EncodeToString(id[:]); s[0] != '-' {
			return s
		}
	}
}

// after is now plus a period, at most the largest timestamp, as Kafka
// sums a token's lifetimes.
func after(now, period int64) int64 {
	if now > math.MaxInt64-period {
		return math.MaxInt64
	}
	return now + period
}

// find returns a copy of the token with this HMAC, or why there is none.
func find(cfg Config, tokens map[string]Token, mac []byte) (Token, int16) {
	if !cfg.Enabled() {
		return Token{}, kerr.DelegationTokenAuthDisabled.Code
	}
	for _, t := range tokens {
		if hmac.Equal(t.HMAC, mac) {
			t.Renewers = slices.Clone(t.Renewers)
			return t, 0
		}
	}
	return Token{}, kerr.DelegationTokenNotFound.Code
}

// expired reports whether the token is past its expiry or maximum at now.
func (t Token) expired(now int64) bool { return t.MaxMs < now || t.ExpiryMs < now }

// mayRenew reports whether p may renew or expire the token: its owner or
// one of its renewers.
func (t Token) mayRenew(p string) bool { return t.Owner == p || slices.Contains(t.Renewers, p) }

// Describe lists, sorted by id, the tokens a DescribeDelegationToken
// request from requester gets: with owners (nil: any), those owned or
// renewable by one of them; of those, the ones the requester owns, asked
// for or may renew, or may describe by ACL (DESCRIBE on the token, or
// DESCRIBE_TOKENS on its owner).
func Describe(tokens map[string]Token, requester string, owners []string, mayDescribeToken func(id string) bool, mayDescribeOwner func(owner string) bool) []Token {
	var out []Token
	for _, t := range tokens {
		if owners != nil && !slices.ContainsFunc(owners, t.ownerOrRenewer) {
			continue
		}
		if t.ownerOrRenewer(requester) || mayDescribeToken(t.ID) || mayDescribeOwner(t.Owner) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b Token) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (t Token) ownerOrRenewer(p string) bool {
	return t.Owner == p || t.Requester == p || slices.Contains(t.Renewers, p)
}

// Expired returns the removal of every token past its expiry (or maximum)
// at now, sorted by id.
func Expired(tokens map[string]Token, now int64) []Change {
	var out []Change
	for id, t := range tokens {
		if t.ExpiryMs < now || t.MaxMs < now {
			out = append(out, Change{Remove: id})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Remove, b.Remove) })
	return out
}

// LoginFor finds a token's SCRAM login (the "tokenauth=true" extension,
// the token id as user name and the base64 HMAC as password) for a
// mechanism; an expired token has none.
func LoginFor(tokens map[string]Token, id string, m sasl.ScramMechanism, now time.Time) (sasl.TokenLogin, bool) {
	t, ok := tokens[id]
	if !ok || t.ExpiryMs < now.UnixMilli() || t.MaxMs < now.UnixMilli() {
		return sasl.TokenLogin{}, false
	}
	cred, ok := t.Credentials[m.String()]
	if !ok {
		return sasl.TokenLogin{}, false
	}
	_, name := SplitPrincipal(t.Owner)
	return sasl.TokenLogin{Owner: name, Expiry: time.UnixMilli(t.ExpiryMs), Credential: cred}, true
}

// HMAC is a token id's HMAC-SHA512 under the secret key.
func HMAC(secret, id string) []byte {
	mac := hmac.New(sha512.New, []byte(secret))
	mac.Write([]byte(id))
	return mac.Sum(nil)
}

// credentials derives the SCRAM credentials a token logs in with, its
// password being the base64 of its HMAC.
func credentials(mac []byte) map[string]sasl.Credential {
	password := base64.StdEncoding.EncodeToString(mac)
	out := map[string]sasl.Credential{}
	for _, m := range []sasl.ScramMechanism{sasl.Sha256, sasl.Sha512} {
		salt := make([]byte, 32)
		rand.Read(salt)
		out[m.String()] = sasl.NewCredential(m, salt, sasl.SaltedPassword(m, password, salt, Iterations), Iterations)
	}
	return out
}

// Sorted returns the tokens as a list sorted by id (for snapshots).
func Sorted(tokens map[string]Token) []Token {
	out := slices.Collect(maps.Values(tokens))
	slices.SortFunc(out, func(a, b Token) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Owner is whom a CreateDelegationToken request asks a token for: the
// owner it names (v3), or else the requester.
func Owner(req *kmsg.CreateDelegationTokenRequest, requester string) string {
	if req.OwnerPrincipalName == nil || *req.OwnerPrincipalName == "" {
		return requester
	}
	typ := "User"
	if req.OwnerPrincipalType != nil && *req.OwnerPrincipalType != "" {
		typ = *req.OwnerPrincipalType
	}
	return typ + ":" + *req.OwnerPrincipalName
}

// SplitPrincipal parses "Type:name".
func SplitPrincipal(p string) (typ, name string) {
	typ, name, ok := strings.Cut(p, ":")
	if !ok {
		return "User", p
	}
	return typ, name
}
