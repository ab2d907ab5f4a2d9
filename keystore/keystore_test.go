package keystore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jks "github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// testCert is a self-signed certificate for 127.0.0.1 and its key.
func testCert(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert, key
}

func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// check loads the key store and the trust store and proves they belong
// together: a TLS handshake with the key pair is verified by the pool.
func check(t *testing.T, ks, ts Store) {
	t.Helper()
	pair, err := ks.KeyPair()
	if err != nil {
		t.Fatalf("key store: %v", err)
	}
	pool, err := ts.Pool()
	if err != nil {
		t.Fatalf("trust store: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Fatalf("the trust store does not verify the key store's certificate: %v", err)
	}
	client, server := tlsPipe(t, pair, pool)
	if err := <-server; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	if err := <-client; err != nil {
		t.Fatalf("client handshake: %v", err)
	}
}

func tlsPipe(t *testing.T, pair tls.Certificate, pool *x509.CertPool) (<-chan error, <-chan error) {
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	server, client := make(chan error, 1), make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			err = c.(*tls.Conn).Handshake()
			c.Close()
		}
		server <- err
	}()
	go func() {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool})
		if err == nil {
			c.Close()
		}
		client <- err
	}()
	return client, server
}

func TestPEM(t *testing.T) {
	cert, key := testCert(t)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	// A file holding both, and the inline settings.
	check(t, Store{Type: "PEM", Location: write(t, "ks.pem", append(keyPEM, certPEM...))},
		Store{Type: "PEM", Location: write(t, "ts.pem", certPEM)})
	check(t, Store{Type: "PEM", Key: string(keyPEM), Certificates: string(certPEM)},
		Store{Type: "PEM", Certificates: string(certPEM)})
	// Inline PEM as a properties file gives it: continued lines joined.
	oneLine := func(b []byte) string { return strings.ReplaceAll(string(b), "\n", " ") }
	check(t, Store{Type: "PEM", Key: oneLine(keyPEM), Certificates: oneLine(certPEM)},
		Store{Type: "PEM", Certificates: oneLine(certPEM)})
	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte("x")})
	if _, err := (Store{Type: "PEM", Key: string(enc), Certificates: string(certPEM), KeyPassword: "x"}).KeyPair(); err == nil {
		t.Fatal("a broken encrypted PEM key was accepted")
	}
}

// Encrypted PKCS#8 keys (ENCRYPTED PRIVATE KEY) in a PEM key store are
// read with ssl.key.password, as Kafka's PemStore reads them: made with
// openssl's default (PBES2, AES-256, HMAC-SHA256), other PBES2 choices,
// and PKCS#12's SHA-1 and triple DES (what Java 17 itself decrypts).
func TestEncryptedPEMKeys(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatalf("openssl is needed: %v", err)
	}
	cert, key := testCert(t)
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	plain := write(t, "key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	trust := Store{Type: "PEM", Certificates: string(certPEM)}
	for name, args := range map[string][]string{
		"openssl's default":     nil,
		"AES-128, HMAC-SHA1":    {"-v2", "aes128", "-v2prf", "hmacWithSHA1"},
		"AES-192, HMAC-SHA512":  {"-v2", "aes192", "-v2prf", "hmacWithSHA512"},
		"PBES2 with triple DES": {"-v2", "des3"},
		"PKCS#12 triple DES":    {"-v1", "PBE-SHA1-3DES"},
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "enc.pem")
			cmd := append([]string{"pkcs8", "-topk8", "-in", plain, "-out", out, "-passout", "pass:key-secret"}, args...)
			if msg, err := exec.Command(openssl, cmd...).CombinedOutput(); err != nil {
				t.Fatalf("openssl %v: %v\n%s", cmd, err, msg)
			}
			encrypted, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(encrypted), "ENCRYPTED PRIVATE KEY") {
				t.Fatalf("openssl wrote %s", encrypted)
			}
			check(t, Store{Type: "PEM", Key: string(encrypted), Certificates: string(certPEM), KeyPassword: "key-secret"}, trust)
			check(t, Store{Type: "PEM", Location: write(t, "ks.pem", append(encrypted, certPEM...)), KeyPassword: "key-secret"}, trust)
			for _, password := range []string{"wrong", ""} {
				if _, err := (Store{Type: "PEM", Key: string(encrypted), Certificates: string(certPEM), KeyPassword: password}).KeyPair(); err == nil {
					t.Fatalf("the key was read with the password %q", password)
				}
			}
		})
	}
}

func TestPKCS12AndJKSMadeInGo(t *testing.T) {
	cert, key := testCert(t)
	p12, err := pkcs12.Modern.Encode(key, cert, nil, "secret")
	if err != nil {
		t.Fatal(err)
	}
	trust, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{cert}, "secret")
	if err != nil {
		t.Fatal(err)
	}
	check(t, Store{Type: "PKCS12", Location: write(t, "ks.p12", p12), Password: "secret"},
		Store{Type: "PKCS12", Location: write(t, "ts.p12", trust), Password: "secret"})
	// Type JKS (Kafka's default) reads a PKCS12 file, as Java does.
	check(t, Store{Location: write(t, "ks.p12", p12), Password: "secret"},
		Store{Type: "JKS", Location: write(t, "ts.p12", trust), Password: "secret"})
	if _, err := (Store{Type: "PKCS12", Location: write(t, "ks.p12", p12), Password: "wrong"}).KeyPair(); err == nil {
		t.Fatal("a wrong PKCS12 password was accepted")
	}

	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	ks := jks.New()
	chain := []jks.Certificate{{Type: "X509", Content: cert.Raw}}
	if err := ks.SetPrivateKeyEntry("broker", jks.PrivateKeyEntry{CreationTime: time.Now(), PrivateKey: keyDER, CertificateChain: chain}, []byte("key-secret")); err != nil {
		t.Fatal(err)
	}
	ts := jks.New()
	if err := ts.SetTrustedCertificateEntry("ca", jks.TrustedCertificateEntry{CreationTime: time.Now(), Certificate: chain[0]}); err != nil {
		t.Fatal(err)
	}
	ksPath, tsPath := filepath.Join(t.TempDir(), "ks.jks"), filepath.Join(t.TempDir(), "ts.jks")
	for path, store := range map[string]jks.KeyStore{ksPath: ks, tsPath: ts} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Store(f, []byte("store-secret")); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	check(t, Store{Type: "JKS", Location: ksPath, Password: "store-secret", KeyPassword: "key-secret"},
		Store{Type: "JKS", Location: tsPath, Password: "store-secret"})
}

// Stores as Kafka users make them: with Java's keytool.
func TestStoresMadeByKeytool(t *testing.T) {
	keytool, err := exec.LookPath("keytool")
	if err != nil {
		t.Fatalf("keytool (from the JDK) is needed: %v", err)
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %v: %v\n%s", args, err, out)
		}
	}
	for _, typ := range []string{"PKCS12", "JKS"} {
		ks, cert, ts := filepath.Join(dir, typ+"-ks"), filepath.Join(dir, typ+".crt"), filepath.Join(dir, typ+"-ts")
		run("-genkeypair", "-alias", "broker", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=broker",
			"-ext", "SAN=IP:127.0.0.1", "-validity", "2", "-storetype", typ, "-keystore", ks, "-storepass", "store-secret", "-keypass", "store-secret")
		run("-exportcert", "-alias", "broker", "-keystore", ks, "-storetype", typ, "-storepass", "store-secret", "-file", cert)
		run("-importcert", "-noprompt", "-alias", "ca", "-file", cert, "-storetype", typ, "-keystore", ts, "-storepass", "trust-secret")
		t.Run(typ, func(t *testing.T) {
			check(t, Store{Type: typ, Location: ks, Password: "store-secret"}, Store{Type: typ, Location: ts, Password: "trust-secret"})
		})
	}
	// As Java's trust manager does, a store of private key entries (the key
	// store itself, a common shortcut) trusts their certificates.
	for _, typ := range []string{"PKCS12", "JKS"} {
		ks := filepath.Join(dir, typ+"-ks")
		check(t, Store{Type: typ, Location: ks, Password: "store-secret"}, Store{Type: typ, Location: ks, Password: "store-secret"})
	}
	// As Java does (and Kafka's ssl.truststore.password documents), a JKS
	// trust store read without a password is read without checking its
	// integrity; a wrong password is still refused.
	ks, ts := filepath.Join(dir, "JKS-ks"), filepath.Join(dir, "JKS-ts")
	check(t, Store{Type: "JKS", Location: ks, Password: "store-secret"}, Store{Type: "JKS", Location: ts})
	if _, err := (Store{Type: "JKS", Location: ts, Password: "wrong"}).Pool(); err == nil {
		t.Fatal("a JKS trust store was read with a wrong password")
	}
}
