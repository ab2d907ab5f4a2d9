package sasl

import (
	"fmt"
	"strings"
	"unicode"
)

// JAAS is one login module entry of a sasl.jaas.config value:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret";
type JAAS struct {
	LoginModule string
	Flag        string // required, requisite, sufficient or optional
	Options     map[string]string
}

// ParseJAAS parses a sasl.jaas.config value, which Kafka requires to hold
// exactly one login module.
func ParseJAAS(s string) (JAAS, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return JAAS{}, err
	}
	if len(toks) < 3 || !toks[len(toks)-1].is(";") || toks[0].quoted || toks[1].quoted {
		return JAAS{}, fmt.Errorf("JAAS config is not 'LoginModule flag key=value ... ;'")
	}
	j := JAAS{LoginModule: toks[0].text, Flag: strings.ToLower(toks[1].text), Options: map[string]string{}}
	switch j.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAAS{}, fmt.Errorf("JAAS config: invalid control flag %q", toks[1].text)
	}
	rest := toks[2 : len(toks)-1]
	for len(rest) > 0 {
		if len(rest) < 3 || !rest[1].is("=") || rest[0].quoted {
			return JAAS{}, fmt.Errorf("JAAS config: expected key=value near %q", rest[0].text)
		}
		j.Options[rest[0].text] = rest[2].text
		rest = rest[3:]
	}
	return j, nil
}

// jaasToken is a word, "=", ";" or the contents of a quoted string.
type jaasToken struct {
	text   string
	quoted bool
}

func (t jaasToken) is(punct string) bool { return !t.quoted && t.text == punct }

// jaasTokens splits a JAAS entry into words, "=", ";" and the contents of
// quoted strings. A second entry after the first ";" is refused, as Kafka
// refuses more than one login module in sasl.jaas.config.
func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	for i := 0; i < len(s); {
		if unicode.IsSpace(rune(s[i])) {
			i++
			continue
		}
		if len(toks) > 0 && toks[len(toks)-1].is(";") {
			return nil, fmt.Errorf("JAAS config must contain a single login module")
		}
		switch s[i] {
		case '=', ';':
			toks = append(toks, jaasToken{text: s[i : i+1]})
			i++
		case '"', '\'':
			text, n, ok := jaasQuoted(s[i:])
			if !ok {
				return nil, fmt.Errorf("JAAS config: unterminated quoted value")
			}
			toks = append(toks, jaasToken{text: text, quoted: true})
			i += n
		default:
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && s[j] != '=' && s[j] != ';' && s[j] != '"' && s[j] != '\'' {
				j++
			}
			toks = append(toks, jaasToken{text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}

// jaasQuoted reads the quoted string s starts with as Kafka's JaasConfig
// does (Java's StreamTokenizer): up to the same quote, with backslash
// escapes (\a \b \f \n \r \t \v, up to three octal digits, any other
// character for itself). It returns the text and the bytes read; a string
// that a line end or the end of s cuts short is not terminated.
func jaasQuoted(s string) (string, int, bool) {
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == quote:
			return b.String(), i + 1, true
		case c == '\n' || c == '\r':
			return "", 0, false
		case c != '\\' || i+1 == len(s):
			b.WriteByte(c)
			i++
			continue
		}
		i++ // the backslash
		c = s[i]
		i++
		if c >= '0' && c <= '7' {
			v, digits := int(c-'0'), 1
			for i < len(s) && s[i] >= '0' && s[i] <= '7' && (digits == 1 || digits == 2 && c <= '3') {
				v = v<<3 + int(s[i]-'0')
				digits++
				i++
			}
			b.WriteRune(rune(v))
			continue
		}
		if e := strings.IndexByte("abfnrtv", c); e >= 0 {
			c = "\a\b\f\n\r\t\v"[e]
		}
		b.WriteByte(c)
	}
	return "", 0, false
}

// PlainUsers returns the users a PlainLoginModule entry defines with its
// user_<name>="<password>" options.
func (j JAAS) PlainUsers() map[string]string {
	users := map[string]string{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return users
}
