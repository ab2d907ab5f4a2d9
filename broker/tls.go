package broker

// TLS listeners (SSL and SASL_SSL), configured with Kafka's ssl.* keys,
// each of which a listener may override with listener.name.<listener>.ssl.*:
// a key store (package keystore: JKS, PKCS12 or PEM) holding the broker's
// key and certificate, a trust store for client certificates and for the
// leaders' certificates replicas check, ssl.client.auth, and the TLS
// versions and cipher suites allowed. On an SSL listener a client that shows a certificate
// is the user its subject names (CN=...,O=..., as Java writes it) after
// ssl.principal.mapping.rules (package sslprincipal), as with Kafka's
// default principal builder; on SASL_SSL it is the SASL user.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/gregor-broker/gregor/keystore"
	"github.com/gregor-broker/gregor/sslprincipal"
)

var tlsKeys = []configKey{
	{"ssl.keystore.type", "STRING", "JKS", "The file format of the key store: JKS, PKCS12 or PEM.", nil},
	{"ssl.keystore.location", "STRING", "", "The key store file: the broker's private key and certificate chain.", nil},
	{"ssl.keystore.password", "PASSWORD", "", "The key store's password.", nil},
	{"ssl.key.password", "PASSWORD", "", "The private key's password in a JKS key store, if not the store's, or of an encrypted PEM key.", nil},
	{"ssl.keystore.key", "PASSWORD", "", "The private key in PEM (ssl.keystore.type=PEM), instead of a file.", nil},
	{"ssl.keystore.certificate.chain", "PASSWORD", "", "The certificate chain in PEM (ssl.keystore.type=PEM), instead of a file.", nil},
	{"ssl.truststore.type", "STRING", "JKS", "The file format of the trust store: JKS, PKCS12 or PEM.", nil},
	{"ssl.truststore.location", "STRING", "", "The trust store file: the certificates of the CAs trusted for client certificates and by replicas.", nil},
	{"ssl.truststore.password", "PASSWORD", "", "The trust store's password.", nil},
	{"ssl.truststore.certificates", "PASSWORD", "", "Trusted certificates in PEM (ssl.truststore.type=PEM), instead of a file.", nil},
	{"ssl.client.auth", "STRING", "none", "Whether clients must show a certificate: required, requested or none.", nil},
	{"ssl.enabled.protocols", "LIST", "TLSv1.2,TLSv1.3", "The TLS versions allowed.", nil},
	{"ssl.cipher.suites", "LIST", "", "The cipher suites allowed, by their IANA names; empty: Go's defaults.", nil},
	{"ssl.endpoint.identification.algorithm", "STRING", "https", "How replicas check a leader's certificate names it: https, or empty for no check.", nil},
	{"ssl.allow.dn.changes", "BOOLEAN", "false", "Whether a key store altered at runtime may hold a certificate for another subject (DN) than the one in use.", nil},
	{"ssl.allow.san.changes", "BOOLEAN", "false", "Whether a key store altered at runtime may hold a certificate with other subject alternative names than the one in use.", nil},
	{"ssl.principal.mapping.rules", "STRING", "DEFAULT", "How a client certificate's subject becomes its user on an SSL listener: rules RULE:pattern/replacement/[LU] and DEFAULT, the first that matches wins (KIP-371).", nil},
}

func init() {
	for i := range tlsKeys {
		tlsKeys[i].apply = func(*Config, string) error { return nil } // read per listener by tlsListener
		if tlsKeys[i].name == "ssl.client.auth" {
			// Checked here too: SASL_SSL listeners do not read it.
			tlsKeys[i].apply = func(_ *Config, v string) error {
				if _, known := clientAuthType(v); !known {
					return errors.New("required, requested or none")
				}
				return nil
			}
		}
	}
	brokerKeys = append(brokerKeys, tlsKeys...)
}

// isTLSKey reports whether setting is one of the ssl keys a listener may
// override.
func isTLSKey(setting string) bool {
	for _, k := range tlsKeys {
		if k.name == setting {
			return true
		}
	}
	return false
}

// tlsListener builds the TLS configs of a TLS listener: the server's, and
// the one replicas dial their leaders' listener of this name with. A node
// that only dials the listener (serving false: a broker-only node's view
// of an SSL CONTROLLER listener) gets no server config, and may have no
// key store, which only a listener requiring client certificates needs.
func (c *Config) tlsListener(name string, serving bool) (server, client *tls.Config, err error) {
	get := func(key string) string {
		v, _ := c.listenerValue(name, key)
		return v
	}
	ks := keystore.Store{Type: get("ssl.keystore.type"), Location: get("ssl.keystore.location"), Password: get("ssl.keystore.password"),
		KeyPassword: get("ssl.key.password"), Key: get("ssl.keystore.key"), Certificates: get("ssl.keystore.certificate.chain")}
	ts := keystore.Store{Type: get("ssl.truststore.type"), Location: get("ssl.truststore.location"), Password: get("ssl.truststore.password"),
		Certificates: get("ssl.truststore.certificates")}
	var certs []tls.Certificate
	switch {
	case ks.Set():
		pair, err := ks.KeyPair()
		if err != nil {
			return nil, nil, fmt.Errorf("listener %s: ssl.keystore: %v", name, err)
		}
		certs = []tls.Certificate{pair}
	case serving:
		return nil, nil, fmt.Errorf("listener %s uses TLS but has no key store (ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain)", name)
	}
	var pool *x509.CertPool
	if ts.Set() {
		if pool, err = ts.Pool(); err != nil {
			return nil, nil, fmt.Errorf("listener %s: ssl.truststore: %v", name, err)
		}
	}
	minVersion, maxVersion := uint16(0), uint16(0)
	for _, p := range splitList(get("ssl.enabled.protocols")) {
		if slices.Contains(disabledProtocols, p) {
			continue
		}
		v, ok := map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}[p]
		if !ok {
			return nil, nil, fmt.Errorf("invalid value for config key ssl.enabled.protocols: %s (Gregor serves TLSv1.2 and TLSv1.3)", p)
		}
		if minVersion == 0 || v < minVersion {
			minVersion = v
		}
		maxVersion = max(maxVersion, v)
	}
	if minVersion == 0 {
		return nil, nil, fmt.Errorf("invalid value for config key ssl.enabled.protocols: no TLS version enabled on listener %s", name)
	}
	suites, minVersion, maxVersion, err := cipherSuites(splitList(get("ssl.cipher.suites")), minVersion, maxVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("listener %s: %v", name, err)
	}
	if serving {
		server = &tls.Config{Certificates: certs, ClientCAs: pool, MinVersion: minVersion, MaxVersion: maxVersion, CipherSuites: suites}
		auth := c.clientAuth(name)
		var known bool
		if server.ClientAuth, known = clientAuthType(auth); !known {
			return nil, nil, fmt.Errorf("invalid value for config key ssl.client.auth: %s (required, requested or none)", auth)
		}
		if server.ClientAuth != tls.NoClientCert && pool == nil {
			return nil, nil, fmt.Errorf("listener %s: ssl.client.auth=%s needs a trust store to check client certificates with", name, auth)
		}
	}
	client = &tls.Config{Certificates: certs, RootCAs: pool, MinVersion: minVersion, MaxVersion: maxVersion, CipherSuites: suites}
	switch alg := get("ssl.endpoint.identification.algorithm"); strings.ToLower(alg) { // Java reads it in any case
	case "https":
	case "":
		// The chain is still checked, only not the name in it.
		client.InsecureSkipVerify = true
		client.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, pool) }
	default:
		return nil, nil, fmt.Errorf("invalid value for config key ssl.endpoint.identification.algorithm: %s (https or empty)", alg)
	}
	return server, client, nil
}

// disabledProtocols are the protocol names Java knows but (by its default
// jdk.tls.disabledAlgorithms, since Java 17 at the latest) never agrees
// to: ssl.enabled.protocols may name them, as older Kafka defaults did
// (TLSv1.2,TLSv1.1,TLSv1), and they are left out.
var disabledProtocols = []string{"SSLv2Hello", "SSLv3", "TLSv1", "TLSv1.1"}

// clientAuth is the ssl.client.auth of a listener. As in Kafka's
// ChannelBuilders, a SASL_SSL listener asks for client certificates only
// with its own listener.name.<listener>.ssl.client.auth: the broker-wide
// key is for SSL listeners.
func (c *Config) clientAuth(listener string) string {
	v, key := c.listenerValue(listener, "ssl.client.auth")
	if c.SecurityProtocols[listener] == protocolSaslSSL && key == "ssl.client.auth" {
		return "none"
	}
	return v
}

// clientAuthType reads a value of ssl.client.auth, and whether it is one.
func clientAuthType(v string) (tls.ClientAuthType, bool) {
	switch v {
	case "none", "":
		return tls.NoClientCert, true
	case "requested":
		return tls.VerifyClientCertIfGiven, true
	case "required":
		return tls.RequireAndVerifyClientCert, true
	}
	return tls.NoClientCert, false
}

// javaOnlySuites are the cipher suites Java 17 serves that Go's TLS does
// not have. Listed in ssl.cipher.suites they are left out, as Java leaves
// out a listed suite it cannot use (one for another kind of key); so are
// the 3DES and RC4 suites, which Java 17's jdk.tls.disabledAlgorithms
// keeps out of every handshake.
var javaOnlySuites = []string{
	"TLS_DHE_DSS_WITH_AES_128_CBC_SHA", "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256", "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256",
	"TLS_DHE_DSS_WITH_AES_256_CBC_SHA", "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256", "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384",
	"TLS_DHE_RSA_WITH_AES_128_CBC_SHA", "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256", "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
	"TLS_DHE_RSA_WITH_AES_256_CBC_SHA", "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256", "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
	"TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
	"TLS_RSA_WITH_AES_256_CBC_SHA256", "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
}

// cipherSuites reads ssl.cipher.suites (IANA names, as Java's are): the
// TLS 1.2 suites for tls.Config.CipherSuites (nil, Go's defaults, for an
// empty list), and the TLS versions the list leaves between lo and hi.
// Go offers its three TLS 1.3 suites always, so as in Java a list without
// them turns TLS 1.3 off, one with only them turns TLS 1.2 off, and one
// naming some but not all of them is refused rather than widened.
func cipherSuites(names []string, lo, hi uint16) ([]uint16, uint16, uint16, error) {
	if len(names) == 0 {
		return nil, lo, hi, nil
	}
	known := map[string]*tls.CipherSuite{}
	tls13 := 0
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[s.Name] = s
		if slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13}) {
			tls13++
		}
	}
	var suites []uint16
	var named13, leftOut []string
	for _, name := range names {
		s := known[name]
		switch {
		case slices.Contains(javaOnlySuites, name) || strings.Contains(name, "_3DES_EDE_CBC_") || strings.Contains(name, "_RC4_"):
			leftOut = append(leftOut, name)
		case s == nil:
			return nil, 0, 0, fmt.Errorf("invalid value for config key ssl.cipher.suites: unsupported cipher suite %s", name)
		case slices.Equal(s.SupportedVersions, []uint16{tls.VersionTLS13}):
			if !slices.Contains(named13, name) {
				named13 = append(named13, name)
			}
		default:
			suites = append(suites, s.ID)
		}
	}
	switch {
	case len(named13) == 0:
		hi = min(hi, tls.VersionTLS12)
	case len(named13) < tls13:
		return nil, 0, 0, fmt.Errorf("invalid value for config key ssl.cipher.suites: it names the TLS 1.3 suites %s but not all %d: Gregor's TLS always offers all of them", strings.Join(named13, ","), tls13)
	}
	if len(suites) == 0 {
		lo = max(lo, tls.VersionTLS13)
	}
	if lo > hi && len(leftOut) > 0 {
		return nil, 0, 0, fmt.Errorf("invalid value for config key ssl.cipher.suites: no suite of an enabled TLS version (ssl.enabled.protocols) but %s, which Gregor's TLS does not serve", strings.Join(leftOut, ","))
	}
	if lo > hi {
		return nil, 0, 0, errors.New("invalid value for config key ssl.cipher.suites: no suite of an enabled TLS version (ssl.enabled.protocols)")
	}
	return suites, lo, hi, nil
}

// verifyChain checks a server's certificate chain against roots (the
// system's when nil) without checking the host name.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("the server showed no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}

// tlsPrincipal is the user a TLS client is: its certificate's subject
// mapped by the listener's rules, or ANONYMOUS ("") without one. An error
// (no rule applies) refuses the client.
func tlsPrincipal(state tls.ConnectionState, rules *sslprincipal.Mapper) (string, error) {
	if len(state.PeerCertificates) == 0 {
		return "", nil
	}
	name, err := sslprincipal.Name(state.PeerCertificates[0].RawSubject)
	if err != nil {
		return "", err
	}
	return rules.Map(name)
}

// tlsHandshake runs the TLS handshake of a connection to a TLS listener,
// with a deadline, and returns the connection to serve and, on an SSL
// listener, the user its client certificate names.
func (b *Broker) tlsHandshake(nc net.Conn, l *listener) (net.Conn, string, bool) {
	tc := tls.Server(nc, b.serverTLS(l))
	tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		b.logger.Info("failed TLS handshake", "remote", nc.RemoteAddr().String(), "listener", l.name, "err", err)
		nc.Close()
		return nil, "", false
	}
	tc.SetDeadline(time.Time{})
	if l.security.Protocol != protocolSSL {
		return tc, "", true // SASL_SSL: the user comes from SASL
	}
	user, err := tlsPrincipal(tc.ConnectionState(), l.security.PrincipalRules)
	if err != nil {
		b.logger.Info("failed authentication", "remote", nc.RemoteAddr().String(), "listener", l.name, "err", err)
		tc.Close()
		return nil, "", false
	}
	return tc, user, true
}

// tlsHandshakeTimeout bounds a TLS handshake, so that a client that
// connects and says nothing does not hold a goroutine for ever.
var tlsHandshakeTimeout = 10 * time.Second
