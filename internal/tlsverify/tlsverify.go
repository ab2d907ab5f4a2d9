// Package tlsverify checks the certificate of a server a broker dials
// (another broker, a controller) as Java's trust manager checks it for
// Kafka's ssl.endpoint.identification.algorithm=https: the chain against
// the trust store, then the host dialled against the certificate's names.
// Java's rule differs from Go's in one case: a certificate without DNS
// subject alternative names is matched, for a host name, against its
// subject's (most specific) common name, as keytool makes certificates
// unless told -ext SAN. An IP address is matched against the IP names
// only, in both.
package tlsverify

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// ForHost is the TLS config of a connection to addr (host:port, or a
// host): cfg itself when it checks no host name (InsecureSkipVerify, as
// with an empty ssl.endpoint.identification.algorithm), else a copy that
// checks the chain and the host name as Java does.
func ForHost(cfg *tls.Config, addr string) *tls.Config {
	if cfg == nil || cfg.InsecureSkipVerify {
		return cfg
	}
	host := cfg.ServerName
	if host == "" {
		host = addr
		if h, _, err := net.SplitHostPort(addr); err == nil {
			host = h
		}
	}
	t := cfg.Clone()
	t.ServerName = host
	t.InsecureSkipVerify = true // checked below, with Java's host name rule
	roots := cfg.RootCAs
	t.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server showed no certificate")
		}
		leaf := cs.PeerCertificates[0]
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
			return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
		}
		return verifyHostname(leaf, host)
	}
	return t
}

// verifyHostname checks that cert names host, as Java's HostnameChecker
// does for TLS.
func verifyHostname(cert *x509.Certificate, host string) error {
	cn := cert.Subject.CommonName // the most specific one, as Java takes it
	if net.ParseIP(host) != nil || len(cert.DNSNames) > 0 || cn == "" {
		return cert.VerifyHostname(host)
	}
	// No DNS names: the common name, matched as a DNS name would be.
	if (&x509.Certificate{DNSNames: []string{cn}}).VerifyHostname(host) != nil {
		return fmt.Errorf("x509: certificate is valid for %s (its common name: it has no DNS names), not %s", cn, host)
	}
	return nil
}
