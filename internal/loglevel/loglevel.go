// Package loglevel holds a node's named loggers and their levels, which
// Kafka's broker-loggers resource shows and changes at runtime
// (kafka-configs --entity-type broker-loggers --entity-name <node id>
// --describe, --alter --add-config kafka=DEBUG, --delete-config).
//
// A level is one of Kafka's log4j names (TRACE, DEBUG, INFO, WARN, ERROR,
// FATAL). "root" always has one; another logger either has its own or,
// as in log4j, follows its nearest dotted ancestor that has one (a level
// on "kafka" reaches "kafka.coordinator.transaction"), else root's;
// deleting its level makes it follow that one again.
// Nothing is persisted: a restart starts from the levels the process
// was started with, as in Kafka.
//
// Each named logger is an slog.Logger over the node's one handler,
// wrapped so that whether a record is written is decided by that
// logger's current level, read on every call (one atomic load, so a
// check on the request path costs nothing worth counting).
package loglevel

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Root is the logger every other follows until it has a level of its own.
const Root = "root"

// kafkaLevels maps Kafka's log level names to slog levels; TRACE and
// FATAL lie beyond slog's DEBUG and ERROR.
var kafkaLevels = map[string]slog.Level{
	"TRACE": slog.LevelDebug - 4,
	"DEBUG": slog.LevelDebug,
	"INFO":  slog.LevelInfo,
	"WARN":  slog.LevelWarn,
	"ERROR": slog.LevelError,
	"FATAL": slog.LevelError + 4,
}

// ValidLevels lists Kafka's level names as its error messages do: sorted,
// comma-separated.
func ValidLevels() string {
	return strings.Join(slices.Sorted(maps.Keys(kafkaLevels)), ",")
}

// Valid reports whether level is one of Kafka's level names.
func Valid(level string) bool {
	_, ok := kafkaLevels[level]
	return ok
}

// Levels is the set of named loggers of one process.
type Levels struct {
	base slog.Handler

	mu  sync.Mutex
	own map[string]string // logger -> its level (root always present)
	// min is every known logger's effective level, recomputed under mu at
	// each change, so that a logger's check is one atomic load.
	min map[string]*atomic.Int64
}

// New returns loggers over base, root at the lowest level base writes.
func New(base slog.Handler) *Levels {
	level := "FATAL"
	for _, name := range []string{"ERROR", "WARN", "INFO", "DEBUG", "TRACE"} {
		if base.Enabled(context.Background(), kafkaLevels[name]) {
			level = name
		}
	}
	l := &Levels{base: base, own: map[string]string{Root: level}, min: map[string]*atomic.Int64{}}
	l.Logger(Root)
	return l
}

// Logger returns the named logger, creating it (following its ancestors
// or root) the first time.
func (l *Levels) Logger(name string) *slog.Logger {
	return slog.New(&handler{min: l.known(name, ""), next: l.base})
}

// LoggerAt returns the named logger, created with a level of its own (as
// Kafka's log4j2.yaml gives kafka.request.logger WARN); deleting that
// level makes it follow its ancestors or root.
func (l *Levels) LoggerAt(name, level string) *slog.Logger {
	return slog.New(&handler{min: l.known(name, level), next: l.base})
}

// known returns the named logger's effective level, creating the logger
// (with level as its own, unless empty) the first time.
func (l *Levels) known(name, level string) *atomic.Int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m, ok := l.min[name]; ok {
		return m
	}
	if level != "" {
		l.own[name] = level
	}
	m := new(atomic.Int64)
	l.min[name] = m
	m.Store(int64(kafkaLevels[l.levelLocked(name)]))
	return m
}

// Exists reports whether a logger of that name was ever created.
func (l *Levels) Exists(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.min[name]
	return ok
}

// Effective is every logger's level: its own, its nearest ancestor's, or
// root's.
func (l *Levels) Effective() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for name := range l.min {
		out[name] = l.levelLocked(name)
	}
	return out
}

func (l *Levels) levelLocked(name string) string {
	for {
		if v, ok := l.own[name]; ok {
			return v
		}
		i := strings.LastIndexByte(name, '.')
		if i < 0 {
			return l.own[Root]
		}
		name = name[:i]
	}
}

// Set gives a logger its own level.
func (l *Levels) Set(name, level string) error {
	if !Valid(level) {
		return fmt.Errorf("not a log level: %s", level)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.min[name]; !ok {
		return fmt.Errorf("no logger %s", name)
	}
	l.own[name] = level
	l.recomputeLocked()
	return nil
}

// Unset makes a logger follow its ancestors or root again; root keeps its
// level.
func (l *Levels) Unset(name string) error {
	if name == Root {
		return fmt.Errorf("root always has a level")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.own, name)
	l.recomputeLocked()
	return nil
}

// recomputeLocked stores every logger's effective level after a change
// (a level moves every logger that follows it).
func (l *Levels) recomputeLocked() {
	for name, m := range l.min {
		m.Store(int64(kafkaLevels[l.levelLocked(name)]))
	}
}

// handler writes a record through next when its logger's level lets it.
type handler struct {
	min  *atomic.Int64
	next slog.Handler
}

func (h *handler) Enabled(_ context.Context, level slog.Level) bool {
	return int64(level) >= h.min.Load()
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{min: h.min, next: h.next.WithAttrs(attrs)}
}

func (h *handler) WithGroup(group string) slog.Handler {
	return &handler{min: h.min, next: h.next.WithGroup(group)}
}
