package controller

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// maxTopicNameLength is Kafka's limit (255 minus room for the partition
// suffix and the deletion marker in directory names).
const maxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules with its messages
// (Topic.validate); the length counts UTF-16 units, as Java's does.
func ValidateTopicName(name string) error {
	reason := ""
	switch {
	case name == "":
		reason = "the empty string is not allowed"
	case name == "." || name == "..":
		reason = fmt.Sprintf("'%s' is not allowed", name)
	case len(name) > maxTopicNameLength && utf16Length(name) > maxTopicNameLength:
		reason = fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, maxTopicNameLength)
	case strings.IndexFunc(name, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}) >= 0:
		reason = fmt.Sprintf("'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
	default:
		return nil
	}
	return errors.New("Topic name is invalid: " + reason)
}

// utf16Length is the length of s in Java's chars (UTF-16 units), never
// more than its length in bytes.
func utf16Length(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
