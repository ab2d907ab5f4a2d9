package sasl

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"hash"
	"strconv"
	"strings"
	"time"
)

// ScramMechanism is a SCRAM mechanism by the type code Kafka's
// AlterUserScramCredentials and DescribeUserScramCredentials carry.
type ScramMechanism int8

const (
	ScramUnknown ScramMechanism = 0
	Sha256       ScramMechanism = 1
	Sha512       ScramMechanism = 2
)

// Kafka's bounds on a credential's iterations (ScramMechanism.minIterations
// and the controller's MAX_ITERATIONS).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// ScramMechanismNamed returns the mechanism called name, or ScramUnknown.
func ScramMechanismNamed(name string) ScramMechanism {
	switch name {
	case ScramSHA256:
		return Sha256
	case ScramSHA512:
		return Sha512
	}
	return ScramUnknown
}

// Known reports whether m is SCRAM-SHA-256 or SCRAM-SHA-512.
func (m ScramMechanism) Known() bool { return m == Sha256 || m == Sha512 }

func (m ScramMechanism) String() string {
	switch m {
	case Sha256:
		return ScramSHA256
	case Sha512:
		return ScramSHA512
	}
	return "UNKNOWN"
}

func (m ScramMechanism) hash() func() hash.Hash {
	if m == Sha512 {
		return sha512.New
	}
	return sha256.New
}

func (m ScramMechanism) hmac(key []byte, parts ...string) []byte {
	mac := hmac.New(m.hash(), key)
	for _, p := range parts {
		mac.Write([]byte(p))
	}
	return mac.Sum(nil)
}

// Credential is a stored SCRAM credential (RFC 5802 section 3): what the
// server needs to check a client's proof and prove itself, not the
// password.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// NewCredential derives the stored credential from the salted password a
// client sends in AlterUserScramCredentials.
func NewCredential(m ScramMechanism, salt, saltedPassword []byte, iterations int32) Credential {
	h := m.hash()()
	h.Write(m.hmac(saltedPassword, "Client Key"))
	return Credential{
		Salt:       bytes.Clone(salt),
		StoredKey:  h.Sum(nil),
		ServerKey:  m.hmac(saltedPassword, "Server Key"),
		Iterations: iterations,
	}
}

// SaltedPassword is Hi(password, salt, iterations) of RFC 5802, which
// clients compute before they send AlterUserScramCredentials.
func SaltedPassword(m ScramMechanism, password string, salt []byte, iterations int) []byte {
	key, err := pbkdf2.Key(m.hash(), password, salt, iterations, m.hash()().Size())
	if err != nil {
		panic(err) // only for a key length the hash cannot give
	}
	return key
}

// scramServer runs the two steps of a SCRAM exchange.
type scramServer struct {
	mech   ScramMechanism
	creds  Credentials
	tokens Tokens
	// token is set for a delegation token's login, which expires with it.
	token  bool
	expiry time.Time

	cred        Credential
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // the client's and ours
	user        string
}

// invalidCredentials is all a client learns of a failed SCRAM exchange,
// as from Kafka: never whether the user exists.
func (s *scramServer) invalidCredentials() *Failure {
	return &Failure{Message: invalidCredentials(s.mech.String())}
}

func (s *scramServer) Step(token []byte) ([]byte, bool, error) {
	if s.serverFirst == "" {
		return s.first(string(token))
	}
	return s.final(string(token))
}

func (s *scramServer) User() string { return s.user }

// TokenAuthenticated reports whether the login was a delegation token's.
func (s *scramServer) TokenAuthenticated() bool { return s.token }

// Expiry is a token login's expiry; a user's password does not expire.
func (s *scramServer) Expiry() (time.Time, bool) { return s.expiry, s.token }

// first reads "n,[a=authzid],n=user,r=nonce[,ext]" and answers
// "r=nonce,s=salt,i=iterations".
func (s *scramServer) first(msg string) ([]byte, bool, error) {
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return nil, false, s.invalidCredentials()
	}
	authzAttr, bare, ok := strings.Cut(rest, ",")
	if !ok || (authzAttr != "" && !strings.HasPrefix(authzAttr, "a=")) {
		return nil, false, s.invalidCredentials()
	}
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") || len(attrs[1]) == 2 {
		return nil, false, s.invalidCredentials()
	}
	user, ok := decodeSaslName(attrs[0][2:])
	if !ok || user == "" {
		return nil, false, s.invalidCredentials()
	}
	for _, ext := range attrs[2:] {
		if k, v, _ := strings.Cut(ext, "="); k == "tokenauth" && strings.EqualFold(v, "true") {
			s.token = true
		}
	}
	authzid, _ := decodeSaslName(strings.TrimPrefix(authzAttr, "a="))
	name := user
	cred, ok := Credential{}, false
	if s.token {
		// The user name is the token's id; the connection becomes its owner.
		var login TokenLogin
		if s.tokens != nil {
			login, ok = s.tokens(user, s.mech)
		}
		cred, user, s.expiry = login.Credential, login.Owner, login.Expiry
	} else {
		cred, ok = s.creds(user, s.mech)
	}
	// Kafka's order: the credential, the authorization id (compared with
	// the name the client gave), the iterations.
	if !ok {
		return nil, false, s.invalidCredentials()
	}
	if authzid != "" && authzid != name {
		return nil, false, &Failure{Message: "Authentication failed: Client requested an authorization id that is different from username"}
	}
	if cred.Iterations < MinIterations {
		return nil, false, s.invalidCredentials()
	}
	var nonce [18]byte
	rand.Read(nonce[:])
	s.cred, s.user = cred, user
	s.gs2Header = "n," + authzAttr + ","
	s.clientFirst = bare
	s.nonce = attrs[1][2:] + base64.RawURLEncoding.EncodeToString(nonce[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	return []byte(s.serverFirst), false, nil
}

// final reads "c=binding,r=nonce[,ext],p=proof", checks the proof and
// answers "v=server signature".
func (s *scramServer) final(msg string) ([]byte, bool, error) {
	if s.user == "" || s.cred.StoredKey == nil {
		return nil, false, s.invalidCredentials()
	}
	withoutProof, proofText, ok := strings.Cut(msg, ",p=")
	if !ok {
		return nil, false, s.invalidCredentials()
	}
	attrs := strings.Split(withoutProof, ",")
	// The nonce need only end with ours, as Kafka checks it: librdkafka
	// sends its own nonce once more in front.
	if len(attrs) < 2 || attrs[0] != "c="+base64.StdEncoding.EncodeToString([]byte(s.gs2Header)) ||
		!strings.HasPrefix(attrs[1], "r=") || !strings.HasSuffix(attrs[1], s.nonce) {
		return nil, false, s.invalidCredentials()
	}
	proof, err := base64.StdEncoding.DecodeString(proofText)
	if err != nil || len(proof) != len(s.cred.StoredKey) {
		return nil, false, s.invalidCredentials()
	}
	authMessage := s.clientFirst + "," + s.serverFirst + "," + withoutProof
	clientKey := s.mech.hmac(s.cred.StoredKey, authMessage) // the client signature, until
	for i := range clientKey {
		clientKey[i] ^= proof[i] // the proof is taken off
	}
	h := s.mech.hash()()
	h.Write(clientKey)
	if !hmac.Equal(h.Sum(nil), s.cred.StoredKey) {
		s.user = ""
		return nil, false, s.invalidCredentials()
	}
	signature := s.mech.hmac(s.cred.ServerKey, authMessage)
	s.cred = Credential{}
	return []byte("v=" + base64.StdEncoding.EncodeToString(signature)), true, nil
}

// decodeSaslName undoes RFC 5802's escaping of ',' and '=' in names.
func decodeSaslName(s string) (string, bool) {
	if !strings.Contains(s, "=") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}
