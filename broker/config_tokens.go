package broker

import (
	"math"
	"time"
)

// tokenKeys are the delegation token keys (KIP-48), with Kafka's names,
// defaults and bounds (DelegationTokenManagerConfigs). The secret key must
// be the same on every node of a cluster; without one, tokens are off.
var tokenKeys = []configKey{
	{"delegation.token.secret.key", "PASSWORD", "", "Secret key to generate and verify delegation tokens; the same on every node. Without one, delegation tokens are disabled.", func(c *Config, v string) error {
		c.Tokens.SecretKey = v
		return nil
	}},
	{"delegation.token.max.lifetime.ms", "LONG", "604800000", "The longest a token lives; it cannot be renewed past it.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt64)
		c.Tokens.MaxLifetimeMs = n
		return err
	}},
	{"delegation.token.expiry.time.ms", "LONG", "86400000", "How long a token lasts when created or renewed, unless a shorter period is asked for.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt64)
		c.Tokens.ExpiryTimeMs = n
		return err
	}},
	{"delegation.token.expiry.check.interval.ms", "LONG", "3600000", "How often expired tokens are removed.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt64)
		c.TokenExpiryCheckInterval = time.Duration(n) * time.Millisecond
		return err
	}},
}

func init() {
	brokerKeys = append(brokerKeys, tokenKeys...)
	keyAliases["delegation.token.master.key"] = "delegation.token.secret.key"
}
