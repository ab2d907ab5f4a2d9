package sasl

import "testing"

// FuzzServers feeds arbitrary tokens to each mechanism, as an
// unauthenticated client can: no input may panic, and an exchange may
// only finish as a user that exists.
func FuzzServers(f *testing.F) {
	salt := []byte("fuzz-salt")
	cred := NewCredential(Sha256, salt, SaltedPassword(Sha256, "pw", salt, MinIterations), MinIterations)
	creds := func(user string, m ScramMechanism) (Credential, bool) { return cred, user == "alice" && m == Sha256 }
	users := map[string]string{"alice": "pw"}
	f.Add(uint8(0), []byte("\x00alice\x00pw"), []byte(nil))
	f.Add(uint8(1), []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add(uint8(2), []byte("n,a=x,n=al=2Cice,r=abc,tokenauth=true"), []byte("c=,p="))
	f.Add(uint8(3), []byte("n,a=alice,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSIsImV4cCI6NDEwMjQ0NDgwMH0.\x01\x01"), []byte("\x01"))
	oauth := &OAuthValidator{PrincipalClaim: "sub", ScopeClaim: "scope"}
	f.Fuzz(func(t *testing.T, which uint8, first, second []byte) {
		mech := []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}[int(which)%4]
		s, err := New(mech, Stores{PlainUsers: users, Credentials: creds, OAuth: oauth})
		if err != nil {
			t.Fatal(err)
		}
		_, done, err := s.Step(first)
		if err == nil && !done {
			_, done, err = s.Step(second)
		}
		// Unsecured OAUTHBEARER tokens may name anyone, but someone.
		if err == nil && done && s.User() != "alice" && (mech != OAuthBearer || s.User() == "") {
			t.Fatalf("%s finished as %q", mech, s.User())
		}
	})
}
