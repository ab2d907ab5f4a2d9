package keystore

// Encrypted PKCS#8 private keys (PEM "ENCRYPTED PRIVATE KEY", RFC 5958's
// EncryptedPrivateKeyInfo), which Kafka's PEM key stores read with
// ssl.key.password. Two schemes are read: PBES2 (RFC 8018: PBKDF2 with an
// HMAC-SHA1/SHA-2 and AES-CBC or triple-DES-CBC; openssl's default), and
// PKCS#12's password-based triple DES with SHA-1 (RFC 7292 appendix B,
// what Kafka's own tests encrypt with and Java decrypts).

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
	"unicode/utf16"
)

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

type pkcs12PBEParams struct {
	Salt       []byte
	Iterations int
}

var (
	oidPBES2           = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2          = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidPBEWithSHA13DES = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 3}
	oidPBEWithSHA12DES = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 4}
	oidDESEDE3CBC      = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

// pbkdf2PRFs are PBKDF2's pseudo-random functions by their identifiers
// (hmacWithSHA1 is the default when none is named).
var pbkdf2PRFs = map[string]func() hash.Hash{
	"1.2.840.113549.2.7":  sha1.New,
	"1.2.840.113549.2.8":  sha256.New224,
	"1.2.840.113549.2.9":  sha256.New,
	"1.2.840.113549.2.10": sha512.New384,
	"1.2.840.113549.2.11": sha512.New,
}

// aesCBCKeySizes are the AES-CBC ciphers of PBES2 and their key sizes.
var aesCBCKeySizes = map[string]int{
	"2.16.840.1.101.3.4.1.2":  16,
	"2.16.840.1.101.3.4.1.22": 24,
	"2.16.840.1.101.3.4.1.42": 32,
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo with password, giving
// the PKCS#8 PrivateKeyInfo.
func decryptPKCS8(der []byte, password string) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("encrypted private key: %w", err)
	}
	var block cipher.Block
	var iv []byte
	var err error
	switch alg := info.Algorithm; {
	case alg.Algorithm.Equal(oidPBES2):
		block, iv, err = pbes2Cipher(alg.Parameters.FullBytes, password)
	case alg.Algorithm.Equal(oidPBEWithSHA13DES), alg.Algorithm.Equal(oidPBEWithSHA12DES):
		block, iv, err = pkcs12TripleDES(alg.Parameters.FullBytes, password, alg.Algorithm.Equal(oidPBEWithSHA12DES))
	default:
		return nil, fmt.Errorf("encrypted private key: unsupported encryption %s (PBES2, or PKCS#12 SHA-1 and triple DES)", alg.Algorithm)
	}
	if err != nil {
		return nil, err
	}
	data := info.EncryptedData
	if len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, errors.New("encrypted private key: bad length")
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	if plain, err = unpad(plain, block.BlockSize()); err != nil {
		return nil, err
	}
	// A wrong password may leave what looks like padding, but not a key.
	if _, err = x509.ParsePKCS8PrivateKey(plain); err != nil {
		return nil, errKeyPassword
	}
	return plain, nil
}

// errKeyPassword is the error of a key that does not decrypt with the
// password given: a wrong ssl.key.password.
var errKeyPassword = errors.New("encrypted private key: wrong password (ssl.key.password)")

// unpad removes PKCS#7 padding, whose absence is the sign of a wrong
// password.
func unpad(b []byte, blockSize int) ([]byte, error) {
	n := int(b[len(b)-1])
	if n == 0 || n > blockSize || !bytes.Equal(b[len(b)-n:], bytes.Repeat([]byte{byte(n)}, n)) {
		return nil, errKeyPassword
	}
	return b[:len(b)-n], nil
}

func pbes2Cipher(params []byte, password string) (cipher.Block, []byte, error) {
	var p pbes2Params
	if _, err := asn1.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("encrypted private key: PBES2 parameters: %w", err)
	}
	if !p.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
		return nil, nil, fmt.Errorf("encrypted private key: unsupported key derivation %s (PBKDF2)", p.KeyDerivationFunc.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(p.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
		return nil, nil, fmt.Errorf("encrypted private key: PBKDF2 parameters: %w", err)
	}
	prf := sha1.New
	if len(kdf.PRF.Algorithm) > 0 {
		if prf = pbkdf2PRFs[kdf.PRF.Algorithm.String()]; prf == nil {
			return nil, nil, fmt.Errorf("encrypted private key: unsupported PBKDF2 function %s", kdf.PRF.Algorithm)
		}
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
		return nil, nil, fmt.Errorf("encrypted private key: cipher parameters: %w", err)
	}
	scheme := p.EncryptionScheme.Algorithm
	keySize, isAES := aesCBCKeySizes[scheme.String()]
	if !isAES && !scheme.Equal(oidDESEDE3CBC) {
		return nil, nil, fmt.Errorf("encrypted private key: unsupported cipher %s (AES-CBC or DES-EDE3-CBC)", scheme)
	}
	if !isAES {
		keySize = 24
	}
	key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.IterationCount, keySize)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypted private key: %w", err)
	}
	var block cipher.Block
	if isAES {
		block, err = aes.NewCipher(key)
	} else {
		block, err = des.NewTripleDESCipher(key)
	}
	if err == nil && len(iv) != block.BlockSize() {
		err = errors.New("bad IV length")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("encrypted private key: %w", err)
	}
	return block, iv, nil
}

// pkcs12TripleDES is the cipher of PKCS#12's pbeWithSHAAnd3-KeyTripleDES-CBC
// (or its two-key variant).
func pkcs12TripleDES(params []byte, password string, twoKey bool) (cipher.Block, []byte, error) {
	var p pkcs12PBEParams
	if _, err := asn1.Unmarshal(params, &p); err != nil {
		return nil, nil, fmt.Errorf("encrypted private key: PBE parameters: %w", err)
	}
	pw := bmpString(password)
	key := pkcs12KDF(pw, p.Salt, p.Iterations, 1, 24)
	if twoKey {
		key = append(key[:16:16], key[:8]...)
	}
	block, err := des.NewTripleDESCipher(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encrypted private key: %w", err)
	}
	return block, pkcs12KDF(pw, p.Salt, p.Iterations, 2, 8), nil
}

// bmpString is a password as PKCS#12 hashes it: UTF-16 big-endian with
// two zero bytes after.
func bmpString(s string) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u>>8), byte(u))
	}
	return append(b, 0, 0)
}

// pkcs12KDF derives n bytes of purpose id (1 key, 2 IV) from a password
// and salt, with SHA-1, as RFC 7292 appendix B.2 defines.
func pkcs12KDF(password, salt []byte, iterations int, id byte, n int) []byte {
	const v = 64 // SHA-1's block size
	fill := func(src []byte) []byte {
		if len(src) == 0 {
			return nil
		}
		out := make([]byte, v*((len(src)+v-1)/v))
		for i := range out {
			out[i] = src[i%len(src)]
		}
		return out
	}
	I := append(fill(salt), fill(password)...)
	D := bytes.Repeat([]byte{id}, v)
	var out []byte
	for len(out) < n {
		h := sha1.New()
		h.Write(D)
		h.Write(I)
		A := h.Sum(nil)
		for range iterations - 1 {
			sum := sha1.Sum(A)
			A = sum[:]
		}
		out = append(out, A...)
		B := fill(A)
		for j := 0; j < len(I); j += v {
			addOne(I[j:j+v], B)
		}
	}
	return out[:n]
}

// addOne sets block to block + b + 1, as big-endian numbers of its size.
func addOne(block, b []byte) {
	carry := 1
	for i := len(block) - 1; i >= 0; i-- {
		sum := int(block[i]) + int(b[i]) + carry
		block[i], carry = byte(sum), sum>>8
	}
}
