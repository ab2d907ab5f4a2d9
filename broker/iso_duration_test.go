package broker

import (
	"testing"
	"time"
)

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT1H":      time.Hour,
		"P2DT3H4M":  2*24*time.Hour + 3*time.Hour + 4*time.Minute,
		"PT0.5S":    500 * time.Millisecond,
		"-PT10M":    -10 * time.Minute,
		"P1D":       24 * time.Hour,
		"pt30s":     30 * time.Second,
		"PT-6H3M":   -6*time.Hour + 3*time.Minute,
		"PT1H30M1S": time.Hour + 30*time.Minute + time.Second,
	} {
		got, err := parseISODuration(in)
		if err != nil || got != want {
			t.Errorf("%s: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "P", "PT", "1H", "PT1", "P1H", "PT1D", "P1.5D", "PTxS", "P1DT"} {
		if d, err := parseISODuration(in); err == nil {
			t.Errorf("%q parsed as %v", in, d)
		}
	}
}
