// Package keystore loads the key stores and trust stores Kafka's ssl.*
// settings name, into what crypto/tls takes: a key store's private key and
// certificate chain (tls.Certificate) and a trust store's certificates
// (x509.CertPool). Three formats, as in Kafka:
//
//	JKS     Java's own format (Kafka's default type); a file of type JKS
//	        that is really PKCS12 is read as PKCS12, as Java 9+ reads it
//	PKCS12  .p12/.pfx files, as keytool makes them by default
//	PEM     a file of PEM blocks, or the PEM text itself in
//	        ssl.keystore.key / ssl.keystore.certificate.chain /
//	        ssl.truststore.certificates
//
// Inline PEM may arrive with its lines joined (a properties file's
// continued lines); its blocks are rebuilt. An encrypted PEM private key
// (ENCRYPTED PRIVATE KEY) is read with the key password (pkcs8.go).
package keystore

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Store names one store as Kafka's settings do.
type Store struct {
	Type        string // JKS, PKCS12 or PEM
	Location    string // the file, unless the PEM text is given inline
	Password    string
	KeyPassword string // a JKS private key's own password, if it differs
	// Inline PEM (type PEM only): the key and chain of a key store, or the
	// certificates of a trust store.
	Key, Certificates string
}

// Set reports whether the store names anything at all.
func (s Store) Set() bool { return s.Location != "" || s.Key != "" || s.Certificates != "" }

var jksMagic = []byte{0xFE, 0xED, 0xFE, 0xED}

func (s Store) read() ([]byte, string, error) {
	typ := strings.ToUpper(s.Type)
	if typ == "" {
		typ = "JKS"
	}
	if s.Location == "" {
		if typ != "PEM" {
			return nil, "", fmt.Errorf("no location given for the %s store", typ)
		}
		return nil, typ, nil
	}
	data, err := os.ReadFile(s.Location)
	if err != nil {
		return nil, "", err
	}
	if typ == "JKS" && !bytes.HasPrefix(data, jksMagic) {
		typ = "PKCS12"
	}
	return data, typ, nil
}

// KeyPair loads a key store: its private key and certificate chain.
func (s Store) KeyPair() (tls.Certificate, error) {
	data, typ, err := s.read()
	if err != nil {
		return tls.Certificate{}, err
	}
	switch typ {
	case "PEM":
		keyPEM, chainPEM := inlinePEM(s.Key), inlinePEM(s.Certificates)
		if data != nil {
			keyPEM, chainPEM = data, data
		}
		if keyPEM, err = decryptPEMKey(keyPEM, s.KeyPassword); err != nil {
			return tls.Certificate{}, err
		}
		return tls.X509KeyPair(chainPEM, keyPEM)
	case "PKCS12":
		key, leaf, chain, err := pkcs12.DecodeChain(data, s.Password)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("PKCS12 key store %s: %w", s.Location, err)
		}
		return pair(key, append([]*x509.Certificate{leaf}, chain...))
	case "JKS":
		ks := jks.New()
		if err := ks.Load(bytes.NewReader(data), []byte(s.Password)); err != nil {
			return tls.Certificate{}, fmt.Errorf("JKS key store %s: %w", s.Location, err)
		}
		keyPassword := s.KeyPassword
		if keyPassword == "" {
			keyPassword = s.Password
		}
		for _, alias := range ks.Aliases() {
			if !ks.IsPrivateKeyEntry(alias) {
				continue
			}
			entry, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("JKS key store %s, key %s: %w", s.Location, alias, err)
			}
			key, err := x509.ParsePKCS8PrivateKey(entry.PrivateKey)
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("JKS key store %s, key %s: %w", s.Location, alias, err)
			}
			var chain []*x509.Certificate
			for _, c := range entry.CertificateChain {
				cert, err := x509.ParseCertificate(c.Content)
				if err != nil {
					return tls.Certificate{}, fmt.Errorf("JKS key store %s, key %s: %w", s.Location, alias, err)
				}
				chain = append(chain, cert)
			}
			return pair(key, chain)
		}
		return tls.Certificate{}, fmt.Errorf("JKS key store %s holds no private key", s.Location)
	}
	return tls.Certificate{}, fmt.Errorf("unknown key store type %s (JKS, PKCS12 or PEM)", s.Type)
}

// loadTrustedJKS reads a JKS trust store. Without a password its entries
// are read without checking the store's integrity, as Java's
// KeyStore.load does with none (Kafka's ssl.truststore.password may be
// left out); the library reads every entry before it checks the digest
// that needs the password.
func loadTrustedJKS(data []byte, password string) (jks.KeyStore, error) {
	ks := jks.New()
	err := ks.Load(bytes.NewReader(data), []byte(password))
	if err != nil && password == "" && err.Error() == "got invalid digest" {
		return ks, nil
	}
	return ks, err
}

// decryptPEMKey gives, for PEM text whose private key is encrypted
// (ENCRYPTED PRIVATE KEY), that key decrypted with password; PEM text
// with a key in the clear is given back as it is.
func decryptPEMKey(text []byte, password string) ([]byte, error) {
	for rest := text; ; {
		var blk *pem.Block
		if blk, rest = pem.Decode(rest); blk == nil {
			return text, nil
		}
		if blk.Type != "ENCRYPTED PRIVATE KEY" {
			continue
		}
		if password == "" {
			return nil, errors.New("the PEM private key is encrypted: ssl.key.password is its password")
		}
		der, err := decryptPKCS8(blk.Bytes, password)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	}
}

// trustedJKSCertificate is the certificate a JKS entry makes trusted, as
// Java's trust manager reads a store: a trusted certificate entry's, or
// the first of a private key entry's chain (the key store itself given as
// the trust store).
func trustedJKSCertificate(ks jks.KeyStore, alias string) ([]byte, bool) {
	if entry, err := ks.GetTrustedCertificateEntry(alias); err == nil {
		return entry.Certificate.Content, true
	}
	if chain, err := ks.GetPrivateKeyEntryCertificateChain(alias); err == nil && len(chain) > 0 {
		return chain[0].Content, true
	}
	return nil, false
}

// pemBlock matches one PEM block however its lines were joined: a
// properties file's continued lines arrive as one line.
var pemBlock = regexp.MustCompile(`-----BEGIN ([A-Z0-9 ]+)-----([A-Za-z0-9+/=\s\\]*)-----END ([A-Z0-9 ]+)-----`)

// inlinePEM rebuilds PEM text given inline (ssl.keystore.key and the
// like), with the line breaks Go's decoder needs.
func inlinePEM(s string) []byte {
	var out []byte
	for _, m := range pemBlock.FindAllStringSubmatch(s, -1) {
		body := strings.Map(func(r rune) rune {
			if strings.ContainsRune(" \t\r\n\\", r) {
				return -1
			}
			return r
		}, m[2])
		out = append(out, "-----BEGIN "+m[1]+"-----\n"...)
		for len(body) > 64 {
			out = append(out, body[:64]+"\n"...)
			body = body[64:]
		}
		out = append(out, body+"\n-----END "+m[3]+"-----\n"...)
	}
	return out
}

func pair(key any, chain []*x509.Certificate) (tls.Certificate, error) {
	signer, ok := key.(crypto.Signer)
	if !ok || len(chain) == 0 {
		return tls.Certificate{}, errors.New("key store holds no usable private key and certificate")
	}
	c := tls.Certificate{PrivateKey: signer, Leaf: chain[0]}
	for _, cert := range chain {
		c.Certificate = append(c.Certificate, cert.Raw)
	}
	return c, nil
}

// Pool loads a trust store: the certificates it trusts.
func (s Store) Pool() (*x509.CertPool, error) {
	data, typ, err := s.read()
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	var certs []*x509.Certificate
	switch typ {
	case "PEM":
		text := inlinePEM(s.Certificates)
		if data != nil {
			text = data
		}
		if !pool.AppendCertsFromPEM(text) {
			return nil, errors.New("PEM trust store holds no certificate")
		}
		return pool, nil
	case "PKCS12":
		if certs, err = pkcs12.DecodeTrustStore(data, s.Password); err != nil {
			// A key store: its key's certificate is trusted, as Java's
			// trust manager trusts a key entry's.
			_, leaf, _, keyErr := pkcs12.DecodeChain(data, s.Password)
			if keyErr != nil {
				return nil, fmt.Errorf("PKCS12 trust store %s: %w", s.Location, err)
			}
			certs = []*x509.Certificate{leaf}
		}
	case "JKS":
		ks, err := loadTrustedJKS(data, s.Password)
		if err != nil {
			return nil, fmt.Errorf("JKS trust store %s: %w", s.Location, err)
		}
		for _, alias := range ks.Aliases() {
			der, ok := trustedJKSCertificate(ks, alias)
			if !ok {
				continue
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, fmt.Errorf("JKS trust store %s, certificate %s: %w", s.Location, alias, err)
			}
			certs = append(certs, cert)
		}
	default:
		return nil, fmt.Errorf("unknown trust store type %s (JKS, PKCS12 or PEM)", s.Type)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("trust store %s holds no certificate", s.Location)
	}
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}
