package broker

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// parseISODuration reads an ISO-8601 duration as Java's Duration.parse
// does: an optional sign, P, days, then T with hours, minutes and
// (fractional) seconds, each part optional but at least one present and
// each with an optional sign: "PT1H", "P2DT3H4M", "PT0.5S", "-PT10M".
func parseISODuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("not an ISO-8601 duration: %q", s)
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	if len(s) < 2 || (s[0] != 'P' && s[0] != 'p') {
		return 0, bad
	}
	s = s[1:]
	var total float64 // seconds
	parts := 0
	inTime := false
	for len(s) > 0 {
		if s[0] == 'T' || s[0] == 't' {
			if inTime || len(s) == 1 {
				return 0, bad
			}
			inTime, s = true, s[1:]
			continue
		}
		i := 0
		for i < len(s) && (s[i] == '-' || s[i] == '+' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9')) {
			i++
		}
		if i == 0 || i == len(s) {
			return 0, bad
		}
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil {
			return 0, bad
		}
		unit := s[i] | 0x20 // lower case
		fractional := strings.Contains(s[:i], ".")
		switch {
		case !inTime && unit == 'd' && !fractional:
			total += n * 86400
		case inTime && unit == 'h' && !fractional:
			total += n * 3600
		case inTime && unit == 'm' && !fractional:
			total += n * 60
		case inTime && unit == 's':
			total += n
		default:
			return 0, bad
		}
		parts++
		s = s[i+1:]
	}
	if parts == 0 {
		return 0, bad
	}
	if neg {
		total = -total
	}
	return time.Duration(total * float64(time.Second)), nil
}
