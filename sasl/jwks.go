package sasl

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	_ "crypto/sha256" // the hashes of RS256 ... ES512
	_ "crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"
)

// KeySet is a JSON Web Key Set (RFC 7517) read from a URL: https://,
// http:// or file://, as Kafka's sasl.oauthbearer.jwks.endpoint.url. It is
// read again every refresh, and sooner when a token names a key it does
// not hold (an identity provider rotating its keys), at most once a second.
type KeySet struct {
	url     string
	refresh time.Duration

	mu      sync.Mutex
	keys    []jsonWebKey
	fetched time.Time // last attempt
	err     error     // of the last attempt
}

type jsonWebKey struct {
	kid, alg string
	key      crypto.PublicKey
}

// NewKeySet is the key set at url, refreshed every refresh.
func NewKeySet(url string, refresh time.Duration) *KeySet {
	return &KeySet{url: url, refresh: refresh}
}

// Load reads the key set now.
func (k *KeySet) Load() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.loadLocked()
}

func (k *KeySet) loadLocked() error {
	k.fetched = time.Now()
	body, err := readURL(k.url)
	if err == nil {
		var keys []jsonWebKey
		if keys, err = parseKeySet(body); err == nil {
			k.keys = keys
		}
	}
	k.err = err
	return err
}

func readURL(raw string) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "file":
		return os.ReadFile(u.Path)
	case "http", "https":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s answered %s", raw, resp.Status)
		}
		return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	return nil, fmt.Errorf("%s: the JWKS URL must be https, http or file", raw)
}

// parseKeySet reads the RSA and EC signing keys of a JWKS document.
func parseKeySet(body []byte) ([]jsonWebKey, error) {
	var doc struct {
		Keys []struct {
			Kty, Kid, Alg, Use, N, E, Crv, X, Y string
		} `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("the JWKS is not JSON: %v", err)
	}
	var out []jsonWebKey
	for _, j := range doc.Keys {
		if j.Use != "" && j.Use != "sig" {
			continue
		}
		var key crypto.PublicKey
		switch j.Kty {
		case "RSA":
			n, e := bigFromB64(j.N), bigFromB64(j.E)
			if n == nil || e == nil || !e.IsInt64() {
				return nil, fmt.Errorf("JWKS key %q: bad RSA modulus or exponent", j.Kid)
			}
			key = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[j.Crv]
			x, y := bigFromB64(j.X), bigFromB64(j.Y)
			if curve == nil || x == nil || y == nil {
				return nil, fmt.Errorf("JWKS key %q: bad EC curve or point", j.Kid)
			}
			key = &ecdsa.PublicKey{Curve: curve, X: x, Y: y}
		default:
			continue
		}
		out = append(out, jsonWebKey{kid: j.Kid, alg: j.Alg, key: key})
	}
	return out, nil
}

func bigFromB64(s string) *big.Int {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil
	}
	return new(big.Int).SetBytes(b)
}

// Verify checks a JWS signature over input made with algorithm alg by the
// key kid (any key that fits when kid is empty).
func (k *KeySet) Verify(alg, kid string, input, sig []byte) error {
	hash, ok := map[string]crypto.Hash{"RS256": crypto.SHA256, "RS384": crypto.SHA384, "RS512": crypto.SHA512,
		"PS256": crypto.SHA256, "PS384": crypto.SHA384, "PS512": crypto.SHA512,
		"ES256": crypto.SHA256, "ES384": crypto.SHA384, "ES512": crypto.SHA512}[alg]
	if !ok {
		return fmt.Errorf("algorithm %q is not accepted", alg)
	}
	h := hash.New()
	h.Write(input)
	digest := h.Sum(nil)
	candidates, err := k.keysFor(kid)
	if err != nil {
		return err
	}
	for _, key := range candidates {
		if key.alg != "" && key.alg != alg {
			continue
		}
		if verifyWith(key.key, alg, hash, digest, sig) {
			return nil
		}
	}
	return fmt.Errorf("no key of the JWKS (kid %q) verifies it", kid)
}

// keysFor is the keys named kid (all when kid is empty), reading the set
// again when it is due or lacks kid.
func (k *KeySet) keysFor(kid string) ([]jsonWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	since := time.Since(k.fetched)
	if k.fetched.IsZero() || since >= k.refresh || (!k.holds(kid) && since >= time.Second) {
		k.loadLocked()
	}
	var out []jsonWebKey
	for _, key := range k.keys {
		if kid == "" || key.kid == kid {
			out = append(out, key)
		}
	}
	if len(out) == 0 && k.err != nil {
		return nil, fmt.Errorf("the JWKS could not be read: %v", k.err)
	}
	return out, nil
}

func (k *KeySet) holds(kid string) bool {
	for _, key := range k.keys {
		if kid == "" || key.kid == kid {
			return true
		}
	}
	return false
}

func verifyWith(key crypto.PublicKey, alg string, hash crypto.Hash, digest, sig []byte) bool {
	switch pub := key.(type) {
	case *rsa.PublicKey:
		if alg[0] == 'P' {
			return rsa.VerifyPSS(pub, hash, digest, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash}) == nil
		}
		return alg[0] == 'R' && rsa.VerifyPKCS1v15(pub, hash, digest, sig) == nil
	case *ecdsa.PublicKey:
		size := (pub.Curve.Params().BitSize + 7) / 8
		if alg[0] != 'E' || len(sig) != 2*size {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		return ecdsa.Verify(pub, digest, r, s)
	}
	return false
}
