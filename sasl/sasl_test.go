package sasl

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	kplain "github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	fsasl "github.com/twmb/franz-go/pkg/sasl"
)

func TestParseJAAS(t *testing.T) {
	j, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret"
		user_admin="admin-secret" user_alice="a;l=i c\e";`)
	if err != nil {
		t.Fatal(err)
	}
	if j.LoginModule != "org.apache.kafka.common.security.plain.PlainLoginModule" || j.Flag != "required" {
		t.Fatalf("parsed %+v", j)
	}
	if j.Options["username"] != "admin" || j.Options["password"] != "admin-secret" {
		t.Fatalf("options %v", j.Options)
	}
	users := j.PlainUsers()
	if len(users) != 2 || users["admin"] != "admin-secret" || users["alice"] != `a;l=i ce` {
		t.Fatalf("users %v", users)
	}
	// Kafka's JaasConfig reads values with Java's StreamTokenizer: single
	// or double quotes, backslash escapes (C's letters, octal, any other
	// character for itself).
	j, err = ParseJAAS(`Module required user_a='single' user_b="say \"hi\"" user_c="back\\slash" user_d="tab\there\101";`)
	if err != nil {
		t.Fatal(err)
	}
	if j.Options["user_a"] != "single" || j.Options["user_b"] != `say "hi"` || j.Options["user_c"] != `back\slash` || j.Options["user_d"] != "tab\thereA" {
		t.Fatalf("quoted values %q", j.Options)
	}
	for _, bad := range []string{
		``,
		`Module required user_a="b"`,  // no ;
		`Module always user_a="b";`,   // bad flag
		`Module required user_a "b";`, // no =
		`Module required user_a="b";  Other required;`, // two modules
		`Module required user_a="b;`,                   // unterminated
	} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("ParseJAAS(%q) accepted", bad)
		}
	}
}

// exchange runs a real client mechanism (franz-go's) against a Server.
func exchange(t *testing.T, client fsasl.Mechanism, server Server) error {
	t.Helper()
	session, msg, err := client.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		challenge, done, err := server.Step(msg)
		if err != nil {
			return err
		}
		clientDone, next, err := session.Challenge(challenge)
		if err != nil {
			t.Fatalf("client rejected the server's answer: %v", err)
		}
		if done != clientDone {
			t.Fatalf("server done=%v, client done=%v", done, clientDone)
		}
		if done {
			return nil
		}
		msg = next
	}
	t.Fatal("exchange did not finish")
	return nil
}

func failureMessage(t *testing.T, err error) string {
	t.Helper()
	var f *Failure
	if !errors.As(err, &f) {
		t.Fatalf("got %v, want a *Failure", err)
	}
	return f.Message
}

func TestPlain(t *testing.T) {
	users := map[string]string{"alice": "alice-secret"}
	s, _ := New(Plain, Stores{PlainUsers: users})
	if err := exchange(t, kplain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), s); err != nil {
		t.Fatal(err)
	}
	if s.User() != "alice" {
		t.Fatalf("user %q", s.User())
	}
	cases := []struct {
		auth kplain.Auth
		want string
	}{
		{kplain.Auth{User: "alice", Pass: "wrong"}, "Authentication failed: Invalid username or password"},
		{kplain.Auth{User: "bob", Pass: "alice-secret"}, "Authentication failed: Invalid username or password"},
		{kplain.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}, "Authentication failed: Client requested an authorization id that is different from username"},
	}
	for _, c := range cases {
		s, _ := New(Plain, Stores{PlainUsers: users})
		if got := failureMessage(t, exchange(t, c.auth.AsMechanism(), s)); got != c.want {
			t.Errorf("%+v: %q, want %q", c.auth, got, c.want)
		}
	}
	s, _ = New(Plain, Stores{PlainUsers: users})
	if _, _, err := s.Step([]byte("\x00alice\x00")); failureMessage(t, err) != "Authentication failed: password not specified" {
		t.Fatalf("empty password: %v", err)
	}
	s, _ = New(Plain, Stores{PlainUsers: users})
	if _, _, err := s.Step([]byte("alice\x00alice-secret")); failureMessage(t, err) != "Invalid SASL/PLAIN response: expected 3 tokens, got 2" {
		t.Fatalf("two tokens: %v", err)
	}
}

func TestScram(t *testing.T) {
	salt := []byte("0123456789abcdef")
	creds := map[string]Credential{}
	for _, m := range []ScramMechanism{Sha256, Sha512} {
		creds[CredentialKey("alice", m)] = NewCredential(m, salt, SaltedPassword(m, "alice-secret", salt, 4096), 4096)
		creds[CredentialKey("we,ird=name", m)] = NewCredential(m, salt, SaltedPassword(m, "pw", salt, 8192), 8192)
	}
	lookup := func(user string, m ScramMechanism) (Credential, bool) {
		c, ok := creds[CredentialKey(user, m)]
		return c, ok
	}
	for _, m := range []ScramMechanism{Sha256, Sha512} {
		mech := func(a kscram.Auth) fsasl.Mechanism {
			if m == Sha512 {
				return a.AsSha512Mechanism()
			}
			return a.AsSha256Mechanism()
		}
		t.Run(m.String(), func(t *testing.T) {
			for _, a := range []kscram.Auth{{User: "alice", Pass: "alice-secret"}, {User: "we,ird=name", Pass: "pw"}} {
				s, _ := New(m.String(), Stores{Credentials: lookup})
				if err := exchange(t, mech(a), s); err != nil {
					t.Fatalf("%s: %v", a.User, err)
				}
				if s.User() != a.User {
					t.Fatalf("user %q, want %q", s.User(), a.User)
				}
			}
			generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism " + m.String()
			for _, a := range []kscram.Auth{{User: "alice", Pass: "wrong"}, {User: "nobody", Pass: "alice-secret"}} {
				s, _ := New(m.String(), Stores{Credentials: lookup})
				if got := failureMessage(t, exchange(t, mech(a), s)); got != generic {
					t.Errorf("%s/%s: %q", a.User, a.Pass, got)
				}
				if s.User() != "" {
					t.Errorf("failed exchange left user %q", s.User())
				}
			}
			s, _ := New(m.String(), Stores{Credentials: lookup})
			a := kscram.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}
			if got := failureMessage(t, exchange(t, mech(a), s)); got != "Authentication failed: Client requested an authorization id that is different from username" {
				t.Errorf("authzid: %q", got)
			}
		})
	}
	// A credential of one mechanism does not authenticate the other.
	only256 := func(user string, m ScramMechanism) (Credential, bool) {
		if m != Sha256 {
			return Credential{}, false
		}
		return lookup(user, m)
	}
	s, _ := New(ScramSHA512, Stores{Credentials: only256})
	if err := exchange(t, kscram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), s); err == nil {
		t.Fatal("SHA-512 exchange passed with only a SHA-256 credential")
	}
	// librdkafka repeats its nonce in front of the combined one; Kafka
	// accepts a final nonce that ends with the server's, and so do we.
	s, _ = New(ScramSHA256, Stores{Credentials: lookup})
	first := "n,,n=alice,r=cnonce"
	serverFirst, _, err := s.Step([]byte(first))
	if err != nil {
		t.Fatal(err)
	}
	attrs := strings.Split(string(serverFirst), ",")
	nonce, salt64, iters := attrs[0][2:], attrs[1][2:], attrs[2][2:]
	salt2, _ := base64.StdEncoding.DecodeString(salt64)
	n, _ := strconv.Atoi(iters)
	withoutProof := "c=biws,r=cnonce" + nonce
	authMessage := "n=alice,r=cnonce," + string(serverFirst) + "," + withoutProof
	salted := SaltedPassword(Sha256, "alice-secret", salt2, n)
	clientKey := Sha256.hmac(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	proof := Sha256.hmac(storedKey[:], authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	if _, done, err := s.Step([]byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof))); err != nil || !done {
		t.Fatalf("librdkafka's final message: done=%v err=%v", done, err)
	}

	// A replayed first message never reaches a proof check: the nonce differs.
	s, _ = New(ScramSHA256, Stores{Credentials: lookup})
	if _, _, err := s.Step([]byte("n,,n=alice,r=abc")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Step([]byte("c=biws,r=abcWRONG,p=AAAA")); err == nil {
		t.Fatal("final message with a foreign nonce accepted")
	}
}

// TestScramTokenLogin: with the tokenauth extension the user name is a
// delegation token's id and the password its HMAC (base64); the login
// becomes the token's owner and expires with the token. Without the
// extension the same name and password are a user's, and fail.
func TestScramTokenLogin(t *testing.T) {
	salt := []byte("token-salt")
	const id, password = "tokenid", "aG1hYw=="
	expiry := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	tokens := func(name string, m ScramMechanism) (TokenLogin, bool) {
		if name != id {
			return TokenLogin{}, false
		}
		return TokenLogin{Owner: "alice", Expiry: expiry, Credential: NewCredential(m, salt, SaltedPassword(m, password, salt, 4096), 4096)}, true
	}
	users := func(string, ScramMechanism) (Credential, bool) { return Credential{}, false }
	st := Stores{Credentials: users, Tokens: tokens}

	s, _ := New(ScramSHA512, st)
	if err := exchange(t, kscram.Auth{User: id, Pass: password, IsToken: true}.AsSha512Mechanism(), s); err != nil {
		t.Fatal(err)
	}
	got, expires := s.(Expiring).Expiry()
	if s.User() != "alice" || !s.(TokenAuthenticated).TokenAuthenticated() || !expires || !got.Equal(expiry) {
		t.Fatalf("token login: user %q, token %v, expiry %v %v", s.User(), s.(TokenAuthenticated).TokenAuthenticated(), got, expires)
	}

	for name, a := range map[string]kscram.Auth{
		"no tokenauth":   {User: id, Pass: password},
		"wrong password": {User: id, Pass: "other", IsToken: true},
		"unknown token":  {User: "other", Pass: password, IsToken: true},
	} {
		s, _ := New(ScramSHA256, st)
		if err := exchange(t, a.AsSha256Mechanism(), s); err == nil {
			t.Errorf("%s: login succeeded", name)
		}
		if _, expires := s.(Expiring).Expiry(); s.User() != "" || (expires && name == "no tokenauth") {
			t.Errorf("%s: user %q, expires %v", name, s.User(), expires)
		}
	}
	// A broker without tokens refuses token logins.
	s, _ = New(ScramSHA256, Stores{Credentials: users})
	if err := exchange(t, kscram.Auth{User: id, Pass: password, IsToken: true}.AsSha256Mechanism(), s); err == nil {
		t.Fatal("token login succeeded without tokens")
	}
}

func TestAlterAndDescribe(t *testing.T) {
	have := map[string]Credential{}
	up := func(name string, m ScramMechanism, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		return kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: name, Mechanism: int8(m), Iterations: iterations, Salt: []byte("salt"), SaltedPassword: []byte("salted")}
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
		up("alice", Sha256, 4096), up("bob", Sha512, 16384),
		up("", Sha256, 4096), up("carol", ScramUnknown, 4096), up("dave", Sha256, 4095), up("erin", Sha256, 16385),
		up("frank", Sha256, 4096), up("frank", Sha512, 4096),
	}
	req.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "gina", Mechanism: int8(Sha256)}}
	resp, changes := Alter(req, have)
	codes := map[string]int16{}
	for _, r := range resp.Results {
		codes[r.User] = r.ErrorCode
	}
	want := map[string]int16{
		"alice": 0, "bob": 0, "": kerr.UnacceptableCredential.Code, "carol": kerr.UnsupportedSaslMechanism.Code,
		"dave": kerr.UnacceptableCredential.Code, "erin": kerr.UnacceptableCredential.Code,
		"frank": kerr.DuplicateResource.Code, "gina": kerr.ResourceNotFound.Code,
	}
	if len(codes) != len(want) {
		t.Fatalf("results %v, want %v", codes, want)
	}
	for u, c := range want {
		if codes[u] != c {
			t.Errorf("%q: code %d, want %d", u, codes[u], c)
		}
	}
	if len(changes) != 2 {
		t.Fatalf("changes %+v", changes)
	}
	for _, c := range changes {
		c.Apply(have)
	}
	stored := have[CredentialKey("alice", Sha256)]
	if wantCred := NewCredential(Sha256, []byte("salt"), []byte("salted"), 4096); string(stored.StoredKey) != string(wantCred.StoredKey) || string(stored.ServerKey) != string(wantCred.ServerKey) {
		t.Fatal("stored credential is not derived from the salted password")
	}

	d := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	all := Describe(d, have)
	if len(all.Results) != 2 || all.Results[0].User != "alice" || all.Results[1].User != "bob" ||
		all.Results[1].CredentialInfos[0].Mechanism != int8(Sha512) || all.Results[1].CredentialInfos[0].Iterations != 16384 {
		t.Fatalf("describe all: %+v", all.Results)
	}
	d.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "alice"}, {Name: "zed"}, {Name: "bob"}, {Name: "bob"}}
	some := Describe(d, have)
	got := map[string]int16{}
	for _, r := range some.Results {
		got[r.User] = r.ErrorCode
	}
	if got["alice"] != 0 || got["zed"] != kerr.ResourceNotFound.Code || got["bob"] != kerr.DuplicateResource.Code || len(got) != 3 {
		t.Fatalf("describe named: %v", got)
	}

	del := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: int8(Sha256)}}
	if resp, changes := Alter(del, have); resp.Results[0].ErrorCode != 0 || len(changes) != 1 || changes[0].Credential != nil {
		t.Fatalf("delete: %+v %+v", resp.Results, changes)
	} else {
		changes[0].Apply(have)
	}
	if _, ok := have[CredentialKey("alice", Sha256)]; ok {
		t.Fatal("deleted credential still stored")
	}
}

// TestScramAuthzidAfterLookup: an unknown user asking for another
// authorization id is told only that its credentials are invalid, as
// Kafka's ScramSaslServer looks the credential up before it compares the
// authorization id.
func TestScramAuthzidAfterLookup(t *testing.T) {
	none := func(string, ScramMechanism) (Credential, bool) { return Credential{}, false }
	s, _ := New(ScramSHA256, Stores{Credentials: none})
	_, _, err := s.Step([]byte("n,a=admin,n=nobody,r=abc"))
	if got := failureMessage(t, err); got != invalidCredentials(ScramSHA256) {
		t.Fatalf("unknown user with another authzid: %q", got)
	}
}
