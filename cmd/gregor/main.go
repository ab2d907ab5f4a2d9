// Command gregor runs a Gregor broker, or one of its operational tools.
//
//	gregor                                   serve with built-in defaults
//	gregor serve [server.properties] [--override key=value]...
//	gregor dump-log [flags] FILE...         print log segments, indexes, snapshots
package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gregor-broker/gregor/broker"
)

const usage = `usage:
  gregor                                              serve with built-in defaults (localhost:9092, ./data)
  gregor serve [server.properties] [--override key=value]...
  gregor dump-log [flags] FILE...                     print log dir files as Kafka's DumpLogSegments (--help)
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

// parseServeArgs reads an optional properties file and --override pairs,
// later ones winning, as Kafka's kafka-server-start does.
func parseServeArgs(args []string) (map[string]string, error) {
	props := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--override" || a == "-override":
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s needs key=value", a)
			}
			i++
			k, v, ok := strings.Cut(args[i], "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("override %q is not key=value", args[i])
			}
			props[strings.TrimSpace(k)] = strings.TrimSpace(v)
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("unknown flag %s\n%s", a, usage)
		default:
			file, err := broker.ReadProperties(a)
			if err != nil {
				return nil, err
			}
			for k, v := range file {
				if _, overridden := props[k]; !overridden {
					props[k] = v
				}
			}
		}
	}
	return props, nil
}

func serve(args []string) error {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	defer startMemoryPolicy()() // memory.go
	props, err := parseServeArgs(args)
	if err != nil {
		return err
	}
	cfg, warnings, err := broker.ParseConfig(props)
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
	b, err := broker.New(cfg, logger)
	if err != nil {
		return err
	}
	s := <-sig
	logger.Info("shutting down", "signal", s.String())
	return b.Close()
}
