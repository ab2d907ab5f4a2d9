package broker

// CreateDelegationToken (38, v1-3), RenewDelegationToken (39, v1-2),
// ExpireDelegationToken (40, v1-2) and DescribeDelegationToken (41, v1-3):
// Kafka's delegation tokens (KIP-48; package delegation has the rules).
// Only a connection logged in with SASL (or a client certificate), and not
// with a token, may manage tokens, as in Kafka; creating a token for
// another user needs CREATE_TOKENS on that user. A single node keeps the
// tokens in its metadata file; in a cluster the broker forwards the
// create, renew and expire requests to the controller in an Envelope
// carrying the requester's principal, as Kafka does, and every broker
// reads the tokens from the metadata image. Tokens past their expiry stop
// logging in at once and are removed every
// delegation.token.expiry.check.interval.ms.

import (
	"slices"
	"time"

	"github.com/gregor-broker/gregor/delegation"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleCreateDelegationToken(b *Broker, c *conn, req *kmsg.CreateDelegationTokenRequest) (*kmsg.CreateDelegationTokenResponse, error) {
	requester := c.requesterPrincipal()
	refuse := int16(0)
	switch {
	case !c.mayManageTokens():
		refuse = kerr.DelegationTokenRequestNotAllowed.Code
	case !c.mayCreateTokenFor(req, requester):
		refuse = kerr.DelegationTokenAuthorizationFailed.Code
	case slices.ContainsFunc(req.Renewers, func(r kmsg.CreateDelegationTokenRequestRenewer) bool { return r.PrincipalType != "User" }):
		refuse = kerr.InvalidPrincipalType.Code
	}
	if refuse != 0 {
		// Answered with the principals, timestamps of -1 and no token, as
		// Kafka's KafkaApis answers before it forwards the request.
		resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
		resp.ErrorCode = refuse
		resp.PrincipalType, resp.PrincipalName = delegation.SplitPrincipal(delegation.Owner(req, requester))
		resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = delegation.SplitPrincipal(requester)
		resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = -1, -1, -1
		return resp, nil
	}
	if b.cluster != nil {
		return forwardTokenRequest[*kmsg.CreateDelegationTokenResponse](b, c, req)
	}
	var resp *kmsg.CreateDelegationTokenResponse
	err := b.changeTokens(func(tokens map[string]delegation.Token) *delegation.Change {
		var ch *delegation.Change
		resp, ch = delegation.Create(b.cfg.Tokens, time.Now().UnixMilli(), requester, req)
		return ch
	})
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
	}
	return resp, nil
}

func handleRenewDelegationToken(b *Broker, c *conn, req *kmsg.RenewDelegationTokenRequest) (*kmsg.RenewDelegationTokenResponse, error) {
	if !c.mayManageTokens() {
		resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
		return resp, nil
	}
	if b.cluster != nil {
		return forwardTokenRequest[*kmsg.RenewDelegationTokenResponse](b, c, req)
	}
	var resp *kmsg.RenewDelegationTokenResponse
	err := b.changeTokens(func(tokens map[string]delegation.Token) *delegation.Change {
		var ch *delegation.Change
		resp, ch = delegation.Renew(b.cfg.Tokens, tokens, time.Now().UnixMilli(), c.requesterPrincipal(), req)
		return ch
	})
	if err != nil {
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.UnknownServerError.Code, 0
	}
	return resp, nil
}

func handleExpireDelegationToken(b *Broker, c *conn, req *kmsg.ExpireDelegationTokenRequest) (*kmsg.ExpireDelegationTokenResponse, error) {
	if !c.mayManageTokens() {
		resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
		return resp, nil
	}
	if b.cluster != nil {
		return forwardTokenRequest[*kmsg.ExpireDelegationTokenResponse](b, c, req)
	}
	var resp *kmsg.ExpireDelegationTokenResponse
	err := b.changeTokens(func(tokens map[string]delegation.Token) *delegation.Change {
		var ch *delegation.Change
		resp, ch = delegation.Expire(b.cfg.Tokens, tokens, time.Now().UnixMilli(), c.requesterPrincipal(), req)
		return ch
	})
	if err != nil {
		resp.ErrorCode, resp.ExpiryTimestamp = kerr.UnknownServerError.Code, 0
	}
	return resp, nil
}

func handleDescribeDelegationToken(b *Broker, c *conn, req *kmsg.DescribeDelegationTokenRequest) (*kmsg.DescribeDelegationTokenResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	switch {
	case !c.mayManageTokens():
		resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
		return resp, nil
	case !b.cfg.Tokens.Enabled():
		resp.ErrorCode = kerr.DelegationTokenAuthDisabled.Code
		return resp, nil
	case req.Owners != nil && len(req.Owners) == 0:
		return resp, nil
	}
	var owners []string
	for _, o := range req.Owners {
		owners = append(owners, o.PrincipalType+":"+o.PrincipalName)
	}
	tokens := delegation.Describe(b.tokens(), c.requesterPrincipal(), owners,
		func(id string) bool {
			return c.authorized(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeDelegationToken, id)
		},
		func(owner string) bool {
			return c.authorized(kmsg.ACLOperationDescribeTokens, kmsg.ACLResourceTypeUser, owner)
		})
	for _, t := range tokens {
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = delegation.SplitPrincipal(t.Owner)
		d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = delegation.SplitPrincipal(t.Requester)
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueMs, t.ExpiryMs, t.MaxMs
		d.TokenID, d.HMAC = t.ID, t.HMAC
		for _, r := range t.Renewers {
			typ, name := delegation.SplitPrincipal(r)
			d.Renewers = append(d.Renewers, kmsg.DescribeDelegationTokenResponseTokenDetailRenewer{PrincipalType: typ, PrincipalName: name})
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}

// requesterPrincipal is the connection's principal as a token names it.
func (c *conn) requesterPrincipal() string { return "User:" + c.principal() }

// mayManageTokens is Kafka's allowTokenRequests: not on a PLAINTEXT
// listener, an SSL one without a client certificate, or a connection
// logged in with a token.
func (c *conn) mayManageTokens() bool {
	switch {
	case c.tokenAuthenticated:
		return false
	case c.listener.security.sasl():
		return true
	}
	return c.listener.security.Protocol == protocolSSL && c.user != ""
}

// mayCreateTokenFor reports whether the requester may create the token:
// for itself always, for another owner with CREATE_TOKENS on that user.
func (c *conn) mayCreateTokenFor(req *kmsg.CreateDelegationTokenRequest, requester string) bool {
	owner := delegation.Owner(req, requester)
	return owner == requester || c.authorized(kmsg.ACLOperationCreateTokens, kmsg.ACLResourceTypeUser, owner)
}

// tokens are the delegation tokens this node knows, by id; never changed
// in place.
func (b *Broker) tokens() map[string]delegation.Token {
	if b.cluster != nil {
		if img := b.cluster.image(); img != nil {
			return img.DelegationTokens
		}
		return nil
	}
	return b.meta.delegationTokens()
}

// tokenLogin finds a token's SCRAM login for package sasl.
func (b *Broker) tokenLogin(id string, m sasl.ScramMechanism) (sasl.TokenLogin, bool) {
	if !b.cfg.Tokens.Enabled() {
		return sasl.TokenLogin{}, false
	}
	return delegation.LoginFor(b.tokens(), id, m, time.Now())
}

// changeTokens stores the change fn decides on a single node's tokens, if
// any.
func (b *Broker) changeTokens(fn func(map[string]delegation.Token) *delegation.Change) error {
	return b.meta.update(func(d *metaData) {
		if ch := fn(d.DelegationTokens); ch != nil {
			d.DelegationTokens = delegation.Applied(d.DelegationTokens, *ch)
		}
	})
}

// removeExpiredTokens runs on a single node every
// delegation.token.expiry.check.interval.ms until the broker stops.
func (b *Broker) removeExpiredTokens() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.TokenExpiryCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stopTokens:
			return
		case <-t.C:
		}
		expired := delegation.Expired(b.tokens(), time.Now().UnixMilli())
		if len(expired) == 0 {
			continue
		}
		err := b.meta.update(func(d *metaData) {
			d.DelegationTokens = delegation.Applied(d.DelegationTokens, delegation.Expired(d.DelegationTokens, time.Now().UnixMilli())...)
		})
		if err != nil {
			b.logger.Warn("removing expired delegation tokens failed", "err", err)
		} else {
			b.logger.Info("removed expired delegation tokens", "count", len(expired))
		}
	}
}

// forwardTokenRequest sends a create, renew or expire request to the
// controller inside an Envelope naming the requester. A controller that
// cannot be reached leaves the client a retriable REQUEST_TIMED_OUT.
func forwardTokenRequest[Resp kmsg.Response](b *Broker, c *conn, req kmsg.Request) (Resp, error) {
	inner, err := b.cluster.forwardEnveloped(c, req)
	if resp, ok := inner.(Resp); ok && err == nil {
		return resp, nil
	}
	b.logger.Warn("forwarding a delegation token request to the controller failed", "api", kmsg.NameForKey(req.Key()), "err", err)
	resp := req.ResponseKind().(Resp)
	switch r := any(resp).(type) {
	case *kmsg.CreateDelegationTokenResponse:
		r.ErrorCode = kerr.RequestTimedOut.Code
	case *kmsg.RenewDelegationTokenResponse:
		r.ErrorCode = kerr.RequestTimedOut.Code
	case *kmsg.ExpireDelegationTokenResponse:
		r.ErrorCode = kerr.RequestTimedOut.Code
	}
	return resp, nil
}
