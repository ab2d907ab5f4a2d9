package controller

import (
	"context"
	"time"

	"github.com/gregor-broker/gregor/delegation"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Delegation tokens (KIP-48) in a cluster, as Kafka's
// DelegationTokenControlManager: brokers forward CreateDelegationToken,
// RenewDelegationToken and ExpireDelegationToken in an Envelope naming the
// requester; the active controller decides with package delegation and
// writes a DelegationToken record, which every broker applies to its
// image. It also removes expired tokens every TokenExpiryCheckInterval.

// envelope answers an enveloped delegation token request.
func (c *Controller) envelope(env *kmsg.EnvelopeRequest) kmsg.Response {
	req, correlationID, p, err := Unwrap(env)
	if err != nil {
		c.log.Warn("controller: bad envelope", "err", err)
		out := env.ResponseKind().(*kmsg.EnvelopeResponse)
		out.ErrorCode = kerr.InvalidRequest.Code
		return out
	}
	now := time.Now().UnixMilli()
	var resp kmsg.Response
	var change *delegation.Change
	switch r := req.(type) {
	case *kmsg.CreateDelegationTokenRequest:
		var cr *kmsg.CreateDelegationTokenResponse
		cr, change = delegation.Create(c.cfg.Tokens, now, p.String(), r)
		if p.TokenAuthenticated {
			cr.ErrorCode, change = kerr.DelegationTokenRequestNotAllowed.Code, nil
		}
		resp = cr
	case *kmsg.RenewDelegationTokenRequest:
		var rr *kmsg.RenewDelegationTokenResponse
		rr, change = delegation.Renew(c.cfg.Tokens, c.Image().DelegationTokens, now, p.String(), r)
		if p.TokenAuthenticated {
			rr.ErrorCode, rr.ExpiryTimestamp, change = kerr.DelegationTokenRequestNotAllowed.Code, -1, nil
		}
		resp = rr
	case *kmsg.ExpireDelegationTokenRequest:
		var er *kmsg.ExpireDelegationTokenResponse
		er, change = delegation.Expire(c.cfg.Tokens, c.Image().DelegationTokens, now, p.String(), r)
		if p.TokenAuthenticated {
			er.ErrorCode, er.ExpiryTimestamp, change = kerr.DelegationTokenRequestNotAllowed.Code, -1, nil
		}
		resp = er
	default:
		c.log.Warn("controller: enveloped request not forwarded by Gregor", "api", req.Key())
		out := env.ResponseKind().(*kmsg.EnvelopeResponse)
		out.ErrorCode = kerr.InvalidRequest.Code
		return out
	}
	if change != nil {
		if _, err := c.propose([]Record{{DelegationToken: change}}); err != nil {
			return c.proposeFailed(env, err)
		}
	}
	return Reply(env, correlationID, resp)
}

// removeExpiredTokens writes the removal of every expired token.
func (c *Controller) removeExpiredTokens(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active || ctx.Err() != nil {
		return
	}
	expired := delegation.Expired(c.Image().DelegationTokens, time.Now().UnixMilli())
	if len(expired) == 0 {
		return
	}
	recs := make([]Record, len(expired))
	for i := range expired {
		recs[i] = Record{DelegationToken: &expired[i]}
	}
	if _, err := c.propose(recs); err != nil {
		c.log.Warn("controller: removing expired delegation tokens", "err", err)
		return
	}
	c.log.Info("controller: removed expired delegation tokens", "count", len(expired))
}
