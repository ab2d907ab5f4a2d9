package sslprincipal

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"strings"
	"testing"
)

var (
	oidCN    = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidC     = asn1.ObjectIdentifier{2, 5, 4, 6}
	oidO     = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidOU    = asn1.ObjectIdentifier{2, 5, 4, 11}
	oidDC    = asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	oidEmail = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
)

// subject encodes rdns, the least specific first, as a certificate holds
// its subject.
func subject(t *testing.T, rdns ...[]pkix.AttributeTypeAndValue) []byte {
	t.Helper()
	var seq pkix.RDNSequence
	for _, r := range rdns {
		seq = append(seq, r)
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func attr(oid asn1.ObjectIdentifier, v any) []pkix.AttributeTypeAndValue {
	return []pkix.AttributeTypeAndValue{{Type: oid, Value: v}}
}

func ia5(s string) asn1.RawValue {
	return asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagIA5String, Bytes: []byte(s)}
}

// The names expected are what Java's X500Principal.getName() gives for
// the same subjects (checked with Java 17 on 2026-12-05).
func TestName(t *testing.T) {
	for _, c := range []struct {
		what string
		der  []byte
		want string
	}{
		{"the most specific part first", subject(t, attr(oidC, "US"), attr(oidO, "Acme"), attr(oidOU, "eng"), attr(oidCN, "alice")),
			"CN=alice,OU=eng,O=Acme,C=US"},
		{"special characters escaped", subject(t, attr(oidO, "Acme, Inc."), attr(oidCN, `#a=b+c<d>e;f"g\h`)),
			`CN=\#a\=b\+c\<d\>e\;f\"g\\h,O=Acme\, Inc.`},
		{"leading and trailing spaces escaped, inner ones kept", subject(t, attr(oidCN, "  al ice ")), `CN=\ \ al ice\ `},
		{"a null character", subject(t, attr(oidCN, "a\x00b")), `CN=a\00b`},
		{"non-ASCII text as it is", subject(t, attr(oidCN, "José Müller")), "CN=José Müller"},
		{"domain components by keyword", subject(t, attr(oidDC, ia5("com")), attr(oidDC, ia5("example")), attr(oidCN, "svc")),
			"CN=svc,DC=example,DC=com"},
		{"an attribute without a keyword in hex", subject(t, attr(oidEmail, ia5("a@b.c")), attr(oidCN, "bob")),
			"CN=bob,1.2.840.113549.1.9.1=#16056140622e63"},
		{"a value that is not a string in hex", subject(t, attr(oidCN, 1)), "CN=#020101"},
		{"a multi-valued part", subject(t, attr(oidO, "Acme"), []pkix.AttributeTypeAndValue{{Type: oidOU, Value: "a"}, {Type: oidOU, Value: "b"}}),
			"OU=a+OU=b,O=Acme"},
	} {
		got, err := Name(c.der)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.what, got, err, c.want)
		}
	}
	if _, err := Name([]byte{0x30, 0x05, 0x31}); err == nil {
		t.Error("a truncated subject was read")
	}
}

// The users expected, and the refusals' messages in TestInvalidRules, are
// what Kafka 4.4's SslPrincipalMapper gives for the same rules and names
// (checked on 2026-12-05).
func TestMapper(t *testing.T) {
	for _, c := range []struct {
		rules, dn, want string
	}{
		{"", "CN=alice,OU=eng", "CN=alice,OU=eng"},
		{"DEFAULT", "CN=alice,OU=eng", "CN=alice,OU=eng"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka-app,OU=ServiceUsers,O=Acme", "kafka-app"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=bob,OU=People,O=Acme", "CN=bob,OU=People,O=Acme"},
		{"RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L", "CN=Alice,OU=ENG", "alice@eng"},
		{"RULE:^CN=(.*?),OU=(.*?)$/$1@$2/U", "CN=Alice,OU=eng", "ALICE@ENG"},
		{" RULE:^CN=([^,]*),.*$/$1/ ,  DEFAULT ", "CN=carol,O=Acme", "carol"},
		{`RULE:^CN=(.*?)\/x$/$1\/y/`, "CN=a/x", "a/y"},
		{"RULE:^CN=(.*?),OU=(.*?)$/$1-$3/", "CN=alice,OU=eng", "alice-$3"},
		{"RULE:^CN=(.*?),OU=(.*?)$/$2$1/", "CN=alice,OU=eng", "engalice"},
		{"RULE:^CN=(.*?),OU=(.*?)$/[$0]/", "CN=alice,OU=eng", "[CN=alice,OU=eng]"},
		{"RULE:^O=Acme$/acme/,RULE:^CN=(.*)$/$1/", "CN=dave", "dave"},
	} {
		m, err := ParseRules(c.rules)
		if err != nil {
			t.Errorf("rules %q: %v", c.rules, err)
			continue
		}
		if got, err := m.Map(c.dn); err != nil || got != c.want {
			t.Errorf("rules %q on %q: %q, %v; want %q", c.rules, c.dn, got, err, c.want)
		}
	}

	m, err := ParseRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Map("CN=eve,OU=People"); !errors.Is(err, ErrNoRule) {
		t.Errorf("a name no rule matches mapped to %q, %v", got, err)
	}
}

func TestInvalidRules(t *testing.T) {
	for rules, want := range map[string]string{
		"RULE:foo":                   "Invalid rule: `RULE:foo`, unmatched substring: `RULE:foo`",
		"RULE:^CN=(.*)$/$1/Lx":       "Invalid rule: `RULE:^CN=(.*)$/$1/Lx`, unmatched substring: `x`",
		"DEFAULT,RULE:^(?=CN).*$/x/": "Invalid rule: RULE:^(?=CN).*$/x/",
		"RULE:^CN=(.*$/$1/":          "Invalid rule: RULE:^CN=(.*$/$1/",
		"DEFAULTS":                   "Invalid rule: `DEFAULTS`, unmatched substring: `S`",
	} {
		if _, err := ParseRules(rules); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("rules %q: %v, want %q", rules, err, want)
		}
	}
}
