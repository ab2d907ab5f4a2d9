// Command gregor runs a Gregor broker, or one of its operational tools.
//
//	gregor                                   serve with built-in defaults
//	gregor serve [server.properties] [--override key=value]... [--cpuprofile FILE]
//	gregor dump-log [flags] FILE...         print log segments, indexes, snapshots
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/gregor-broker/gregor/broker"
	"github.com/gregor-broker/gregor/internal/properties"
)

const usage = `usage:
  gregor                                              serve with built-in defaults (localhost:9092, ./data)
  gregor serve [server.properties] [--override key=value]... [--cpuprofile FILE]
  gregor dump-log [flags] FILE...                     print log dir files as Kafka's DumpLogSegments (--help)

--cpuprofile writes a Go CPU profile of the whole run to FILE at shutdown
(SIGINT or SIGTERM), for go tool pprof.
`

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "dump-log" {
		os.Exit(dumpLog(args[1:], os.Stdout, os.Stderr))
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	} else if len(args) > 0 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err := serve(args); err != nil {
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(1)
	}
}

// serveArgs is what `gregor serve` was given.
type serveArgs struct {
	props      map[string]string
	cpuProfile string // --cpuprofile FILE, or ""
}

// parseServeArgs reads an optional properties file and --override pairs,
// later ones winning, as Kafka's kafka-server-start does.
func parseServeArgs(args []string) (serveArgs, error) {
	sa := serveArgs{props: map[string]string{}}
	value := func(i int) (string, error) {
		if i+1 >= len(args) {
			return "", fmt.Errorf("%s needs a value", args[i])
		}
		return args[i+1], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--override" || a == "-override":
			pair, err := value(i)
			if err != nil {
				return sa, err
			}
			i++
			k, v, ok := strings.Cut(pair, "=")
			if !ok || k == "" {
				return sa, fmt.Errorf("override %q is not key=value", pair)
			}
			sa.props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		case a == "--cpuprofile":
			file, err := value(i)
			if err != nil {
				return sa, err
			}
			i++
			sa.cpuProfile = file
		case strings.HasPrefix(a, "-"):
			return sa, fmt.Errorf("unknown flag %s\n%s", a, usage)
		default:
			file, err := properties.Read(a)
			if err != nil {
				return sa, err
			}
			for k, v := range file {
				if _, overridden := sa.props[k]; !overridden {
					sa.props[k] = v
				}
			}
		}
	}
	return sa, nil
}

// startCPUProfile starts writing a CPU profile to path; the function it
// returns stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func serve(args []string) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	defer startMemoryPolicy()() // memory.go
	sa, err := parseServeArgs(args)
	if err != nil {
		return err
	}
	cfg, warnings, err := broker.ParseConfig(sa.props)
	for _, w := range warnings {
		logger.Warn(w)
	}
	if err != nil {
		return err
	}
	// Listen for signals before the listeners open, so a signal sent as
	// soon as the broker is reachable still means a clean shutdown.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if sa.cpuProfile != "" {
		stop, err := startCPUProfile(sa.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			if err := stop(); err != nil {
				logger.Error("writing the CPU profile", "file", sa.cpuProfile, "err", err)
			}
		}()
	}
	// A node of a cluster waits in broker.NewContext until its controller
	// quorum answers, which may be never: a signal meanwhile gives the
	// start up, as Kafka's shutdown hook does.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	early := make(chan os.Signal, 1)
	go func() {
		defer close(early)
		select {
		case s := <-sig:
			early <- s
			cancel()
		case <-started:
		}
	}()
	b, err := broker.NewContext(ctx, cfg, logger)
	close(started)
	if s, ok := <-early; ok {
		logger.Info("shutting down", "signal", s.String())
		if err != nil {
			return nil // the start was given up
		}
		return b.Close()
	}
	if err != nil {
		return err
	}
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
		return b.Close()
	case err := <-b.Fatal():
		// As Kafka's Exit.halt(1): no clean shutdown, so the next start
		// recovers the logs.
		logger.Error("halting", "err", err)
		os.Exit(1)
		return nil
	}
}
