package broker

// Key and trust stores changed at runtime (KIP-226), as Kafka's SslFactory
// allows: a TLS listener's listener.name.<listener>.ssl.keystore.* and
// ssl.truststore.* keys may be altered per broker (not cluster-wide, and
// not without the listener prefix, both refused with Kafka's messages).
// The live configuration is rebuilt with the new keys, which loads the
// stores as at start, so a store that does not load refuses the change;
// so does a key store whose certificate names another subject or other
// subject alternative names (a superset will do) than the one in use, unless
// ssl.allow.dn.changes / ssl.allow.san.changes, and on the inter-broker
// listener a key store the trust store in use does not trust, or a trust
// store that does not trust the key store in use, since the other brokers
// have the old stores. A listener started without a trust store is not
// given one. Every handshake takes the listener's TLS
// config from the live configuration, so new connections get the new
// stores and those already made keep their session; a connection to
// another broker (interbroker_dial.go) takes the live key and trust stores
// of the inter-broker listener, and raft's streams and the controller
// client those of the CONTROLLER listener (liveControllerSecurity). The
// same alteration naming the same file reloads it, which is how a store
// replaced in place is taken up.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"strings"

	"github.com/gregor-broker/gregor/sslprincipal"
)

// sslStoreSettings are the keys a listener's stores are read from: Kafka's
// SslConfigs.RECONFIGURABLE_CONFIGS.
var sslStoreSettings = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
}

// isDynamicSSLKey reports whether key is a listener's store key
// (listener.name.<listener>.ssl.keystore.location, ...).
func isDynamicSSLKey(key string) bool {
	rest, ok := strings.CutPrefix(key, listenerPrefix)
	if !ok {
		return false
	}
	name, setting, ok := strings.Cut(rest, ".")
	return ok && name != "" && slices.Contains(sslStoreSettings, setting)
}

// checkSSLStoreLevel refuses store keys where Kafka's DynamicBrokerConfig
// does: at the cluster-wide level, and without the listener prefix.
func checkSSLStoreLevel(perBroker bool, changed []string) *configError {
	var bare, prefixed []string
	for _, k := range changed {
		switch {
		case slices.Contains(sslStoreSettings, k):
			bare = append(bare, k)
		case isDynamicSSLKey(k):
			prefixed = append(prefixed, k)
		}
	}
	if !perBroker && len(prefixed) > 0 {
		return configErr(errInvalidRequest, "Cannot update these configs at default cluster level, broker id must be specified: [%s]", strings.Join(prefixed, ", "))
	}
	if len(bare) > 0 {
		return configErr(errInvalidRequest, "These security configs can be dynamically updated only per-listener using the listener prefix: [%s]", strings.Join(bare, ", "))
	}
	return nil
}

// validateStoreChange checks, for each TLS listener whose stores next
// changes, the new key store against the one in use (cur) and, on the
// inter-broker listener, the trust between the stores in use and the new
// ones both ways, as Kafka's SslFactory.SslEngineValidator does with a
// handshake between the old and new stores in each direction.
func validateStoreChange(cur, next *Config) *configError {
	for name, sec := range next.Security {
		old, ok := cur.Security[name]
		if !ok || sec.TLS == nil || old.TLS == nil || sameStores(old.TLS, sec.TLS) {
			continue
		}
		oldCert, newCert := leafOf(old.TLS), leafOf(sec.TLS)
		if oldCert == nil || newCert == nil {
			continue
		}
		allow := func(key string) bool { v, _ := next.listenerValue(name, key); return strings.EqualFold(v, "true") }
		if !allow("ssl.allow.dn.changes") && !sameSubject(oldCert, newCert) {
			return storeRefusal("Keystore DistinguishedName does not match:  existing={DN=%s}, new={DN=%s}", dn(oldCert), dn(newCert))
		}
		if !allow("ssl.allow.san.changes") && !containsAll(sans(newCert), sans(oldCert)) {
			return storeRefusal("Keystore SubjectAltNames do not match:  existing={SAN=%v}, new={SAN=%v}", sans(oldCert), sans(newCert))
		}
		if old.TLS.ClientCAs == nil && sec.TLS.ClientCAs != nil {
			return storeRefusal("Cannot add SSL truststore to an existing listener for which no truststore was configured.")
		}
		if name != next.InterBrokerListener {
			continue
		}
		// The other brokers, which still have this listener's old stores,
		// must go on connecting to this one and it to them.
		if err := trusts(old.TLS, newCert, sec.TLS); err != nil {
			return storeRefusal("the new key store of the inter-broker listener %s is not trusted by its trust store in use: %v", name, err)
		}
		if err := trusts(sec.TLS, oldCert, old.TLS); err != nil {
			return storeRefusal("the new trust store of the inter-broker listener %s does not trust the key store in use: %v", name, err)
		}
	}
	return nil
}

// validateInterBrokerStores refuses to start a broker whose inter-broker
// listener's trust store does not trust its own key store, as Kafka's
// SslFactory.configure does on that listener with a handshake between
// engines of its own settings: the other brokers, with the same stores,
// could not connect to it, nor it to them.
func (c *Config) validateInterBrokerStores() error {
	if !c.hasRole("broker") {
		return nil
	}
	sec, ok := c.Security[c.InterBrokerListener]
	if !ok || sec.TLS == nil {
		return nil
	}
	if cert := leafOf(sec.TLS); cert != nil {
		if err := trusts(sec.TLS, cert, sec.TLS); err != nil {
			return fmt.Errorf("listener %s: A client SSLEngine created with the provided settings can't connect to a server SSLEngine created with those settings: the inter-broker listener's key store is not trusted by its trust store: %v", c.InterBrokerListener, err)
		}
	}
	return nil
}

// trusts checks that the trust store of c trusts cert, the leaf of the
// chain of chainOf. Without a trust store there is nothing to check.
func trusts(c *tls.Config, cert *x509.Certificate, chainOf *tls.Config) error {
	if c.ClientCAs == nil {
		return nil
	}
	opts := x509.VerifyOptions{Roots: c.ClientCAs, Intermediates: intermediates(chainOf), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}
	_, err := cert.Verify(opts)
	return err
}

// sameSubject reports whether two certificates name the same subject as
// Kafka's SslFactory.CertificateEntries compares them: the same encoding,
// or the same name as Java writes it but for case (which the same text in
// another ASN.1 string type also is).
func sameSubject(a, b *x509.Certificate) bool {
	return bytes.Equal(a.RawSubject, b.RawSubject) || strings.EqualFold(dn(a), dn(b))
}

// containsAll reports whether every one of want is in have.
func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func storeRefusal(format string, args ...any) *configError {
	return configErr(errInvalidRequest, "Invalid dynamic configuration: Validation of dynamic config update of SSLFactory failed: "+format, args...)
}

// sameStores reports whether two TLS configs hold the same certificate
// chain and trust the same CAs.
func sameStores(a, b *tls.Config) bool {
	chain := func(c *tls.Config) [][]byte {
		if len(c.Certificates) == 0 {
			return nil
		}
		return c.Certificates[0].Certificate
	}
	ca, cb := chain(a), chain(b)
	if !slices.EqualFunc(ca, cb, func(x, y []byte) bool { return string(x) == string(y) }) {
		return false
	}
	return a.ClientCAs.Equal(b.ClientCAs)
}

func leafOf(c *tls.Config) *x509.Certificate {
	if len(c.Certificates) == 0 || len(c.Certificates[0].Certificate) == 0 {
		return nil
	}
	if leaf := c.Certificates[0].Leaf; leaf != nil {
		return leaf
	}
	leaf, err := x509.ParseCertificate(c.Certificates[0].Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

func intermediates(c *tls.Config) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, der := range c.Certificates[0].Certificate[1:] {
		if cert, err := x509.ParseCertificate(der); err == nil {
			pool.AddCert(cert)
		}
	}
	return pool
}

// dn is a certificate's subject as Java writes it.
func dn(c *x509.Certificate) string {
	name, err := sslprincipal.Name(c.RawSubject)
	if err != nil {
		return c.Subject.String()
	}
	return name
}

// sans are a certificate's subject alternative names, sorted, as
// "DNS:name", "IP:address", "URI:..." and "email:...".
func sans(c *x509.Certificate) []string {
	var out []string
	for _, d := range c.DNSNames {
		out = append(out, "DNS:"+d)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	for _, u := range c.URIs {
		out = append(out, "URI:"+u.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+e)
	}
	slices.Sort(out)
	return out
}

// serverTLS is the TLS config of listener l's next handshake: the live
// configuration's, which AlterConfigs may have given new stores.
func (b *Broker) serverTLS(l *listener) *tls.Config {
	if live := b.liveConfig(); live != nil {
		if sec, ok := live.Security[l.name]; ok && sec.TLS != nil {
			return sec.TLS
		}
	}
	return l.security.TLS
}
