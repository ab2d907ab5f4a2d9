// Package sslprincipal names the user of a TLS client certificate as
// Kafka's default principal builder does: the certificate's subject as an
// RFC 2253 distinguished name, in the form Java's X500Principal.getName()
// gives it (Name), then mapped by ssl.principal.mapping.rules (KIP-371,
// Mapper).
//
// The rules are a comma-separated list, each DEFAULT (the name as it is)
// or RULE:pattern/replacement/ with an optional L or U after the last
// slash. The first rule whose pattern matches the whole name gives the
// user: the pattern's matches in the name replaced by replacement ($1,
// $2... its groups; a backslash makes the next character literal),
// lower-cased with L or upper-cased with U. A name that no rule matches
// has no user, and the client is refused. Kafka's patterns are Java
// regular expressions; here they are Go's (RE2), which reads the patterns
// Kafka's documentation shows and refuses, when the rules are parsed,
// Java's look-arounds and back-references.
package sslprincipal

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The attribute types that Java's RFC 2253 form names by keyword; any
// other is written as its dotted object identifier.
var keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.9":                    "STREET",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"0.9.2342.19200300.100.1.1":  "UID",
	"0.9.2342.19200300.100.1.25": "DC",
}

// The DER string types Java writes as text; any other value is written
// as # and the hex of its DER encoding.
var stringTags = map[int]bool{
	asn1.TagPrintableString: true, asn1.TagT61String: true, asn1.TagIA5String: true,
	27 /* GeneralString */ : true, 30 /* BMPString */ : true, asn1.TagUTF8String: true,
}

type attribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

type relativeNameSET []attribute

// Name is the distinguished name of a certificate's raw subject
// (x509.Certificate.RawSubject) as Java's X500Principal.getName() writes
// it: the most specific part first, parts separated by commas, the
// attributes of a multi-valued part by plus signs.
func Name(rawSubject []byte) (string, error) {
	var rdns []relativeNameSET
	rest, err := asn1.Unmarshal(rawSubject, &rdns)
	if err != nil {
		return "", fmt.Errorf("certificate subject: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("certificate subject: trailing data")
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i < len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, a := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			writeAttribute(&b, a)
		}
	}
	return b.String(), nil
}

func writeAttribute(b *strings.Builder, a attribute) {
	keyword, known := keywords[a.Type.String()]
	if !known {
		keyword = a.Type.String()
	}
	b.WriteString(keyword)
	b.WriteByte('=')
	if !known || a.Value.Class != asn1.ClassUniversal || !stringTags[a.Value.Tag] {
		b.WriteByte('#')
		b.WriteString(hex.EncodeToString(a.Value.FullBytes))
		return
	}
	// Java reads every string type's bytes as UTF-8.
	value := strings.ToValidUTF8(string(a.Value.Bytes), "\uFFFD")
	var escaped strings.Builder
	for _, r := range value {
		switch {
		case strings.ContainsRune(`,=+<>#;"\`, r):
			escaped.WriteByte('\\')
			escaped.WriteRune(r)
		case r == 0:
			escaped.WriteString(`\00`)
		default:
			escaped.WriteRune(r)
		}
	}
	// Leading and trailing spaces (and carriage returns) are escaped too.
	s := escaped.String()
	lead := len(s) - len(strings.TrimLeft(s, " \r"))
	trail := len(strings.TrimRight(s, " \r"))
	for i := 0; i < len(s); i++ {
		if i < lead || i >= trail {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
}

// Mapper applies ssl.principal.mapping.rules.
type Mapper struct {
	rules []rule
}

type rule struct {
	isDefault   bool
	whole       *regexp.Regexp // the pattern, anchored at both ends
	pattern     *regexp.Regexp
	replacement string
	lower       bool
	upper       bool
}

// The grammar of one rule, and of the list, as Kafka's SslPrincipalMapper
// reads them.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// ParseRules reads ssl.principal.mapping.rules; empty means DEFAULT.
func ParseRules(rules string) (*Mapper, error) {
	rules = strings.TrimSpace(rules)
	if rules == "" {
		rules = "DEFAULT"
	}
	m := &Mapper{}
	for _, split := range ruleSplitter.FindAllStringSubmatch(rules, -1) {
		text := split[1]
		g := ruleParser.FindStringSubmatchIndex(text)
		if g == nil {
			return nil, fmt.Errorf("Invalid rule: %s", text)
		}
		if g[1] != len(text) {
			return nil, fmt.Errorf("Invalid rule: `%s`, unmatched substring: `%s`", text, text[g[1]:])
		}
		group := func(i int) (string, bool) {
			if g[2*i] < 0 {
				return "", false
			}
			return text[g[2*i]:g[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, rule{isDefault: true})
			continue
		}
		pattern, ok := group(2)
		if !ok {
			continue // an empty rule
		}
		replacement, _ := group(4)
		flag, _ := group(6)
		r := rule{replacement: replacement, lower: flag == "L", upper: flag == "U"}
		var err error
		if r.pattern, err = regexp.Compile(pattern); err != nil {
			return nil, fmt.Errorf("Invalid rule: %s: %v", text, err)
		}
		r.whole = regexp.MustCompile(`^(?:` + pattern + `)$`)
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// ErrNoRule is Map's error for a name that no rule matches.
var ErrNoRule = errors.New("no SSL principal mapping rule applies")

// Map is the user that the distinguished name dn maps to.
func (m *Mapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.whole.MatchString(dn) {
			continue
		}
		out := r.replaceAll(dn)
		switch {
		case r.lower:
			out = strings.ToLower(out)
		case r.upper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w to %s", ErrNoRule, dn)
}

// replaceAll is Java's String.replaceAll(pattern, replacement), with a
// reference to a group the pattern does not have kept as text, as Kafka
// escapes such references before replacing.
func (r rule) replaceAll(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range r.pattern.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		r.expand(&b, s, m)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// expand writes the replacement for one match: \x is x, $n is group n
// (more digits are read while they still name a group).
func (r rule) expand(b *strings.Builder, s string, match []int) {
	groups := len(match)/2 - 1
	rep := r.replacement
	for i := 0; i < len(rep); {
		c := rep[i]
		switch {
		case c == '\\' && i+1 < len(rep):
			_, size := utf8.DecodeRuneInString(rep[i+1:])
			b.WriteString(rep[i+1 : i+1+size])
			i += 1 + size
		case c == '$' && i+1 < len(rep) && isDigit(rep[i+1]) && int(rep[i+1]-'0') <= groups:
			n, j := int(rep[i+1]-'0'), i+2
			for j < len(rep) && isDigit(rep[j]) && n*10+int(rep[j]-'0') <= groups {
				n, j = n*10+int(rep[j]-'0'), j+1
			}
			if match[2*n] >= 0 {
				b.WriteString(s[match[2*n]:match[2*n+1]])
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
