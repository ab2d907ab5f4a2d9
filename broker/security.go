package broker

// Listener security (Kafka's listener.security.protocol.map): each
// listener is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. TLS (tls.go)
// wraps the SSL ones. On a SASL listener a client authenticates with one of the listener's mechanisms (package
// sasl: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) before any other request
// than ApiVersions; sasl.go runs that exchange on the connection. PLAIN
// users come from the listener's JAAS config, as in Kafka:
//
//	listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
//	    username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
//
// and SCRAM credentials from AlterUserScramCredentials, stored like client
// quotas (metadata file, or controller records in a cluster). In a
// cluster, replicas fetch from their leader's listener of the same name
// and log in with sasl.mechanism.inter.broker.protocol and the username
// and password options of that mechanism's JAAS config (over TLS, with the
// listener's key and trust stores, when it is SSL or SASL_SSL).

import (
	"crypto/tls"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/coordinator/controller"
	"github.com/gregor-broker/gregor/sasl"
	"github.com/gregor-broker/gregor/sslprincipal"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ListenerSecurity is how one client listener authenticates.
type ListenerSecurity struct {
	Protocol   string            // PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
	Mechanisms []string          // the SASL mechanisms enabled on it
	PlainUsers map[string]string // PLAIN's users and passwords
	// OAuth validates OAUTHBEARER tokens (oauthbearer.go).
	OAuth *sasl.OAuthValidator
	// MaxReauth is connections.max.reauth.ms by mechanism (KIP-368).
	MaxReauth map[string]time.Duration
	// TLS is the server's TLS config on SSL and SASL_SSL listeners;
	// ClientTLS is how replicas dial a leader's listener of this name.
	TLS, ClientTLS *tls.Config
	// PrincipalRules map a client certificate's subject to its user on
	// an SSL listener (ssl.principal.mapping.rules).
	PrincipalRules *sslprincipal.Mapper
}

func (s ListenerSecurity) sasl() bool {
	return s.Protocol == protocolSaslPlaintext || s.Protocol == protocolSaslSSL
}

const (
	protocolPlaintext     = "PLAINTEXT"
	protocolSaslPlaintext = "SASL_PLAINTEXT"
	protocolSSL           = "SSL"
	protocolSaslSSL       = "SASL_SSL"
	listenerPrefix        = "listener.name."
)

var securityKeys = []configKey{
	{"listener.security.protocol.map", "STRING", "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
		"Map between listener names and security protocols, NAME:PROTOCOL,...", func(c *Config, v string) error {
			c.SecurityProtocols = map[string]string{}
			for _, item := range splitList(v) {
				name, protocol, ok := strings.Cut(item, ":")
				if !ok || name == "" {
					return fmt.Errorf("%q is not NAME:PROTOCOL", item)
				}
				protocol = strings.ToUpper(strings.TrimSpace(protocol))
				switch protocol {
				case protocolPlaintext, protocolSaslPlaintext, protocolSSL, protocolSaslSSL:
				default:
					return fmt.Errorf("unknown security protocol %s", protocol)
				}
				c.SecurityProtocols[strings.ToUpper(strings.TrimSpace(name))] = protocol
			}
			return nil
		}},
	{"sasl.enabled.mechanisms", "LIST", "GSSAPI", "The SASL mechanisms enabled on SASL listeners (Gregor: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER).", func(c *Config, v string) error {
		return nil // read per listener by saslListener
	}},
	{"inter.broker.listener.name", "STRING", "", "The listener brokers reach each other on (replica fetches, forwarded requests); without it, the listener named by security.inter.broker.protocol.", func(c *Config, v string) error {
		c.InterBrokerListener = strings.ToUpper(v)
		return nil
	}},
	{"security.inter.broker.protocol", "STRING", protocolPlaintext, "The security protocol brokers reach each other with: the listener of that name, unless inter.broker.listener.name is set.", func(c *Config, v string) error {
		switch v = strings.ToUpper(v); v {
		case protocolPlaintext, protocolSaslPlaintext, protocolSSL, protocolSaslSSL:
		default:
			return fmt.Errorf("unknown security protocol %s", v)
		}
		if !c.explicit["inter.broker.listener.name"] {
			c.InterBrokerListener = v
		}
		return nil
	}},
	{"sasl.mechanism.inter.broker.protocol", "STRING", "GSSAPI", "The SASL mechanism replicas log in to a SASL listener with.", func(c *Config, v string) error {
		c.SaslInterBrokerMechanism = v
		return nil
	}},
	{"sasl.mechanism.controller.protocol", "STRING", "GSSAPI", "The SASL mechanism nodes log in to a SASL controller listener with.", func(c *Config, v string) error {
		c.SaslControllerMechanism = v
		return nil
	}},
	{"connections.max.reauth.ms", "LONG", "0", "The longest an authenticated SASL session lasts before the client must re-authenticate on its connection; 0 (or less, as in Kafka) for no limit other than the credential's own expiry.", checked(func(v string) error {
		_, err := parseInt(v, math.MinInt64, math.MaxInt64)
		return err
	})},
	{"sasl.server.max.receive.size", "INT", "524288", "The largest request a client may send before it has authenticated.", func(c *Config, v string) error {
		n, err := parseInt(v, 1, math.MaxInt32)
		c.SaslMaxReceiveSize = int32(n)
		return err
	}},
	{"connection.failed.authentication.delay.ms", "INT", "100", "How long a failed authentication's answer is held before the connection is closed.", func(c *Config, v string) error {
		n, err := parseInt(v, 0, math.MaxInt32)
		c.FailedAuthenticationDelay = time.Duration(n) * time.Millisecond
		return err
	}},
}

func init() {
	brokerKeys = append(brokerKeys, securityKeys...)
}

// listenerKeys are the listener-prefixed keys Gregor reads, after
// "listener.name.<listener>.": the listener's mechanisms and each
// mechanism's JAAS config ("<mechanism in lower case>.sasl.jaas.config"),
// its TLS and OAUTHBEARER keys and its connection limits (connlimits.go).
func isListenerKey(key string) bool {
	rest, ok := strings.CutPrefix(key, listenerPrefix)
	if !ok {
		return false
	}
	_, setting, ok := strings.Cut(rest, ".")
	if !ok {
		return false
	}
	if setting == "sasl.enabled.mechanisms" || setting == "connections.max.reauth.ms" || isTLSKey(setting) || isListenerConnectionSetting(setting) {
		return true
	}
	if mech, ok := strings.CutSuffix(setting, ".connections.max.reauth.ms"); ok && sasl.Supported(strings.ToUpper(mech)) {
		return true
	}
	if isOAuthListenerKey(setting) {
		return true
	}
	mech, ok := strings.CutSuffix(setting, ".sasl.jaas.config")
	return ok && sasl.Supported(strings.ToUpper(mech))
}

// resolveSecurity works out every client listener's ListenerSecurity from
// the protocol map and the listener-prefixed keys, refusing what Gregor
// cannot serve rather than serving it unauthenticated.
func (c *Config) resolveSecurity() error {
	c.Security = map[string]ListenerSecurity{}
	for _, l := range c.Listeners {
		protocol, ok := c.SecurityProtocols[l.Name]
		isController := slices.Contains(c.ControllerListenerNames, l.Name)
		if !ok && isController && c.controllersDefaultToPlaintext() {
			protocol = protocolPlaintext
		} else if !ok {
			return fmt.Errorf("invalid value for config key listener.security.protocol.map: no security protocol defined for listener %s", l.Name)
		}
		if isController && protocol == protocolPlaintext {
			continue
		}
		sec := ListenerSecurity{Protocol: protocol}
		var err error
		if sec.sasl() {
			if err = c.saslListener(l.Name, &sec); err != nil {
				return err
			}
		}
		if protocol == protocolSSL || protocol == protocolSaslSSL {
			if sec.TLS, sec.ClientTLS, err = c.tlsListener(l.Name, true); err != nil {
				return err
			}
		}
		if protocol == protocolSSL {
			rules, _ := c.listenerValue(l.Name, "ssl.principal.mapping.rules")
			if sec.PrincipalRules, err = sslprincipal.ParseRules(rules); err != nil {
				return fmt.Errorf("invalid value for config key ssl.principal.mapping.rules: %v", err)
			}
		}
		c.Security[l.Name] = sec
	}
	return nil
}

// controllersDefaultToPlaintext reports whether a controller listener
// that listener.security.protocol.map does not name is PLAINTEXT: only
// when the map is the default one, as in Kafka's
// KafkaConfig.effectiveListenerSecurityProtocolMap (which, unlike Gregor,
// also wants the map to name it when a listener is called SSL, SASL_SSL
// or SASL_PLAINTEXT).
func (c *Config) controllersDefaultToPlaintext() bool {
	return !c.explicit["listener.security.protocol.map"]
}

// controllerProtocol is the security protocol of the controller listener,
// as listener.security.protocol.map gives it (PLAINTEXT when it does not).
func (c *Config) controllerProtocol() string {
	if len(c.ControllerListenerNames) == 0 {
		return protocolPlaintext
	}
	if p, ok := c.SecurityProtocols[c.ControllerListenerNames[0]]; ok {
		return p
	}
	return protocolPlaintext
}

// resolveControllerSecurity sets how this node dials the controller
// listener, as Kafka's nodes do, from that listener's keys whether or not
// the node serves it (a broker-only node does not): ControllerTLS from its
// ssl.* keys (a trust store alone will do unless the controllers require
// client certificates), ControllerSASL from sasl.mechanism.controller.protocol
// and that mechanism's JAAS config on it.
func (c *Config) resolveControllerSecurity() error {
	if !c.clustered() || len(c.ControllerListenerNames) == 0 {
		return nil
	}
	name, protocol := c.ControllerListenerNames[0], c.controllerProtocol()
	if _, mapped := c.SecurityProtocols[name]; !mapped && !c.controllersDefaultToPlaintext() {
		return fmt.Errorf("Controller listener with name %s defined in controller.listener.names not found in listener.security.protocol.map "+
			"(an explicit security mapping for each controller listener is required if listener.security.protocol.map is non-empty, "+
			"or if there are security protocols other than PLAINTEXT in use)", name)
	}
	sec, serves := c.Security[name]
	if protocol == protocolSSL || protocol == protocolSaslSSL {
		if serves {
			c.ControllerTLS = sec.ClientTLS
		} else if _, client, err := c.tlsListener(name, false); err != nil {
			return err
		} else {
			c.ControllerTLS = client
		}
	}
	if protocol != protocolSaslPlaintext && protocol != protocolSaslSSL {
		return nil
	}
	// A broker-only node checks the mechanism on its inter-broker listener,
	// which the controllers log in to (validateInterBrokerSecurity).
	if serves && !slices.Contains(sec.Mechanisms, c.SaslControllerMechanism) {
		return fmt.Errorf("invalid value for config key sasl.mechanism.controller.protocol: %s is not enabled on the controller listener %s (%s)",
			c.SaslControllerMechanism, name, strings.Join(sec.Mechanisms, ","))
	}
	var err error
	c.ControllerSASL, err = c.saslLogin(name, c.SaslControllerMechanism, "controllers")
	return err
}

// controllerSecurity is how raft and the controller client reach the
// controller listener.
func (c *Config) controllerSecurity() controller.Security {
	return controller.Security{TLS: c.ControllerTLS, SASL: c.ControllerSASL}
}

// liveControllerSecurity is controllerSecurity taking the TLS config from
// the live configuration at every connection, so that the controller
// listener's key and trust stores altered at runtime (tls_reload.go) serve
// the next raft stream and controller request, as they serve the
// listener's next handshake, and giving each connection the setup time of
// socket.connection.setup.timeout.ms, as the inter-broker connections
// have it.
func (b *Broker) liveControllerSecurity() controller.Security {
	sec := b.cfg.controllerSecurity()
	sec.Setup = b.cfg.connectionSetup()
	sec.LiveTLS = func() *tls.Config {
		if live := b.liveConfig(); live != nil {
			return live.ControllerTLS
		}
		return b.cfg.ControllerTLS
	}
	return sec
}

// saslLogin is how this node logs in, as a client, to its listener named
// listener with mechanism: with the username and password options of that
// mechanism's JAAS config there, or for OAUTHBEARER an unsecured token
// made from its options. who names the clients in the error when they are
// missing.
func (c *Config) saslLogin(listener, mechanism, who string) (fsasl.Mechanism, error) {
	jaasKey := listenerPrefix + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
	var opts map[string]string
	if text, ok := c.listenerProps[jaasKey]; ok {
		jaas, err := sasl.ParseJAAS(text)
		if err != nil {
			return nil, fmt.Errorf("invalid value for config key %s: %v", jaasKey, err)
		}
		opts = jaas.Options
	}
	if mechanism == sasl.OAuthBearer {
		if opts[unsecuredSubOption] == "" {
			return nil, fmt.Errorf("listener %s: %s log in with OAUTHBEARER, whose JAAS config (%s) needs the %s option (Gregor logs in with unsecured tokens only)",
				listener, who, jaasKey, unsecuredSubOption)
		}
		return unsecuredLogin(opts), nil
	}
	user, pass := opts["username"], opts["password"]
	if user == "" || pass == "" {
		return nil, fmt.Errorf("listener %s: %s log in with %s, whose JAAS config (%s) needs username and password options",
			listener, who, mechanism, jaasKey)
	}
	switch mechanism {
	case sasl.Plain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case sasl.ScramSHA512:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	default:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	}
}

func (c *Config) saslListener(name string, sec *ListenerSecurity) error {
	props := c.listenerProps
	prefix := listenerPrefix + strings.ToLower(name) + "."
	mechanisms, key := c.listenerValue(name, "sasl.enabled.mechanisms")
	sec.Mechanisms = splitList(mechanisms)
	if len(sec.Mechanisms) == 0 {
		return fmt.Errorf("invalid value for config key %s: listener %s is %s but enables no SASL mechanism", key, name, sec.Protocol)
	}
	sec.MaxReauth = map[string]time.Duration{}
	for _, m := range sec.Mechanisms {
		if !sasl.Supported(m) {
			return fmt.Errorf("invalid value for config key %s: SASL mechanism %s is not supported (Gregor serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER)", key, m)
		}
		reauth, reauthKey := c.mechanismValue(name, m, "connections.max.reauth.ms")
		ms, err := parseInt(reauth, math.MinInt64, math.MaxInt64)
		if reauth != "" && err != nil {
			return fmt.Errorf("invalid value for config key %s: %v", reauthKey, err)
		}
		sec.MaxReauth[m] = time.Duration(ms) * time.Millisecond
		jaasKey := prefix + strings.ToLower(m) + ".sasl.jaas.config"
		text, ok := props[jaasKey]
		if !ok {
			switch m {
			case sasl.Plain:
				return fmt.Errorf("listener %s enables PLAIN but %s, which names its users (user_<name>=\"<password>\"), is not set", name, jaasKey)
			case sasl.OAuthBearer:
				return fmt.Errorf("listener %s enables OAUTHBEARER but %s (%s required ...;) is not set", name, jaasKey, oauthLoginModule)
			}
			continue
		}
		jaas, err := sasl.ParseJAAS(text)
		if err != nil {
			return fmt.Errorf("invalid value for config key %s: %v", jaasKey, err)
		}
		module := "org.apache.kafka.common.security.scram.ScramLoginModule"
		switch m {
		case sasl.Plain:
			module = "org.apache.kafka.common.security.plain.PlainLoginModule"
			sec.PlainUsers = jaas.PlainUsers()
		case sasl.OAuthBearer:
			module = oauthLoginModule
			if sec.OAuth, err = c.oauthValidator(name, jaas); err != nil {
				return err
			}
		}
		if jaas.LoginModule != module {
			return fmt.Errorf("invalid value for config key %s: mechanism %s needs %s, not %s", jaasKey, m, module, jaas.LoginModule)
		}
	}
	return nil
}

// listenerValue is a key's value on a listener: its
// listener.name.<listener>.<key> override, or the broker's own; and the
// key the value came from, for error messages.
func (c *Config) listenerValue(listener, key string) (string, string) {
	prefixed := listenerPrefix + strings.ToLower(listener) + "." + key
	if v, ok := c.listenerProps[prefixed]; ok {
		return strings.TrimSpace(v), prefixed
	}
	return c.values[key], key
}

// mechanismValue is a key's value for a SASL mechanism on a listener:
// its listener.name.<l>.<mechanism>.<key> override, its
// listener.name.<l>.<key> override, or the broker's own.
func (c *Config) mechanismValue(listener, mechanism, key string) (string, string) {
	prefixed := listenerPrefix + strings.ToLower(listener) + "." + strings.ToLower(mechanism) + "." + key
	if v, ok := c.listenerProps[prefixed]; ok {
		return strings.TrimSpace(v), prefixed
	}
	return c.listenerValue(listener, key)
}

// interBrokerListener is the listener brokers reach each other on
// (resolveInterBrokerListener) and its security.
func (c *Config) interBrokerListener() (Listener, ListenerSecurity, bool) {
	ls := c.clientListeners()
	i := slices.IndexFunc(ls, func(l Listener) bool { return l.Name == c.InterBrokerListener })
	switch {
	case i >= 0:
		return ls[i], c.Security[ls[i].Name], true
	case len(ls) > 0:
		return ls[0], c.Security[ls[0].Name], true
	}
	return Listener{}, ListenerSecurity{}, false
}

// resolveInterBrokerListener checks the inter-broker listener as Kafka
// does: inter.broker.listener.name, or else the listener named by
// security.inter.broker.protocol (PLAINTEXT by default), only one of the
// two set, and what they name an advertised listener other than a
// controller listener on a node with the broker role. A node whose default
// names no listener (none called PLAINTEXT, neither key set) is refused,
// as Kafka refuses it.
func (c *Config) resolveInterBrokerListener() error {
	byName, byProtocol := c.explicit["inter.broker.listener.name"], c.explicit["security.inter.broker.protocol"]
	if byName && byProtocol {
		return fmt.Errorf("only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
	}
	if !c.hasRole("broker") {
		return nil
	}
	var names []string
	for _, l := range c.AdvertisedListeners {
		if !slices.Contains(c.ControllerListenerNames, l.Name) {
			names = append(names, l.Name)
		}
	}
	if slices.Contains(names, c.InterBrokerListener) {
		return nil
	}
	key := "inter.broker.listener.name"
	if byProtocol {
		key = "security.inter.broker.protocol"
	}
	return fmt.Errorf("invalid value for config key %s: inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are %s",
		key, strings.Join(names, ","))
}

// interBrokerTLS is the TLS config replica fetchers dial their leaders
// with, or nil when the inter-broker listener has no TLS.
func (c *Config) interBrokerTLS() *tls.Config {
	_, sec, _ := c.interBrokerListener()
	return sec.ClientTLS
}

// validateInterBrokerSecurity checks, in a cluster, that replicas can log
// in to the listener they fetch on (the inter-broker listener), setting
// InterBrokerSASL, and that a broker-only node's inter-broker listener,
// which carries the metadata log too, has the controller listener's
// protocol and, if SASL, its mechanism: the active controller dials and
// logs in to it as it does to voters.
func (c *Config) validateInterBrokerSecurity() error {
	if !c.clustered() || !c.hasRole("broker") {
		return nil
	}
	l, sec, ok := c.interBrokerListener()
	if !ok {
		return nil
	}
	if want := c.controllerProtocol(); !c.hasRole("controller") && sec.Protocol != want {
		return fmt.Errorf("listener %s: a broker-only node's inter-broker listener carries the metadata log, which the active controller sends as it does to controllers, so it must be %s, as the controller listener %s is",
			l.Name, want, c.ControllerListenerNames[0])
	}
	if !sec.sasl() {
		return nil
	}
	if !c.hasRole("controller") {
		switch m := c.SaslControllerMechanism; {
		case !slices.Contains(sec.Mechanisms, m):
			return fmt.Errorf("invalid value for config key sasl.mechanism.controller.protocol: the active controller logs in with %s to the inter-broker listener %s of a broker-only node to send it the metadata log, and that listener does not enable it (%s)",
				m, l.Name, strings.Join(sec.Mechanisms, ","))
		case strings.HasPrefix(m, "SCRAM-"):
			return fmt.Errorf("invalid value for config key sasl.mechanism.controller.protocol: the active controller logs in with %s to the inter-broker listener %s of a broker-only node to send it the metadata log, which holds the SCRAM credentials the node would check that login against; use PLAIN or OAUTHBEARER",
				m, l.Name)
		}
	}
	if !slices.Contains(sec.Mechanisms, c.SaslInterBrokerMechanism) {
		return fmt.Errorf("invalid value for config key sasl.mechanism.inter.broker.protocol: %s is not enabled on the inter-broker listener %s (%s)", c.SaslInterBrokerMechanism, l.Name, strings.Join(sec.Mechanisms, ","))
	}
	var err error
	c.InterBrokerSASL, err = c.saslLogin(l.Name, c.SaslInterBrokerMechanism, "replicas")
	return err
}
