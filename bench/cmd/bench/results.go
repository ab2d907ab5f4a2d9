package main

import (
	"sort"
	"sync"
)

// metric is one row of BENCH.md.
type metric struct {
	section string
	name    string
	unit    string
	higher  bool    // higher is better
	target  float64 // Gregor/Kafka ratio the issue asks for (0: none)
	kfake   bool    // the issue also asks for at least kfake's value
	order   int
}

// results holds every sample, per metric and system.
type results struct {
	mu      sync.Mutex
	metrics map[string]*metric
	samples map[string]map[string][]float64
	notes   []string
	n       int
}

func newResults() *results {
	return &results{metrics: map[string]*metric{}, samples: map[string]map[string][]float64{}}
}

func (r *results) add(m metric, system string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := m.section + "/" + m.name
	if _, ok := r.metrics[key]; !ok {
		r.n++
		m.order = r.n
		r.metrics[key] = &m
		r.samples[key] = map[string][]float64{}
	}
	r.samples[key][system] = append(r.samples[key][system], v)
}

func (r *results) note(s string) {
	if s == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, s)
}

// ordered returns the metric keys grouped by section, each in the order
// it was first recorded.
func (r *results) ordered() []string {
	keys := make([]string, 0, len(r.metrics))
	for k := range r.metrics {
		keys = append(keys, k)
	}
	// sections in the order they first appear, metrics in theirs within
	first := map[string]int{}
	for _, m := range r.metrics {
		if o, ok := first[m.section]; !ok || m.order < o {
			first[m.section] = m.order
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := r.metrics[keys[i]], r.metrics[keys[j]]
		if first[a.section] != first[b.section] {
			return first[a.section] < first[b.section]
		}
		return a.order < b.order
	})
	return keys
}

// median, min and max of a sample.
func stats(v []float64) (med, lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0, 0, 0
	}
	if n%2 == 1 {
		med = s[n/2]
	} else {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}

// percentile of sorted durations in microseconds.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(sorted)))
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}
